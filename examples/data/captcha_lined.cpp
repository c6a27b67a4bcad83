// examples/data/captcha_lined.cpp — the lined captcha style (examples/data/captcha_styles.h).
//
// A different site's captchas, for testing training on folders (examples/data/captcha_gen.h). Pipeline:
//   1. background: a horizontal gradient between two light colours (channels uniform in [200, 255]);
//   2. one font and one dark colour for the whole captcha; each character upright but for a rotation of
//      up to ±15° and a scale of 0.9..1.1 in x and y, em = 0.55..0.75 of the height; boxes side by side with
//      gaps of -5%..+20% of the mean width (squeezed to fit, like the classic style), baseline jitter ±8%;
//   3. one to three straight strike-through lines of the text colour, 1.2..2.6 px wide (for a 60 px high
//      image), from the left edge to the right edge at heights in [0.3, 0.7] of the image;
//   4. a sine warp of the whole image, sampled bilinearly with clamped edges:
//        out(x, y) = in(x + ax sin(2 pi y / ly + px), y + ay sin(2 pi x / lx + py)),
//      ax 1..3 px, ly 0.8..1.6 heights, ay 1.5..3.5 px, lx 0.5..1 widths (for a 60 px high image);
//   5. pixel noise: one uniform offset in [-18, 18] per pixel, the same for its three channels;
//   6. with probability 0.3, inverted colours: v -> 255 - v (light text on a dark background).
#include "examples/data/captcha_styles.h"

#include <algorithm>
#include <cmath>

namespace minidl::captcha_gen {

namespace {

// Channel c of the canvas at (x, y) (pixel-centre coordinates: pixel (i, j) is at (i, j)), bilinear, the
// coordinates clamped to the image.
float sample_clamped(const Canvas& canvas, double x, double y, int c) {
  x = std::clamp(x, 0.0, canvas.width - 1.0);
  y = std::clamp(y, 0.0, canvas.height - 1.0);
  const int x0 = static_cast<int>(x), y0 = static_cast<int>(y);
  const int x1 = std::min(x0 + 1, canvas.width - 1), y1 = std::min(y0 + 1, canvas.height - 1);
  const float wx = static_cast<float>(x - x0), wy = static_cast<float>(y - y0);
  auto at = [&](int xx, int yy) { return canvas.rgb[(static_cast<size_t>(yy) * canvas.width + xx) * 3 + c]; };
  return (1 - wy) * ((1 - wx) * at(x0, y0) + wx * at(x1, y0)) + wy * ((1 - wx) * at(x0, y1) + wx * at(x1, y1));
}

}  // namespace

Canvas render_lined(const std::string& text, const std::vector<const Font*>& fonts, int W, int H,
                    CaptchaRandom& rng) {
  const double px = H / 60.0;  // sizes below are for a 60 px high image
  Rgb left_colour, right_colour;
  for (Rgb* c : {&left_colour, &right_colour})
    *c = {static_cast<float>(rng.uniform_int(200, 255)), static_cast<float>(rng.uniform_int(200, 255)),
          static_cast<float>(rng.uniform_int(200, 255))};
  Canvas canvas(W, H, left_colour);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      const float t = W > 1 ? static_cast<float>(x) / (W - 1) : 0.0f;
      canvas.rgb[(static_cast<size_t>(y) * W + x) * 3 + 0] = left_colour.r + t * (right_colour.r - left_colour.r);
      canvas.rgb[(static_cast<size_t>(y) * W + x) * 3 + 1] = left_colour.g + t * (right_colour.g - left_colour.g);
      canvas.rgb[(static_cast<size_t>(y) * W + x) * 3 + 2] = left_colour.b + t * (right_colour.b - left_colour.b);
    }

