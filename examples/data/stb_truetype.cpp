// examples/data/stb_truetype.cpp — stb_truetype's implementation, compiled here, once, into
// minidl_examples: the captcha generator draws its glyphs with it (examples/data/captcha_fonts.cpp), after
// examples/data/font_file.h has checked the font, and nothing in the framework library uses it.
//
// A file of its own because this is third-party code: sanitizer builds do not run UBSan on it, as on
// nn/stb.cpp (CMakeLists.txt, -fno-sanitize=undefined on these two files only); AddressSanitizer still
// checks its memory accesses.
#define STB_TRUETYPE_IMPLEMENTATION
#include <stb_truetype.h>
