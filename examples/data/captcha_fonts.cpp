// examples/data/captcha_fonts.cpp — the captcha generator's fonts (examples/data/captcha_fonts.h): the
// default font's search path, the per-process font cache, glyph rasterising with stb_truetype, and the
// public entry points of captcha_gen.h that are about fonts.
#include "examples/data/captcha_fonts.h"

#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "core/settings.h"
#include "examples/data/captcha_gen.h"
#include "examples/data/font_file.h"

namespace minidl {

namespace captcha_gen {

namespace {

// Fonts are read once per process and never freed; after loading they are only read, which stb_truetype
// allows from any number of threads.
std::mutex& font_mutex() {
  static std::mutex m;
  return m;
}

// A font from bytes check_truetype_font accepted (examples/data/font_file.h: everything stb_truetype reads to draw
// every drawable character is inside the file).
std::unique_ptr<Font> font_from_checked_bytes(const std::string& path, std::vector<uint8_t> data,
                                              const std::string& who) {
  auto font = std::make_unique<Font>();
  font->path = path;
  font->data = std::move(data);
  const int offset = stbtt_GetFontOffsetForIndex(font->data.data(), 0);
  MINIDL_CHECK(offset >= 0 && stbtt_InitFont(&font->info, font->data.data(), offset) != 0, who, " '", path,
               "' is not a TrueType font stb_truetype can read");
  return font;
}

const std::vector<std::string>& default_font_candidates() {
  static const std::vector<std::string> candidates = {
      "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",  // Debian/Ubuntu: fonts-dejavu-core
      "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
      "/usr/share/fonts/dejavu/DejaVuSans-Bold.ttf",  // Fedora
      "/usr/share/fonts/TTF/DejaVuSans-Bold.ttf",     // Arch
      "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans-Bold.ttf",
      "/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf",
      "/usr/share/fonts/truetype/freefont/FreeSansBold.ttf",
      "/Library/Fonts/Arial Bold.ttf",  // macOS
      "/System/Library/Fonts/Supplemental/Arial Bold.ttf",
  };
  return candidates;
}

bool file_exists(const std::string& path) { return std::ifstream(path, std::ios::binary).good(); }

}  // namespace

const std::string& drawable_characters() {
  static const std::string chars = [] {
    std::string s;
    for (char c = '!'; c <= '~'; ++c) s += c;
    return s;
  }();
  return chars;
}

void check_text_chars(const char* what, const std::string& text) {
  for (char c : text)
    MINIDL_CHECK(c > ' ' && c <= '~', "captcha: ", what, " may only hold printable ASCII characters (no space), got ",
                 "byte ", static_cast<int>(static_cast<unsigned char>(c)));
}

// stb_truetype trusts every offset in a font, so each file is checked first (examples/data/font_file.h). `who`
// starts the error message ("captcha: font '<path>': truncated: ...").
const Font& load_font(const std::string& path, const std::string& who) {
  static std::map<std::string, std::unique_ptr<Font>> cache;
  std::lock_guard<std::mutex> lock(font_mutex());
  auto it = cache.find(path);
  if (it != cache.end()) return *it->second;
  auto font = font_from_checked_bytes(path, read_truetype_font(path, drawable_characters(), who), who);
  return *cache.emplace(path, std::move(font)).first->second;
}

Glyph rasterize(const Font& font, char c, double em_pixels) {
  const int index = stbtt_FindGlyphIndex(&font.info, static_cast<unsigned char>(c));
  MINIDL_CHECK(index != 0, "captcha: font '", font.path, "' has no glyph for '", c, "'");
  const float scale = stbtt_ScaleForMappingEmToPixels(&font.info, static_cast<float>(em_pixels));
  int w = 0, h = 0, xoff = 0, yoff = 0;
  unsigned char* bitmap = stbtt_GetGlyphBitmap(&font.info, scale, scale, index, &w, &h, &xoff, &yoff);
  MINIDL_CHECK(w >= 0 && h >= 0 && (bitmap != nullptr || w == 0 || h == 0), "captcha: font '", font.path,
               "': cannot draw '", c, "' (a ", w, "x", h, " bitmap; out of memory?)");
  Glyph g;
  g.width = w + 2;
  g.height = h + 2;
  g.coverage.assign(static_cast<size_t>(g.width) * g.height, 0.0f);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      g.coverage[static_cast<size_t>(y + 1) * g.width + x + 1] = bitmap[y * w + x] / 255.0f;
  stbtt_FreeBitmap(bitmap, nullptr);
  return g;
}

}  // namespace captcha_gen

// ---------------------------------------------------------------- captcha_gen.h's font functions

std::vector<Image> draw_font_glyphs(const std::vector<uint8_t>& font_bytes, const std::string& name,
                                    const std::string& characters, double em_pixels) {
  captcha_gen::check_text_chars("the characters", characters);
  MINIDL_CHECK(em_pixels >= 1 && em_pixels <= 4096, "captcha: em size ", em_pixels, " is outside 1..4096 pixels");
  check_truetype_font(font_bytes.data(), font_bytes.size(), name, captcha_gen::drawable_characters(), "captcha: font");
  const std::unique_ptr<captcha_gen::Font> font =
      captcha_gen::font_from_checked_bytes(name, font_bytes, "captcha: font");
  std::vector<Image> out;
  for (char c : characters) {
    Image img;
    img.channels = 1;
    if (stbtt_FindGlyphIndex(&font->info, static_cast<unsigned char>(c)) != 0) {
      const captcha_gen::Glyph g = captcha_gen::rasterize(*font, c, em_pixels);
      img.width = g.width;
      img.height = g.height;
      img.pixels.resize(g.coverage.size());
      for (size_t i = 0; i < g.coverage.size(); ++i) img.pixels[i] = static_cast<uint8_t>(std::lround(g.coverage[i] * 255));
    }
    out.push_back(std::move(img));
  }
  return out;
}

std::vector<std::string> find_lined_captcha_fonts() {
  std::vector<std::string> found;
  for (const std::string name : {"DejaVuSerif-Bold.ttf", "DejaVuSansMono-Bold.ttf"}) {
    std::string looked;
    for (const std::string& candidate : captcha_gen::default_font_candidates()) {
      const std::string path = candidate.substr(0, candidate.rfind('/') + 1) + name;
      if (captcha_gen::file_exists(path)) {
        found.push_back(path);
        break;
      }
      looked += (looked.empty() ? "" : ", ") + path;
    }
    MINIDL_CHECK(!found.empty() && found.back().size() >= name.size() &&
                     found.back().compare(found.back().size() - name.size(), name.size(), name) == 0,
                 "captcha: the lined style's font ", name, " was not found; looked at ", looked,
                 ". Install fonts-dejavu-core (`make deps`) or pass font files (--font).");
  }
  return found;
}

std::string find_captcha_font() {
  if (const std::string env = settings::captcha_font.read(); !env.empty()) {  // MINIDL_CAPTCHA_FONT
    captcha_gen::load_font(env, "captcha: MINIDL_CAPTCHA_FONT");  // refuses a missing, non-regular or damaged file
    return env;
  }
  for (const std::string& path : captcha_gen::default_font_candidates())
    if (captcha_gen::file_exists(path)) return path;
  std::string looked = "$MINIDL_CAPTCHA_FONT (unset)";
  for (const std::string& path : captcha_gen::default_font_candidates()) looked += ", " + path;
  throw Error(str_cat("captcha: no TrueType font found; looked at ", looked,
                      ". Install fonts-dejavu-core (`make deps`), set MINIDL_CAPTCHA_FONT, or pass a font file."));
}

}  // namespace minidl