  const Font& font = *fonts[rng.uniform_int(0, static_cast<int>(fonts.size()) - 1)];
  const Rgb ink = dark_colour(rng);
  std::vector<Character> chars;
  for (char c : text) {
    Character ch;
    ch.glyph = rasterize(font, c, H * rng.uniform(0.55, 0.75));
    ch.colour = ink;
    const double w = ch.glyph.width, h = ch.glyph.height;
    const double sx = rng.uniform(0.9, 1.1), sy = rng.uniform(0.9, 1.1);
    const double angle = rng.uniform(-15.0, 15.0) * kPi / 180.0;
    const double cs = std::cos(angle), sn = std::sin(angle);
    const Point box[4] = {{0, 0}, {w, 0}, {w, h}, {0, h}};
    for (int i = 0; i < 4; ++i) {
      const double x = (box[i].x - w / 2) * sx, y = (box[i].y - h / 2) * sy;
      ch.corners[i] = {cs * x - sn * y, sn * x + cs * y};
    }
    ch.min_x = ch.max_x = ch.corners[0].x;
    ch.min_y = ch.max_y = ch.corners[0].y;
    for (const Point& p : ch.corners) {
      ch.min_x = std::min(ch.min_x, p.x);
      ch.max_x = std::max(ch.max_x, p.x);
      ch.min_y = std::min(ch.min_y, p.y);
      ch.max_y = std::max(ch.max_y, p.y);
    }
    chars.push_back(ch);
  }
  double mean_width = 0;
  for (const Character& ch : chars) mean_width += (ch.max_x - ch.min_x) / chars.size();
  std::vector<double> left(chars.size());
  double total = 0;
  for (size_t i = 0; i < chars.size(); ++i) {
    if (i > 0) total += rng.uniform(-0.05, 0.20) * mean_width;
    left[i] = total;
    total += chars[i].max_x - chars[i].min_x;
  }
  const double margin = rng.uniform(0.03, 0.08) * W;
  const double available = W - 2 * margin;
  const double fx = std::min(1.0, available / total);
  const double start = margin + rng.uniform(0.0, 1.0) * (available - fx * total);
  const double baseline = H / 2.0 + rng.uniform(-0.06, 0.06) * H;
  for (size_t i = 0; i < chars.size(); ++i) {
    const Character& ch = chars[i];
    const double box_h = ch.max_y - ch.min_y;
    const double fy = std::min(1.0, 0.92 * H / box_h);
    const double half = fy * box_h / 2;
    const double centre = std::clamp(baseline + rng.uniform(-0.08, 0.08) * H, half, H - half);
    const Point origin{start + fx * (left[i] - ch.min_x), centre - fy * (ch.min_y + ch.max_y) / 2};
    draw_character(canvas, ch, origin, fx, fy);
  }

  // Strike-through lines: straight Beziers (control points on the segment) from edge to edge.
  const int lines = rng.uniform_int(1, 3);
  for (int i = 0; i < lines; ++i) {
    Bezier b;
    b.p0 = {0, rng.uniform(0.3, 0.7) * H};
    b.p3 = {static_cast<double>(W), rng.uniform(0.3, 0.7) * H};
    b.p1 = {W / 3.0, b.p0.y + (b.p3.y - b.p0.y) / 3};
    b.p2 = {2 * W / 3.0, b.p0.y + 2 * (b.p3.y - b.p0.y) / 3};
    draw_curve(canvas, b, rng.uniform(0.6, 1.3) * px, ink);
  }

  // The sine warp, then noise and perhaps inversion, into a new canvas.
  const double ax = rng.uniform(1.0, 3.0) * px, ly = rng.uniform(0.8, 1.6) * H, phase_x = rng.uniform(0.0, 2 * kPi);
  const double ay = rng.uniform(1.5, 3.5) * px, lx = rng.uniform(0.5, 1.0) * W, phase_y = rng.uniform(0.0, 2 * kPi);
  const bool invert = rng.uniform() < 0.3;
  Canvas out(W, H, Rgb{});
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      const double sx = x + ax * std::sin(2 * kPi * y / ly + phase_x);
      const double sy = y + ay * std::sin(2 * kPi * x / lx + phase_y);
      const float noise = static_cast<float>(rng.uniform(-18.0, 18.0));
      for (int c = 0; c < 3; ++c) {
        const float v = sample_clamped(canvas, sx, sy, c) + noise;
        out.rgb[(static_cast<size_t>(y) * W + x) * 3 + c] = invert ? 255.0f - v : v;
      }
    }
  return out;
}

}  // namespace minidl::captcha_gen
