// nn/image.h — reading, resizing and writing images (stb_image, stb_image_write; compiled into minidl
// in nn/image.cpp, so programs need no image library at run time).
//
// Reading accepts PNG, JPEG and BMP (the only stb decoders compiled in: fewer decoders, less code that
// untrusted files reach). Before stb decodes anything, the wrapper checks what stb does not: the file is
// a regular file (a missing one is reported with the system's reason), it is one of the three formats
// by its first bytes, a PNG's chunks are whole, named by letters, with intact CRCs (critical chunks)
// and end with IEND, a JPEG's segments are whole, its Huffman and quantization tables valid, its scans
// name components its frame defines and it ends with its end-of-image marker, a BMP's info header has a
// size stb reads and the file holds all the rows it declares, and the image has at most kMaxImagePixels
// pixels. Every error is one line naming the file, e.g. "load_image: 'a.png' is a damaged PNG: it ends
// after 812 bytes without the IEND chunk that closes a PNG (truncated?)". Where stb_image still fails
// without a reason, a PNG's image data is inflated with zlib for one ("... is corrupt: invalid block type
// (zlib)"); failing that the message gives the file's size, declared size and first bytes.
#pragma once
#include <cstddef>
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

// Larger images are refused (corrupt headers claim billions of pixels): 8192 x 4096.
constexpr int64_t kMaxImagePixels = int64_t(1) << 25;
// Files larger than this are not read at all.
constexpr uint64_t kMaxImageFileBytes = uint64_t(1) << 28;

// Loads a PNG, JPEG or BMP converted to `channels` (1 or 3). Throws minidl::Error naming the file.
Image load_image(const std::string& path, int channels);
// The same from the file's bytes in memory (fuzzing, tests); `name` stands for the file in messages. The
// fuzzer lowers max_pixels: decoding 2^25 pixels under AddressSanitizer is slow, and no code path depends
// on the limit's value.
Image decode_image(const uint8_t* data, size_t size, const std::string& name, int channels,
                   int64_t max_pixels = kMaxImagePixels);
// Bilinear resize (area-averaging when shrinking by large factors is not attempted).
Image resize_image(const Image& img, int width, int height);
// Writes a PNG. Throws minidl::Error naming the file on failure.
void save_png(const std::string& path, const Image& img);

}  // namespace minidl
