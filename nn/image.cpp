// nn/image.cpp — stb's implementations are compiled here, once, into minidl.
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_TRUETYPE_IMPLEMENTATION
#include <stb_image.h>
#include <stb_image_write.h>
#include <stb_truetype.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "nn/image.h"

namespace minidl {

Image load_image(const std::string& path, int channels) {
  MINIDL_CHECK(channels == 1 || channels == 3, "load_image: channels must be 1 or 3, got ", channels);
  int w = 0, h = 0, n = 0;
  unsigned char* data = stbi_load(path.c_str(), &w, &h, &n, channels);
  MINIDL_CHECK(data != nullptr, "load_image: cannot read '", path, "': ", stbi_failure_reason());
  Image img;
  img.width = w;
  img.height = h;
  img.channels = channels;
  img.pixels.assign(data, data + static_cast<size_t>(w) * h * channels);
  stbi_image_free(data);
  return img;
}

// Each output pixel samples the input at its centre, mapped back: src = (dst + 0.5) * scale - 0.5,
// interpolating the four neighbours.
Image resize_image(const Image& img, int width, int height) {
  MINIDL_CHECK(width > 0 && height > 0, "resize_image: bad size ", width, "x", height);
  Image out;
  out.width = width;
  out.height = height;
  out.channels = img.channels;
  out.pixels.resize(static_cast<size_t>(width) * height * img.channels);
  const double sx = static_cast<double>(img.width) / width, sy = static_cast<double>(img.height) / height;
  for (int y = 0; y < height; ++y) {
    const double fy = std::clamp((y + 0.5) * sy - 0.5, 0.0, img.height - 1.0);
    const int y0 = static_cast<int>(fy), y1 = std::min(y0 + 1, img.height - 1);
    const double wy = fy - y0;
    for (int x = 0; x < width; ++x) {
      const double fx = std::clamp((x + 0.5) * sx - 0.5, 0.0, img.width - 1.0);
      const int x0 = static_cast<int>(fx), x1 = std::min(x0 + 1, img.width - 1);
      const double wx = fx - x0;
      for (int c = 0; c < img.channels; ++c) {
        const double v = (1 - wy) * ((1 - wx) * img.at(y0, x0, c) + wx * img.at(y0, x1, c)) +
                         wy * ((1 - wx) * img.at(y1, x0, c) + wx * img.at(y1, x1, c));
        out.at(y, x, c) = static_cast<uint8_t>(std::lround(std::clamp(v, 0.0, 255.0)));
      }
    }
  }
  return out;
}

void save_png(const std::string& path, const Image& img) {
  const int ok = stbi_write_png(path.c_str(), img.width, img.height, img.channels, img.pixels.data(),
                                img.width * img.channels);
  MINIDL_CHECK(ok != 0, "save_png: cannot write '", path, "'");
}

}  // namespace minidl
