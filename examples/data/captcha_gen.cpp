// examples/data/captcha_gen.cpp — the captcha generator's front end (examples/data/captcha_gen.h): the
// options and their checks, the random texts, and render_captcha, which picks the fonts and the style.
//
// The generator's parts, each in its own file:
//   captcha_random.h          the Philox stream of one (seed, index): text and image drawn separately;
//   captcha_fonts.{h,cpp}     finding, checking (font_file.h) and loading fonts; glyphs by stb_truetype;
//   captcha_canvas.{h,cpp}    the float canvas and what both styles draw with (quads, dots, curves);
//   captcha_styles.h          the two styles' pipelines:
//     captcha_classic.cpp     ImageCaptcha's look (the default);
//     captcha_lined.cpp       another site's look: strike-through lines, a sine warp, noise.
#include "examples/data/captcha_gen.h"

#include "core/error.h"
#include "examples/data/captcha_styles.h"

namespace minidl {

CaptchaStyle parse_captcha_style(const std::string& name) {
  if (name == "classic") return CaptchaStyle::classic;
  if (name == "lined") return CaptchaStyle::lined;
  throw Error(str_cat("captcha: the style is classic or lined, not '", name, "'"));
}

void check_captcha_options(const CaptchaOptions& o) {
  MINIDL_CHECK(!o.charset.empty(), "captcha: the charset is empty");
  captcha_gen::check_text_chars("the charset", o.charset);
  for (size_t i = 0; i < o.charset.size(); ++i)
    MINIDL_CHECK(o.charset.find(o.charset[i], i + 1) == std::string::npos, "captcha: the charset has '",
                 o.charset[i], "' twice");
  MINIDL_CHECK(o.min_length >= 1 && o.min_length <= o.max_length, "captcha: bad length range ", o.min_length, "-",
               o.max_length, " (need 1 <= min <= max)");
  MINIDL_CHECK(o.width >= 16 && o.height >= 16 && o.width <= 4096 && o.height <= 4096, "captcha: image size ",
               o.width, "x", o.height, " is outside 16..4096");
}

std::string random_captcha_text(const CaptchaOptions& options, uint64_t seed, uint64_t index) {
  check_captcha_options(options);
  captcha_gen::CaptchaRandom rng(seed, index, captcha_gen::Stream::text);
  const int length = rng.uniform_int(options.min_length, options.max_length);
  std::string text;
  for (int i = 0; i < length; ++i)
    text += options.charset[rng.uniform_int(0, static_cast<int>(options.charset.size()) - 1)];
  return text;
}

Image render_captcha(const std::string& text, const CaptchaOptions& options, uint64_t seed, uint64_t index) {
  check_captcha_options(options);
  MINIDL_CHECK(!text.empty(), "captcha: cannot render an empty text");
  captcha_gen::check_text_chars("the text", text);
  std::vector<const captcha_gen::Font*> fonts;
  if (options.fonts.empty() && options.style == CaptchaStyle::lined) {
    static const std::vector<const captcha_gen::Font*> lined_fonts = [] {  // resolved once, then lock-free
      std::vector<const captcha_gen::Font*> loaded;
      for (const std::string& path : find_lined_captcha_fonts()) loaded.push_back(&captcha_gen::load_font(path));
      return loaded;
    }();
    fonts = lined_fonts;
  } else if (options.fonts.empty()) {
    // Resolved once, then lock-free.
    static const captcha_gen::Font& default_font = captcha_gen::load_font(find_captcha_font());
    fonts.push_back(&default_font);
  }
  for (const std::string& path : options.fonts) fonts.push_back(&captcha_gen::load_font(path));

  const int W = options.width, H = options.height;
  captcha_gen::CaptchaRandom rng(seed, index, captcha_gen::Stream::image);
  const captcha_gen::Canvas canvas = options.style == CaptchaStyle::lined
                                         ? captcha_gen::render_lined(text, fonts, W, H, rng)
                                         : captcha_gen::render_classic(text, fonts, W, H, rng);
  return captcha_gen::to_image(canvas);
}

}  // namespace minidl
