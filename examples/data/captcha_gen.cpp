// examples/data/captcha_gen.cpp — the captcha generator (examples/data/captcha_gen.h).
//
// Pipeline of render_captcha, all in float RGB on a width x height canvas:
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
// The lined style (CaptchaStyle::lined) has its own pipeline: render_lined below.
#include "examples/data/captcha_gen.h"

#include <stb_truetype.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "core/settings.h"
#include "core/philox.h"
#include "examples/data/font_file.h"

namespace minidl {

namespace {

constexpr double kPi = 3.14159265358979323846;

// ---------------------------------------------------------------- random numbers
enum class Stream : uint64_t { text = 1, image = 2 };

// The random numbers of one captcha: Philox4x32-10 (core/philox.h) keyed by a hash of (seed, stream,
// index), counter 0, 1, 2, ... So each (seed, index) has its own stream, needing no shared state. Uniform
// and integer draws are built from the raw bits here (std:: distributions differ between libraries).
class CaptchaRandom {
 public:
  CaptchaRandom(uint64_t seed, uint64_t index, Stream stream)
      : key_(splitmix64(splitmix64(splitmix64(seed) ^ static_cast<uint64_t>(stream)) + index)) {}

  uint32_t next_u32() {
    if (used_ == 4) {
      block_ = philox4x32_10(counter_++, key_);
      used_ = 0;
    }
    return block_.v[used_++];
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() {
    const uint64_t hi = next_u32() >> 5, lo = next_u32() >> 6;  // 27 + 26 bits
    return (static_cast<double>(hi) * 67108864.0 + static_cast<double>(lo)) * (1.0 / 9007199254740992.0);
  }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [lo, hi] (multiply-shift: no modulo; its bias is below 2^-32 * span).
  int uniform_int(int lo, int hi) {
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int>((static_cast<uint64_t>(next_u32()) * span) >> 32);
  }

 private:
  uint64_t key_;
  uint64_t counter_ = 0;
  Philox4 block_{};
  int used_ = 4;
};

// ---------------------------------------------------------------- fonts
struct Font {
  std::string path;
  std::vector<uint8_t> data;  // stbtt_fontinfo points into it
  stbtt_fontinfo info{};
};

// Every character a captcha may hold (check_text_chars): printable ASCII but the space.
const std::string& drawable_characters() {
  static const std::string chars = [] {
    std::string s;
    for (char c = '!'; c <= '~'; ++c) s += c;
    return s;
  }();
  return chars;
}

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

// stb_truetype trusts every offset in a font, so each file is checked first (examples/data/font_file.h). `who`
// starts the error message ("captcha: font '<path>': truncated: ...").
const Font& load_font(const std::string& path, const std::string& who = "captcha: font") {
  static std::map<std::string, std::unique_ptr<Font>> cache;
  std::lock_guard<std::mutex> lock(font_mutex());
  auto it = cache.find(path);
  if (it != cache.end()) return *it->second;
  auto font = font_from_checked_bytes(path, read_truetype_font(path, drawable_characters(), who), who);
  return *cache.emplace(path, std::move(font)).first->second;
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

// ---------------------------------------------------------------- glyphs and geometry
struct Point {
  double x = 0, y = 0;
};

// A glyph's coverage (0..1) with a one-pixel empty border, so bilinear sampling fades out at its edges.
struct Glyph {
  int width = 2, height = 2;
  std::vector<float> coverage = std::vector<float>(4, 0.0f);

  float at(int x, int y) const {
    if (x < 0 || y < 0 || x >= width || y >= height) return 0.0f;
    return coverage[static_cast<size_t>(y) * width + x];
  }
  // Bilinear at a point in pixel-centre coordinates (pixel (i, j) is at (i, j)); 0 outside.
  float sample(double x, double y) const {
    const double fx = std::floor(x), fy = std::floor(y);
    const int x0 = static_cast<int>(fx), y0 = static_cast<int>(fy);
    const float wx = static_cast<float>(x - fx), wy = static_cast<float>(y - fy);
    if (x0 >= 0 && y0 >= 0 && x0 + 1 < width && y0 + 1 < height) {  // the common case: no bounds checks
      const float* p = &coverage[static_cast<size_t>(y0) * width + x0];
      return (1 - wy) * ((1 - wx) * p[0] + wx * p[1]) + wy * ((1 - wx) * p[width] + wx * p[width + 1]);
    }
    return (1 - wy) * ((1 - wx) * at(x0, y0) + wx * at(x0 + 1, y0)) +
           wy * ((1 - wx) * at(x0, y0 + 1) + wx * at(x0 + 1, y0 + 1));
  }
};

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

struct Rgb {
  float r = 0, g = 0, b = 0;
};

// A float RGB canvas with alpha blending of coverage masks.
struct Canvas {
  int width, height;
  std::vector<float> rgb;  // height * width * 3, values 0..255

  Canvas(int w, int h, Rgb background) : width(w), height(h), rgb(static_cast<size_t>(w) * h * 3) {
    for (size_t i = 0; i < rgb.size(); i += 3) {
      rgb[i] = background.r;
      rgb[i + 1] = background.g;
      rgb[i + 2] = background.b;
    }
  }
  // pixel = pixel * (1 - a) + colour * a
  void blend(int x, int y, float a, Rgb c) {
    float* p = &rgb[(static_cast<size_t>(y) * width + x) * 3];
    p[0] += a * (c.r - p[0]);
    p[1] += a * (c.g - p[1]);
    p[2] += a * (c.b - p[2]);
  }
};

// A dark colour: each channel uniform in [10, 200] (ImageCaptcha's range), redrawn while too light to
// stand out from the background (luma above 140).
Rgb dark_colour(CaptchaRandom& rng) {
  while (true) {
    const Rgb c{static_cast<float>(rng.uniform_int(10, 200)), static_cast<float>(rng.uniform_int(10, 200)),
                static_cast<float>(rng.uniform_int(10, 200))};
    if (0.299f * c.r + 0.587f * c.g + 0.114f * c.b <= 140.0f) return c;
  }
}

// One character: its glyph bitmap, colour and destination quad, first relative to its own centre.
struct Character {
  Glyph glyph;
  Rgb colour;
  std::array<Point, 4> corners;  // the bitmap's corners (0,0), (w,0), (w,h), (0,h) after the transform
  double min_x = 0, max_x = 0, min_y = 0, max_y = 0;
};

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

// Draws ch with its quad mapped by (x, y) -> (origin.x + fx * x, origin.y + fy * y).
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

// The noise curve: a cubic Bezier b(t) from the left part of the image to the right part whose inner
// control points sit at 1/3 and 2/3 of the way in x, so x(t) is linear in t and the curve is a function
// y(x). Drawn column by column as a stroke of half-width r: a pixel at vertical distance dy from the curve
// is at distance ~ |dy| cos(theta) from it (theta = the local slope angle); coverage =
// clamp(r + 0.5 - |dy| cos(theta), 0, 1). The ends are cut square.
struct Bezier {
  Point p0, p1, p2, p3;
};

Bezier noise_curve(int width, int height, CaptchaRandom& rng) {
  Bezier b;
  b.p0 = {rng.uniform(0.0, 0.2) * width, rng.uniform(0.2, 0.8) * height};
  b.p3 = {rng.uniform(0.8, 1.0) * width, rng.uniform(0.2, 0.8) * height};
  b.p1 = {b.p0.x + (b.p3.x - b.p0.x) / 3, rng.uniform(-0.2, 1.2) * height};
  b.p2 = {b.p0.x + 2 * (b.p3.x - b.p0.x) / 3, rng.uniform(-0.2, 1.2) * height};
  return b;
}

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

// PIL's ImageFilter.SMOOTH, which ImageCaptcha applies last: 3x3 weights 1 (centre 5), / 13; edges clamp.
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

void check_text_chars(const char* what, const std::string& text) {
  for (char c : text)
    MINIDL_CHECK(c > ' ' && c <= '~', "captcha: ", what, " may only hold printable ASCII characters (no space), got ",
                 "byte ", static_cast<int>(static_cast<unsigned char>(c)));
}

// ---------------------------------------------------------------- the lined style
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

}  // namespace

std::vector<Image> draw_font_glyphs(const std::vector<uint8_t>& font_bytes, const std::string& name,
                                    const std::string& characters, double em_pixels) {
  check_text_chars("the characters", characters);
  MINIDL_CHECK(em_pixels >= 1 && em_pixels <= 4096, "captcha: em size ", em_pixels, " is outside 1..4096 pixels");
  check_truetype_font(font_bytes.data(), font_bytes.size(), name, drawable_characters(), "captcha: font");
  const std::unique_ptr<Font> font = font_from_checked_bytes(name, font_bytes, "captcha: font");
  std::vector<Image> out;
  for (char c : characters) {
    Image img;
    img.channels = 1;
    if (stbtt_FindGlyphIndex(&font->info, static_cast<unsigned char>(c)) != 0) {
      const Glyph g = rasterize(*font, c, em_pixels);
      img.width = g.width;
      img.height = g.height;
      img.pixels.resize(g.coverage.size());
      for (size_t i = 0; i < g.coverage.size(); ++i) img.pixels[i] = static_cast<uint8_t>(std::lround(g.coverage[i] * 255));
    }
    out.push_back(std::move(img));
  }
  return out;
}

CaptchaStyle parse_captcha_style(const std::string& name) {
  if (name == "classic") return CaptchaStyle::classic;
  if (name == "lined") return CaptchaStyle::lined;
  throw Error(str_cat("captcha: the style is classic or lined, not '", name, "'"));
}

std::vector<std::string> find_lined_captcha_fonts() {
  std::vector<std::string> found;
  for (const std::string name : {"DejaVuSerif-Bold.ttf", "DejaVuSansMono-Bold.ttf"}) {
    std::string looked;
    for (const std::string& candidate : default_font_candidates()) {
      const std::string path = candidate.substr(0, candidate.rfind('/') + 1) + name;
      if (file_exists(path)) {
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

void check_captcha_options(const CaptchaOptions& o) {
  MINIDL_CHECK(!o.charset.empty(), "captcha: the charset is empty");
  check_text_chars("the charset", o.charset);
  for (size_t i = 0; i < o.charset.size(); ++i)
    MINIDL_CHECK(o.charset.find(o.charset[i], i + 1) == std::string::npos, "captcha: the charset has '",
                 o.charset[i], "' twice");
  MINIDL_CHECK(o.min_length >= 1 && o.min_length <= o.max_length, "captcha: bad length range ", o.min_length, "-",
               o.max_length, " (need 1 <= min <= max)");
  MINIDL_CHECK(o.width >= 16 && o.height >= 16 && o.width <= 4096 && o.height <= 4096, "captcha: image size ",
               o.width, "x", o.height, " is outside 16..4096");
}

std::string find_captcha_font() {
  if (const std::string env = settings::captcha_font.read(); !env.empty()) {  // MINIDL_CAPTCHA_FONT
    load_font(env, "captcha: MINIDL_CAPTCHA_FONT");  // refuses a missing, non-regular or damaged file
    return env;
  }
  for (const std::string& path : default_font_candidates())
    if (file_exists(path)) return path;
  std::string looked = "$MINIDL_CAPTCHA_FONT (unset)";
  for (const std::string& path : default_font_candidates()) looked += ", " + path;
  throw Error(str_cat("captcha: no TrueType font found; looked at ", looked,
                      ". Install fonts-dejavu-core (`make deps`), set MINIDL_CAPTCHA_FONT, or pass a font file."));
}

std::string random_captcha_text(const CaptchaOptions& options, uint64_t seed, uint64_t index) {
  check_captcha_options(options);
  CaptchaRandom rng(seed, index, Stream::text);
  const int length = rng.uniform_int(options.min_length, options.max_length);
  std::string text;
  for (int i = 0; i < length; ++i)
    text += options.charset[rng.uniform_int(0, static_cast<int>(options.charset.size()) - 1)];
  return text;
}

Image render_captcha(const std::string& text, const CaptchaOptions& options, uint64_t seed, uint64_t index) {
  check_captcha_options(options);
  MINIDL_CHECK(!text.empty(), "captcha: cannot render an empty text");
  check_text_chars("the text", text);
  std::vector<const Font*> fonts;
  if (options.fonts.empty() && options.style == CaptchaStyle::lined) {
    static const std::vector<const Font*> lined_fonts = [] {  // resolved once, then lock-free
      std::vector<const Font*> loaded;
      for (const std::string& path : find_lined_captcha_fonts()) loaded.push_back(&load_font(path));
      return loaded;
    }();
    fonts = lined_fonts;
  } else if (options.fonts.empty()) {
    static const Font& default_font = load_font(find_captcha_font());  // resolved once, then lock-free
    fonts.push_back(&default_font);
  }
  for (const std::string& path : options.fonts) fonts.push_back(&load_font(path));

  const int W = options.width, H = options.height;
  CaptchaRandom rng(seed, index, Stream::image);
  if (options.style == CaptchaStyle::lined) return to_image(render_lined(text, fonts, W, H, rng));
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
  return to_image(canvas);
}

}  // namespace minidl
