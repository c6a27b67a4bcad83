// examples/data/captcha_canvas.cpp — the drawing both captcha styles share (examples/data/captcha_canvas.h):
// characters mapped onto quads, dots, curves, the smoothing filter and the final 8-bit image.
#include "examples/data/captcha_canvas.h"

#include <algorithm>
#include <cstdint>

#include "core/error.h"

namespace minidl::captcha_gen {

namespace {

// The projective map H with H(from[i]) = to[i] for four points, as the 3x3 matrix (row-major, h[8] = 1):
//   H(x, y) = ((h0 x + h1 y + h2) / d, (h3 x + h4 y + h5) / d),   d = h6 x + h7 y + 1.
// Each correspondence gives two linear equations in h0..h7; Gaussian elimination with partial pivoting.
std::array<double, 9> homography(const std::array<Point, 4>& from, const std::array<Point, 4>& to) {
  double a[8][9] = {};
  for (int i = 0; i < 4; ++i) {
    const double x = from[i].x, y = from[i].y, u = to[i].x, v = to[i].y;
    const double row_u[9] = {x, y, 1, 0, 0, 0, -u * x, -u * y, u};
    const double row_v[9] = {0, 0, 0, x, y, 1, -v * x, -v * y, v};
    std::copy(row_u, row_u + 9, a[2 * i]);
    std::copy(row_v, row_v + 9, a[2 * i + 1]);
  }
  for (int col = 0; col < 8; ++col) {
    int pivot = col;
    for (int r = col + 1; r < 8; ++r)
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col])) pivot = r;
    MINIDL_CHECK(std::fabs(a[pivot][col]) > 1e-12, "captcha: degenerate character quad");
    std::swap(a[col], a[pivot]);
    for (int r = 0; r < 8; ++r) {
      if (r == col) continue;
      const double f = a[r][col] / a[col][col];
      for (int k = col; k < 9; ++k) a[r][k] -= f * a[col][k];
    }
  }
  std::array<double, 9> h{};
  for (int i = 0; i < 8; ++i) h[i] = a[i][8] / a[i][i];
  h[8] = 1;
  return h;
}

}  // namespace

Rgb dark_colour(CaptchaRandom& rng) {
  while (true) {
    const Rgb c{static_cast<float>(rng.uniform_int(10, 200)), static_cast<float>(rng.uniform_int(10, 200)),
                static_cast<float>(rng.uniform_int(10, 200))};
    if (0.299f * c.r + 0.587f * c.g + 0.114f * c.b <= 140.0f) return c;
  }
}

void draw_character(Canvas& canvas, const Character& ch, Point origin, double fx, double fy) {
  std::array<Point, 4> dst;
  for (int i = 0; i < 4; ++i) dst[i] = {origin.x + fx * ch.corners[i].x, origin.y + fy * ch.corners[i].y};
  const double w = ch.glyph.width, h = ch.glyph.height;
  const std::array<double, 9> m = homography(dst, {Point{0, 0}, Point{w, 0}, Point{w, h}, Point{0, h}});
  const int x0 = std::max(0, static_cast<int>(std::floor(origin.x + fx * ch.min_x)));
  const int x1 = std::min(canvas.width - 1, static_cast<int>(std::ceil(origin.x + fx * ch.max_x)));
  const int y0 = std::max(0, static_cast<int>(std::floor(origin.y + fy * ch.min_y)));
  const int y1 = std::min(canvas.height - 1, static_cast<int>(std::ceil(origin.y + fy * ch.max_y)));
  for (int y = y0; y <= y1; ++y) {
    // Along a row the three homogeneous coordinates are linear in x: step them, divide once per pixel.
    const double px = x0 + 0.5, py = y + 0.5;
    double nu = m[0] * px + m[1] * py + m[2], nv = m[3] * px + m[4] * py + m[5], d = m[6] * px + m[7] * py + 1;
    for (int x = x0; x <= x1; ++x, nu += m[0], nv += m[3], d += m[6]) {
      const double inv = 1.0 / d, u = nu * inv, v = nv * inv;
      if (u < 0 || v < 0 || u > w || v > h) continue;  // outside the glyph's box (its border is empty)
      const float a = ch.glyph.sample(u - 0.5, v - 0.5);
      if (a > 0) canvas.blend(x, y, a, ch.colour);
    }
  }
}

