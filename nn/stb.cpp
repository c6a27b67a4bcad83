// nn/stb.cpp — stb's image implementations (reading and writing), compiled here, once, into minidl;
// nothing else. Reading is limited to PNG, JPEG and BMP: fewer decoders, less code that untrusted files
// reach (nn/image.h checks each file before stb decodes it). stb_truetype, which only the captcha
// generator uses, is compiled with the examples (examples/data/stb_truetype.cpp).
//
// A file of its own because this is third-party code with its own habits: its JPEG encoder and decoder
// left-shift negative numbers (defined behaviour since C++20, undefined in C++17), so sanitizer builds
// do not run UBSan on this file (CMakeLists.txt, -fno-sanitize=undefined on this file only).
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image.h>
#include <stb_image_write.h>
