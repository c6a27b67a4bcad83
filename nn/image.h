// nn/image.h — reading, resizing and writing images (stb_image, stb_image_write; compiled into minidl
// in nn/image.cpp, so programs need no image library at run time).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace minidl {

// An 8-bit image, row-major, interleaved channels (1 = gray, 3 = RGB).
struct Image {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;  // height * width * channels
  uint8_t& at(int y, int x, int c = 0) { return pixels[(static_cast<size_t>(y) * width + x) * channels + c]; }
  uint8_t at(int y, int x, int c = 0) const { return pixels[(static_cast<size_t>(y) * width + x) * channels + c]; }
};

// Loads a PNG/JPEG/BMP/... converted to `channels` (1 or 3). Throws minidl::Error naming the file.
Image load_image(const std::string& path, int channels);
// Bilinear resize (area-averaging when shrinking by large factors is not attempted).
Image resize_image(const Image& img, int width, int height);
// Writes a PNG. Throws minidl::Error naming the file on failure.
void save_png(const std::string& path, const Image& img);

}  // namespace minidl
