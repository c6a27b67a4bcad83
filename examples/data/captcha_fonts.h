// examples/data/captcha_fonts.h — the captcha generator's fonts (examples/data/captcha_gen.h): finding,
// loading and checking TrueType files, and drawing one character's glyph as a coverage bitmap.
//
// stb_truetype trusts every offset in a font, so each file is checked first (examples/data/font_file.h).
// Fonts are read once per process and shared by every thread. Internal to the generator (captcha_*.cpp);
// the public entry points (find_captcha_font, find_lined_captcha_fonts, draw_font_glyphs) are declared in
// captcha_gen.h and defined in captcha_fonts.cpp.
#pragma once
#include <stb_truetype.h>

#include <cstdint>
#include <string>
#include <vector>

#include "examples/data/captcha_canvas.h"

namespace minidl::captcha_gen {

struct Font {
  std::string path;
  std::vector<uint8_t> data;  // stbtt_fontinfo points into it
  stbtt_fontinfo info{};
};

// Every character a captcha may hold (check_text_chars): printable ASCII but the space.
const std::string& drawable_characters();

// Throws an Error unless every character of `text` is drawable; `what` names the text ("the charset").
void check_text_chars(const char* what, const std::string& text);

// The font at `path`, read and checked on the first call for that path, then shared (thread-safe). `who`
// starts the error message ("captcha: font '<path>': truncated: ...").
const Font& load_font(const std::string& path, const std::string& who = "captcha: font");

// The glyph of c drawn at em_pixels per em (with Glyph's empty border); an Error when the font lacks c.
Glyph rasterize(const Font& font, char c, double em_pixels);

}  // namespace minidl::captcha_gen
