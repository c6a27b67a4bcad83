// tests/test_captcha_style.cpp — the generator's second style, CaptchaStyle::lined
// (examples/data/captcha_gen.h): a pure function of (seed, index), the asked size, unlike the classic
// style, and inverted (light text on a dark background) in about a third of the images.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "examples/data/captcha_gen.h"

using namespace minidl;

namespace {

double mean_luma(const Image& img) {
  double sum = 0;
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x)
      sum += 0.299 * img.at(y, x, 0) + 0.587 * img.at(y, x, 1) + 0.114 * img.at(y, x, 2);
  return sum / (img.width * img.height);
}

}  // namespace

TEST_CASE("captcha generator: the lined style", "[captcha]") {
  CHECK(parse_captcha_style("lined") == CaptchaStyle::lined);
  CHECK(parse_captcha_style("classic") == CaptchaStyle::classic);
  CHECK_THROWS_WITH(parse_captcha_style("wavy"), Catch::Contains("classic or lined"));
  REQUIRE(find_lined_captcha_fonts().size() == 2);

  CaptchaOptions lined;
  lined.style = CaptchaStyle::lined;
  lined.width = 160;
  lined.height = 60;
  const Image a = render_captcha("0123", lined, 4, 9);
  CHECK(a.width == 160);
  CHECK(a.height == 60);
  CHECK(a.channels == 3);
  CHECK(render_captcha("0123", lined, 4, 9).pixels == a.pixels);
  CHECK(render_captcha("0123", lined, 4, 10).pixels != a.pixels);
  CaptchaOptions classic = lined;
  classic.style = CaptchaStyle::classic;
  CHECK(render_captcha("0123", classic, 4, 9).pixels != a.pixels);

  // Light backgrounds (channels 200..255) average far above mid-grey; inverted ones far below.
  int inverted = 0;
  for (uint64_t i = 0; i < 60; ++i) {
    const double luma = mean_luma(render_captcha(random_captcha_text(lined, 4, i), lined, 4, i));
    REQUIRE((luma < 90 || luma > 160));
    inverted += luma < 90;
  }
  CHECK(inverted >= 8);
  CHECK(inverted <= 32);
}
