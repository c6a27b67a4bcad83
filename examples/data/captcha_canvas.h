// examples/data/captcha_canvas.h — what both captcha styles draw with (examples/data/captcha_gen.h).
//
// A float RGB canvas (values 0..255) that coverage masks are alpha-blended onto; a glyph's coverage bitmap,
// sampled bilinearly; a character as its glyph mapped onto any quadrilateral (a homography from its four
// corners, so one bilinear sample per canvas pixel keeps edges smooth); anti-aliased dots and cubic
// Bezier strokes; ImageCaptcha's smoothing filter; the conversion to an 8-bit Image. The styles that
// use these are in captcha_classic.cpp and captcha_lined.cpp. Internal to the generator (captcha_*.cpp).
#pragma once
#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

#include "examples/data/captcha_random.h"
#include "nn/image.h"

namespace minidl::captcha_gen {

constexpr double kPi = 3.14159265358979323846;

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

// One character: its glyph bitmap, colour and destination quad, first relative to its own centre.
struct Character {
  Glyph glyph;
  Rgb colour;
  std::array<Point, 4> corners;  // the bitmap's corners (0,0), (w,0), (w,h), (0,h) after the transform
  double min_x = 0, max_x = 0, min_y = 0, max_y = 0;
};

// A stroke's path: a cubic Bezier b(t) with control points p0..p3 whose inner points sit at 1/3 and 2/3
// of the way from p0 to p3 in x, so x(t) is linear in t and the curve is a function y(x) (draw_curve).
struct Bezier {
  Point p0, p1, p2, p3;
};

// A dark colour: each channel uniform in [10, 200] (ImageCaptcha's range), redrawn while too light to
// stand out from the background (luma above 140).
Rgb dark_colour(CaptchaRandom& rng);

// Draws ch with its quad mapped by (x, y) -> (origin.x + fx * x, origin.y + fy * y).
void draw_character(Canvas& canvas, const Character& ch, Point origin, double fx, double fy);

// An anti-aliased disc: coverage = clamp(radius + 0.5 - distance from the centre, 0, 1).
void draw_dot(Canvas& canvas, Point centre, double radius, Rgb colour);

// The curve b drawn column by column as a stroke of half-width `radius`, its ends cut square.
void draw_curve(Canvas& canvas, const Bezier& b, double radius, Rgb colour);

// PIL's ImageFilter.SMOOTH, which ImageCaptcha applies last: 3x3 weights 1 (centre 5), / 13; edges clamp.
void smooth(Canvas& canvas);

// The canvas as an 8-bit RGB image, each value clamped to 0..255 and rounded half up.
Image to_image(const Canvas& canvas);

}  // namespace minidl::captcha_gen