// An anti-aliased disc: coverage = clamp(radius + 0.5 - distance from the centre, 0, 1).
void draw_dot(Canvas& canvas, Point centre, double radius, Rgb colour) {
  const int x0 = std::max(0, static_cast<int>(std::floor(centre.x - radius - 1)));
  const int x1 = std::min(canvas.width - 1, static_cast<int>(std::ceil(centre.x + radius + 1)));
  const int y0 = std::max(0, static_cast<int>(std::floor(centre.y - radius - 1)));
  const int y1 = std::min(canvas.height - 1, static_cast<int>(std::ceil(centre.y + radius + 1)));
  for (int y = y0; y <= y1; ++y)
    for (int x = x0; x <= x1; ++x) {
      const double dist = std::hypot(x + 0.5 - centre.x, y + 0.5 - centre.y);
      const double a = std::min(1.0, radius + 0.5 - dist);
      if (a > 0) canvas.blend(x, y, static_cast<float>(a), colour);
    }
}

// Column by column: a pixel at vertical distance dy from the curve is at distance ~ |dy| cos(theta) from
// it (theta = the local slope angle); coverage = clamp(r + 0.5 - |dy| cos(theta), 0, 1).
void draw_curve(Canvas& canvas, const Bezier& b, double radius, Rgb colour) {
  const double span = b.p3.x - b.p0.x;
  const int x0 = std::max(0, static_cast<int>(std::floor(b.p0.x)));
  const int x1 = std::min(canvas.width - 1, static_cast<int>(std::ceil(b.p3.x)));
  for (int x = x0; x <= x1; ++x) {
    const double t = (x + 0.5 - b.p0.x) / span, s = 1 - t;
    if (t < 0 || t > 1) continue;
    const double y = s * s * s * b.p0.y + 3 * s * s * t * b.p1.y + 3 * s * t * t * b.p2.y + t * t * t * b.p3.y;
    const double dy_dt = 3 * s * s * (b.p1.y - b.p0.y) + 6 * s * t * (b.p2.y - b.p1.y) + 3 * t * t * (b.p3.y - b.p2.y);
    const double cos_theta = 1 / std::sqrt(1 + (dy_dt / span) * (dy_dt / span));
    const double reach = (radius + 1) / cos_theta;
    const int ya = std::max(0, static_cast<int>(std::floor(y - reach)));
    const int yb = std::min(canvas.height - 1, static_cast<int>(std::ceil(y + reach)));
    for (int row = ya; row <= yb; ++row) {
      const double a = std::min(1.0, radius + 0.5 - std::fabs(row + 0.5 - y) * cos_theta);
      if (a > 0) canvas.blend(x, row, static_cast<float>(a), colour);
    }
  }
}

// Written as (3x3 box sum + 4 * centre) / 13 with the box sum separable: rows, then columns.
void smooth(Canvas& canvas) {
  const int w = canvas.width, h = canvas.height;
  auto idx = [w](int y, int x, int c) { return (static_cast<size_t>(y) * w + x) * 3 + c; };
  std::vector<float> rows(canvas.rgb.size());
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        rows[idx(y, x, c)] = canvas.rgb[idx(y, std::max(x - 1, 0), c)] + canvas.rgb[idx(y, x, c)] +
                             canvas.rgb[idx(y, std::min(x + 1, w - 1), c)];
  for (int y = 0; y < h; ++y) {
    const int up = std::max(y - 1, 0), down = std::min(y + 1, h - 1);
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        const float box = rows[idx(up, x, c)] + rows[idx(y, x, c)] + rows[idx(down, x, c)];
        canvas.rgb[idx(y, x, c)] = (box + 4 * canvas.rgb[idx(y, x, c)]) / 13.0f;
      }
  }
}

Image to_image(const Canvas& canvas) {
  Image img;
  img.width = canvas.width;
  img.height = canvas.height;
  img.channels = 3;
  img.pixels.resize(canvas.rgb.size());
  const float* src = canvas.rgb.data();
  uint8_t* dst = img.pixels.data();
  for (size_t i = 0; i < canvas.rgb.size(); ++i)  // min/max rather than clamp: branch-free, vectorises
    dst[i] = static_cast<uint8_t>(std::min(std::max(src[i], 0.0f), 255.0f) + 0.5f);  // round half up
  return img;
}

}  // namespace minidl::captcha_gen
