// examples/data/captcha_classic.cpp — the classic captcha style (examples/data/captcha_styles.h), in the
// look of the Python `captcha` library's ImageCaptcha.
//
// Pipeline of render_classic, all in float RGB on a width x height canvas:
//   1. background: one light colour, each channel uniform in [238, 255] (as ImageCaptcha does);
//   2. per character: a font and a size (em = 0.70..0.90 of the height), a dark colour, and a geometry in
//      "character space" centred on the glyph: its bitmap box is stretched (0.85..1.15 x, 0.9..1.1 y),
//      rotated by up to ±30° and each of its four corners moved by up to 12% of the box (a perspective
//      warp). That gives four destination corners per character;
//   3. layout: boxes side by side, each overlapping its left neighbour by 5..35% of the mean width,
//      vertically jittered; squeezed horizontally to fit when too wide (like ImageCaptcha's final resize),
//      placed at a random x within the slack otherwise;
//   4. raster: for every canvas pixel in a character's quad, the inverse projective map (a homography from
//      the four corners) gives the point of the glyph bitmap to sample, bilinearly; alpha-blend the colour;
//   5. noise in the text colours: ~30 dots of radius 1..2 px per 160x60 pixels and one cubic Bezier stroke
//      2..4 px wide across the text (sizes for a 64 px high image, scaled with the height); then
//      ImageCaptcha's smoothing filter (3x3, centre 5, others 1, / 13).
#include "examples/data/captcha_styles.h"

#include <algorithm>
#include <cmath>

namespace minidl::captcha_gen {

namespace {

// Step 2 for one character: its glyph, colour and four corners around its centre.
Character make_character(char c, const Font& font, int height, CaptchaRandom& rng) {
  Character ch;
  ch.glyph = rasterize(font, c, height * rng.uniform(0.70, 0.90));
  ch.colour = dark_colour(rng);
  const double w = ch.glyph.width, h = ch.glyph.height;
  const double sx = rng.uniform(0.85, 1.15), sy = rng.uniform(0.90, 1.10);
  const double angle = rng.uniform(-30.0, 30.0) * kPi / 180.0;
  const double cs = std::cos(angle), sn = std::sin(angle);
  const Point box[4] = {{0, 0}, {w, 0}, {w, h}, {0, h}};
  for (int i = 0; i < 4; ++i) {
    const double x = (box[i].x - w / 2) * sx, y = (box[i].y - h / 2) * sy;
    ch.corners[i] = {cs * x - sn * y + rng.uniform(-0.12, 0.12) * w, sn * x + cs * y + rng.uniform(-0.12, 0.12) * h};
  }
  ch.min_x = ch.max_x = ch.corners[0].x;
  ch.min_y = ch.max_y = ch.corners[0].y;
  for (const Point& p : ch.corners) {
    ch.min_x = std::min(ch.min_x, p.x);
    ch.max_x = std::max(ch.max_x, p.x);
    ch.min_y = std::min(ch.min_y, p.y);
    ch.max_y = std::max(ch.max_y, p.y);
  }
  return ch;
}

// The noise curve: a Bezier (examples/data/captcha_canvas.h) from the left part of the image to the right
// part, its inner control points anywhere from 0.2 heights above the image to 0.2 below it.
Bezier noise_curve(int width, int height, CaptchaRandom& rng) {
  Bezier b;
  b.p0 = {rng.uniform(0.0, 0.2) * width, rng.uniform(0.2, 0.8) * height};
  b.p3 = {rng.uniform(0.8, 1.0) * width, rng.uniform(0.2, 0.8) * height};
  b.p1 = {b.p0.x + (b.p3.x - b.p0.x) / 3, rng.uniform(-0.2, 1.2) * height};
  b.p2 = {b.p0.x + 2 * (b.p3.x - b.p0.x) / 3, rng.uniform(-0.2, 1.2) * height};
  return b;
}

}  // namespace

Canvas render_classic(const std::string& text, const std::vector<const Font*>& fonts, int W, int H,
                      CaptchaRandom& rng) {
  const Rgb background{static_cast<float>(rng.uniform_int(238, 255)), static_cast<float>(rng.uniform_int(238, 255)),
                       static_cast<float>(rng.uniform_int(238, 255))};
  Canvas canvas(W, H, background);

  // Characters and their horizontal layout (offsets of each box's left edge, before any squeeze).
  std::vector<Character> chars;
  for (char c : text) {
    const Font& font = *fonts[rng.uniform_int(0, static_cast<int>(fonts.size()) - 1)];
    chars.push_back(make_character(c, font, H, rng));
  }
  double mean_width = 0;
  for (const Character& ch : chars) mean_width += (ch.max_x - ch.min_x) / chars.size();
  std::vector<double> left(chars.size());
  double total = 0;
  for (size_t i = 0; i < chars.size(); ++i) {
    if (i > 0) total -= rng.uniform(0.05, 0.35) * mean_width;
    left[i] = total;
    total += chars[i].max_x - chars[i].min_x;
  }
  const double margin = rng.uniform(0.02, 0.06) * W;
  const double available = W - 2 * margin;
  const double fx = std::min(1.0, available / total);
  const double start = margin + rng.uniform(0.0, 1.0) * (available - fx * total);

  for (size_t i = 0; i < chars.size(); ++i) {
    const Character& ch = chars[i];
    const double box_h = ch.max_y - ch.min_y;
    const double fy = std::min(1.0, 0.96 * H / box_h);
    // Centre the box vertically, jitter by up to 12% of the height, and keep it inside the image.
    const double half = fy * box_h / 2;
    const double centre = std::clamp(H / 2.0 + rng.uniform(-0.12, 0.12) * H, half, H - half);
    const Point origin{start + fx * (left[i] - ch.min_x), centre - fy * (ch.min_y + ch.max_y) / 2};
    draw_character(canvas, ch, origin, fx, fy);
  }

  // Noise in the text colours: dots (about 30 per 160x60, ImageCaptcha's density) and one curve.
  const int dots = static_cast<int>(std::lround(30.0 * W * H / (160.0 * 60.0) * rng.uniform(0.7, 1.3)));
  for (int i = 0; i < dots; ++i) {
    const Point p{rng.uniform(0.0, W), rng.uniform(0.0, H)};
    const double radius = rng.uniform(1.0, 2.0) * H / 64.0;
    draw_dot(canvas, p, radius, chars[rng.uniform_int(0, static_cast<int>(chars.size()) - 1)].colour);
  }
  const Bezier curve = noise_curve(W, H, rng);
  const double half_width = rng.uniform(1.0, 2.0) * H / 64.0;
  draw_curve(canvas, curve, half_width, chars[rng.uniform_int(0, static_cast<int>(chars.size()) - 1)].colour);
  smooth(canvas);
  return canvas;
}

}  // namespace minidl::captcha_gen
