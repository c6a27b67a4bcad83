// examples/data/captcha_styles.h — the two looks of the captcha generator (examples/data/captcha_gen.h),
// each a pipeline from a text, its fonts and the image's random stream to a canvas:
//   classic (captcha_classic.cpp): ImageCaptcha's look, what the captcha model trains on;
//   lined (captcha_lined.cpp): another site's look, strike-through lines and a sine warp.
// render_captcha (captcha_gen.cpp) picks the fonts and the style, and turns the canvas into an image.
// Internal to the generator (captcha_*.cpp).
#pragma once
#include <string>
#include <vector>

#include "examples/data/captcha_canvas.h"
#include "examples/data/captcha_fonts.h"
#include "examples/data/captcha_random.h"

namespace minidl::captcha_gen {

// `text` (drawable characters, not empty) on a W x H canvas; each character's font drawn from `fonts`.
Canvas render_classic(const std::string& text, const std::vector<const Font*>& fonts, int W, int H,
                      CaptchaRandom& rng);

// `text` on a W x H canvas, in one font drawn from `fonts` for the whole captcha.
Canvas render_lined(const std::string& text, const std::vector<const Font*>& fonts, int W, int H,
                    CaptchaRandom& rng);

}  // namespace minidl::captcha_gen
