// examples/data/captcha_gen.h — a captcha image generator in the style of the Python `captcha` library's
// ImageCaptcha.
//
// Each image: a light random background; each character drawn from a TrueType font (stb_truetype) in its
// own random dark colour, rotated (up to ±30°), scaled, warped by a random perspective (each corner of
// its box moved independently), vertically jittered and placed so that neighbours touch or overlap; then
// noise dots and a curved stroke in the text colours, and a light 3x3 smoothing. All geometry is mapped
// back to the glyph bitmap and sampled bilinearly, once, so edges stay smooth.
//
// A second style, CaptchaStyle::lined, looks like a different site's captchas (a set to test training on
// labelled folders with, unlike the default style the model has seen): upright serif or monospace glyphs
// of one font and one colour per captcha, spaced apart, a sine warp of the whole image, one to three
// straight strike-through lines across the text, a two-colour gradient background, pixel noise, and in
// about a third of the images inverted colours (light text on a dark background). See render_lined in
// examples/data/captcha_lined.cpp.
//
// Everything is a pure function of (seed, index): the n-th captcha of a seed is the same on any machine
// with the same font, in any thread, in any order. This is what lets background threads render training
// batches on the fly. Text and image draw from separate random streams, so rendering a given text does
// not change which text an index gets.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nn/image.h"

namespace minidl {

enum class CaptchaStyle { classic, lined };
// "classic" or "lined" -> the style; throws an Error naming the choices otherwise.
CaptchaStyle parse_captcha_style(const std::string& name);

struct CaptchaOptions {
  std::string charset = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";  // printable ASCII, no repeats
  int min_length = 4, max_length = 4;                            // characters per captcha
  int width = 192, height = 64;
  // TrueType files, one picked at random per character (lined: per captcha). Empty: find_captcha_font()
  // (classic); DejaVu Serif Bold and DejaVu Sans Mono Bold (lined, find_lined_captcha_fonts()). Each file
  // is checked before stb_truetype reads it (examples/data/font_file.h): a damaged font is an Error naming the file.
  std::vector<std::string> fonts;
  CaptchaStyle style = CaptchaStyle::classic;
};

// Throws minidl::Error explaining the first problem with the options.
void check_captcha_options(const CaptchaOptions& options);

// The default font: $MINIDL_CAPTCHA_FONT when set (its file is read and checked here), else the first existing file among DejaVu Sans Bold,
// DejaVu Sans (Debian's fonts-dejavu-core, installed by `make deps`) and a few other common locations.
// Throws an Error listing every place it looked, or naming the variable and what is wrong with its file.
std::string find_captcha_font();

// The lined style's default fonts: DejaVu Serif Bold and DejaVu Sans Mono Bold (both in Debian's
// fonts-dejavu-core), looked up in the folders of find_captcha_font's candidates. Throws naming them.
std::vector<std::string> find_lined_captcha_fonts();

// A random text: length uniform in [min_length, max_length], characters uniform over the charset.
std::string random_captcha_text(const CaptchaOptions& options, uint64_t seed, uint64_t index);

// The captcha image (width x height, 3 channels RGB) showing `text`. Thread-safe; fonts are loaded
// once per process and shared.
Image render_captcha(const std::string& text, const CaptchaOptions& options, uint64_t seed, uint64_t index);

// Each character of `characters` drawn from the TrueType font in `font_bytes` (`name` stands for the file
// in messages) as render_captcha draws a character: the bytes checked as a font file is, then the glyph
// rasterised at em_pixels per em (1..4096). One coverage bitmap per character (1 channel, 0..255, with a
// one-pixel empty border); a character the font lacks gives an empty 0x0 image. For tests and the font
// fuzzer (fuzz/font_fuzzer.cpp).
std::vector<Image> draw_font_glyphs(const std::vector<uint8_t>& font_bytes, const std::string& name,
                                    const std::string& characters, double em_pixels);

}  // namespace minidl
