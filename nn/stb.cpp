// nn/stb.cpp — stb's implementations (image reading and writing, TrueType), compiled here, once, into
// minidl; nothing else. Reading is limited to PNG, JPEG and BMP: fewer decoders, less code that untrusted
// files reach (nn/image.h checks each file before stb decodes it).
//
// A file of its own because this is third-party code with its own habits: its JPEG encoder and decoder
// left-shift negative numbers (defined behaviour since C++20, undefined in C++17), so sanitizer builds
// do not check that one thing here (CMakeLists.txt, -fno-sanitize=shift-base on this file only).
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_TRUETYPE_IMPLEMENTATION
#include <stb_image.h>
#include <stb_image_write.h>
#include <stb_truetype.h>
