// nn/image.cpp — reading (with the checks that run before stb_image sees a file), resizing and writing
// images (nn/image.h). stb's implementations are compiled in nn/stb.cpp.
#include <stb_image.h>
#include <stb_image_write.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "nn/files.h"
#include "nn/image.h"

namespace minidl {

namespace {

std::string hex_bytes(const uint8_t* b, size_t n) {
  std::string out;
  char buf[4];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", b[i]);
    out += (i ? " " : "") + std::string(buf);
  }
  return out;
}

uint32_t be32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 | static_cast<uint32_t>(p[2]) << 8 |
         static_cast<uint32_t>(p[3]);
}

bool is_ascii_letter(uint8_t c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

// A message from stb as one printable line: bytes outside printable ASCII as \xNN (stb copies a bad
// chunk's name into its message as is).
std::string printable(const char* reason) {
  std::string out;
  for (const char* p = reason; p && *p; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c >= ' ' && c <= '~') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

// stb_image keeps its last failure reason per thread, and some of its failures set none; and before a JPEG
// or BMP is decoded its PNG test fails, leaving "bad png sig". So the reason is set to a known one before
// decoding ("unknown image type", by asking stb about a 1-byte buffer), and a reason that is still that,
// or the PNG test's for a file that is not a PNG, is no reason.
void reset_stb_failure_reason() {
  const unsigned char one_byte = 0;
  int w = 0, h = 0, n = 0;
  stbi_info_from_memory(&one_byte, 1, &w, &h, &n);
}
bool stb_gave_a_reason(const char* reason, const std::string& format) {
  return reason != nullptr && *reason != '\0' && std::strcmp(reason, "unknown image type") != 0 &&
         !(format != "PNG" && std::strcmp(reason, "bad png sig") == 0);
}

constexpr uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};

// The image size a file's header declares, read here rather than by stb: stb allocates for the declared
// size before it finds the data missing (up to gigabytes for a 100-byte file), and when its own header
// check fails it reports "unknown image type".
struct Dimensions {
  int64_t width = 0, height = 0;
};

// A PNG is the 8-byte signature, then chunks: data length (uint32, big-endian, below 2^31), a type of
// four ASCII letters, the data, and a CRC-32 of type and data. IHDR (width, height: uint32 each) comes
// first (after Apple's CgBI, which stb reads), IEND last. A lower-case first letter marks an ancillary
// chunk, which a decoder may skip; an upper-case one a critical chunk: as libpng does, a critical chunk's
// CRC must match (stb checks no CRC) and an unknown critical chunk is an error. Bytes after IEND are
// ignored, as every decoder does. Returns what is wrong, or "" for a sound structure.
std::string png_problem(const uint8_t* d, size_t n, Dimensions& dims) {
  size_t pos = sizeof kPngSignature;
  for (bool first = true;; first = false) {
    const size_t left = n - pos;
    if (left == 0) return str_cat("it ends after ", n, " bytes without the IEND chunk that closes a PNG (truncated?)");
    if (left < 12)
      return str_cat("it ends after ", n, " bytes inside a chunk header at offset ", pos,
                     ", without the IEND chunk that closes a PNG (truncated?)");
    const uint32_t length = be32(d + pos);
    const uint8_t* type = d + pos + 4;
    if (!std::all_of(type, type + 4, is_ascii_letter))
      return str_cat("the chunk at offset ", pos, " has a damaged name (bytes ", hex_bytes(type, 4),
                     "; a chunk is named by four ASCII letters)");
    const std::string name(reinterpret_cast<const char*>(type), 4);
    if (length > 0x7fffffffu || length > left - 12)
      return str_cat("chunk '", name, "' at offset ", pos, " declares ", length, " data bytes but only ", left - 12,
                     " follow (truncated?)");
    if (first && name != "IHDR" && name != "CgBI") return str_cat("the first chunk is '", name, "', not IHDR");
    if (type[0] >= 'A' && type[0] <= 'Z') {
      if (name != "IHDR" && name != "PLTE" && name != "IDAT" && name != "IEND" && name != "CgBI")
        return str_cat("unknown critical chunk '", name, "' at offset ", pos);
      const uint32_t stored = be32(type + 4 + length);
      const uint32_t computed = static_cast<uint32_t>(crc32_z(0L, type, 4 + static_cast<size_t>(length)));
      if (stored != computed) return str_cat("chunk '", name, "' at offset ", pos, " fails its CRC check (damaged data)");
    }
    if (name == "IHDR") {
      if (length != 13) return str_cat("its IHDR chunk has ", length, " bytes, not 13");
      dims = {be32(type + 4), be32(type + 8)};
    }
    if (name == "IEND") return dims.width == 0 && dims.height == 0 ? "it has no IHDR chunk" : "";
    pos += 12 + static_cast<size_t>(length);
  }
}

// Why a PNG whose chunks are sound may still not decode: its image data, the IDAT chunks' bytes joined,
// is one zlib stream; zlib says what is wrong with it where stb_image (whose inflater reports some faults
// without a reason) may not. "" when the stream inflates to its end (or for Apple's CgBI files, whose
// stream has no zlib header).
std::string png_image_data_problem(const uint8_t* d, size_t n) {
  std::vector<uint8_t> stream;
  for (size_t pos = sizeof kPngSignature; pos + 12 <= n;) {
    const uint32_t length = be32(d + pos);
    const std::string name(reinterpret_cast<const char*>(d + pos + 4), 4);
    if (name == "CgBI") return "";
    if (name == "IDAT") stream.insert(stream.end(), d + pos + 8, d + pos + 8 + length);
    if (name == "IEND") break;
    pos += 12 + static_cast<size_t>(length);
  }
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return "";
  z.next_in = stream.data();
  z.avail_in = static_cast<uInt>(stream.size());
  std::vector<uint8_t> out(1 << 16);
  int r = Z_OK;
  while (r == Z_OK) {
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    r = inflate(&z, Z_NO_FLUSH);
  }
  const std::string message = z.msg != nullptr ? z.msg : zError(r);
  inflateEnd(&z);
  if (r == Z_STREAM_END) return "";
  if (r == Z_BUF_ERROR) return str_cat("its image data (IDAT, ", stream.size(), " bytes) ends inside its zlib stream");
  return str_cat("its image data (IDAT, ", stream.size(), " bytes) is corrupt: ", message, " (zlib)");
}

// A JPEG is a sequence of segments, each a marker (ff xx) and, for most markers, a big-endian length
// that counts itself; after a start-of-scan segment (ff da) come entropy-coded bytes, up to the next
// marker (an ff followed by neither 00, a stuffed byte, nor d0..d7, a restart marker); the end-of-image
// marker (ff d9) closes the file (bytes after it are ignored, as every decoder does). The frame header
// (SOF0..SOF15 but c4, c8, cc) holds height and width (uint16 each, after the precision byte).
// Huffman tables are checked here, because stb_image 2.27 does not (both found by fuzz/image_fuzzer.cpp):
// a table (DHT, ff c4) declaring more than 256 codes makes stb write past its arrays, and a scan (SOS,
// ff da) that decodes with a table no DHT defined makes it read its uninitialised memory as one. A scan
// naming a component the frame header does not define, and quantization tables (DQT, ff db) that do not
// fill their segment exactly, make stb fail without saying why. A scan
// decodes with the DC tables it names unless it is a progressive refinement or AC scan, and with the AC
// tables unless it is a progressive DC scan.
std::string jpeg_problem(const uint8_t* d, size_t n, Dimensions& dims) {
  size_t pos = 2;
  bool have_frame = false, progressive = false;
  bool defined[2][4] = {};  // [DC 0 / AC 1][table id]
  std::vector<uint8_t> frame_ids;  // the component ids the frame header defines
  while (true) {
    if (pos + 2 > n) return str_cat("it ends after ", n, " bytes without the end-of-image marker (truncated?)");
    if (d[pos] != 0xff) return str_cat("expected a marker (ff) at offset ", pos, ", found ", hex_bytes(d + pos, 1));
    const uint8_t marker = d[pos + 1];
    if (marker == 0xff) {  // fill byte
      ++pos;
      continue;
    }
    if (marker == 0xd9) return have_frame ? "" : "it has no frame header (SOF)";
    if (marker == 0x01 || marker == 0xd8 || (marker >= 0xd0 && marker <= 0xd7)) {  // markers without a length
      pos += 2;
      continue;
    }
    if (pos + 4 > n) return str_cat("it ends after ", n, " bytes inside a segment header (truncated?)");
    const size_t length = static_cast<size_t>(d[pos + 2]) << 8 | d[pos + 3];
    if (length < 2 || length > n - pos - 2)
      return str_cat("the segment ff ", hex_bytes(&marker, 1), " at offset ", pos, " declares ", length,
                     " bytes but only ", n - pos - 2, " follow (truncated?)");
    const uint8_t* body = d + pos + 4;
    const size_t body_size = length - 2;
    const bool frame = marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc;
    if (frame && !have_frame) {
      if (body_size < 5) return str_cat("its frame header at offset ", pos, " is too short (", length, " bytes)");
      dims = {static_cast<int64_t>(body[3]) << 8 | body[4], static_cast<int64_t>(body[1]) << 8 | body[2]};
      if (body_size < 6 + 3 * static_cast<size_t>(body[5]))
        return str_cat("its frame header at offset ", pos, " is too short for its ", int(body[5]), " components");
      for (size_t c = 0; c < body[5]; ++c) frame_ids.push_back(body[6 + 3 * c]);
      have_frame = true;
      progressive = marker == 0xc2 || marker == 0xc6 || marker == 0xca || marker == 0xce;
    }
    if (marker == 0xc4) {  // tables: class and id (1 byte), 16 code counts, then that many symbols
      for (size_t t = 0; t < body_size;) {
        if (body_size - t < 17) return str_cat("the Huffman table segment at offset ", pos, " is cut short");
        int codes = 0;
        for (int i = 1; i <= 16; ++i) codes += body[t + i];
        if ((body[t] >> 4) > 1 || (body[t] & 15) > 3 || codes > 256)
          return str_cat("a Huffman table at offset ", pos, " is invalid (class/id byte ", hex_bytes(body + t, 1), ", ",
                         codes, " codes; at most 256)");
        if (static_cast<size_t>(codes) > body_size - t - 17)
          return str_cat("the Huffman table segment at offset ", pos, " is cut short");
        defined[body[t] >> 4][body[t] & 15] = true;
        t += 17 + static_cast<size_t>(codes);
      }
    }
    if (marker == 0xdb) {  // quantization tables: precision << 4 | id (1 byte), then 64 values of 1 or 2 bytes
      for (size_t t = 0; t < body_size;) {
        const int precision = body[t] >> 4, id = body[t] & 15;
        const size_t bytes = 1 + 64 * static_cast<size_t>(precision + 1);
        if (precision > 1 || id > 3)
          return str_cat("a quantization table at offset ", pos, " is invalid (precision/id byte ", hex_bytes(body + t, 1),
                         "; precision 0 or 1, id 0 to 3)");
        if (bytes > body_size - t)
          return str_cat("the quantization table segment (DQT) at offset ", pos, " is cut short: its table ", id,
                         " needs ", bytes, " bytes, ", body_size - t, " remain");
        t += bytes;
      }
    }
    if (marker == 0xda) {  // components (id, DC table << 4 | AC table), then Ss, Se, Ah << 4 | Al
      const size_t components = body_size > 0 ? body[0] : 0;
      if (components == 0 || body_size < 1 + 2 * components + 3)
        return str_cat("the scan header at offset ", pos, " is too short or names no component");
      const uint8_t spectral_start = body[1 + 2 * components], high_bit = body[3 + 2 * components] >> 4;
      const bool uses_dc = !progressive || (spectral_start == 0 && high_bit == 0);
      const bool uses_ac = !progressive || spectral_start > 0;
      for (size_t c = 0; c < components; ++c) {
        if (std::find(frame_ids.begin(), frame_ids.end(), body[1 + 2 * c]) == frame_ids.end()) {
          std::string ids;
          for (uint8_t id : frame_ids) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
          return str_cat("the scan at offset ", pos, " names component ", int(body[1 + 2 * c]), ", which ",
                         have_frame ? "the frame header (SOF) does not define (it defines " + ids + ")"
                                    : "no frame header (SOF) before it defines");
        }
        const int dc = body[2 + 2 * c] >> 4, ac = body[2 + 2 * c] & 15;
        if (dc > 3 || ac > 3 || (uses_dc && !defined[0][dc]) || (uses_ac && !defined[1][ac]))
          return str_cat("the scan at offset ", pos, " decodes with a Huffman table that no DHT segment before it "
                         "defines (DC ", dc, ", AC ", ac, ")");
      }
    }
    pos += 2 + length;
    if (marker == 0xda) {  // entropy-coded data up to the next marker
      while (pos + 1 < n && !(d[pos] == 0xff && d[pos + 1] != 0x00 && !(d[pos + 1] >= 0xd0 && d[pos + 1] <= 0xd7)))
        ++pos;
    }
  }
}

// A BMP is a 14-byte file header ("BM", file size, reserved, the offset of the pixel data: uint32 at 10)
// and an info header that starts with its own size: 12 bytes (OS/2: uint16 width, height, planes, bits
// per pixel at 18, 20, 22, 24) or 40, 56, 108 or 124 (the sizes stb_image reads; int32 width and height at 18, 22, a negative height meaning
// rows top-down; uint16 bits per pixel at 28; uint32 compression at 30). Uncompressed rows (compression
// 0, or 3: bit fields) are padded to 4 bytes, and the file must hold all of them: stb_image reads missing
// bytes as zeros, so a 60-byte file declaring 5000 x 5000 pixels would be a black image, not an error.
std::string bmp_problem(const uint8_t* d, size_t n, Dimensions& dims) {
  if (n < 34) return str_cat("it ends after ", n, " bytes, inside its header (truncated?)");
  auto le16 = [&](size_t at) { return static_cast<uint32_t>(d[at]) | static_cast<uint32_t>(d[at + 1]) << 8; };
  auto le32 = [&](size_t at) { return le16(at) | le16(at + 2) << 16; };
  const uint32_t info = le32(14), offset = le32(10);
  uint32_t bits = 0, compression = 0;
  if (info == 12) {
    dims = {le16(18), le16(20)};
    bits = le16(24);
  } else if (info == 40 || info == 56 || info == 108 || info == 124) {
    const int64_t height = static_cast<int32_t>(le32(22));
    dims = {static_cast<int32_t>(le32(18)), height < 0 ? -height : height};
    bits = le16(28);
    compression = le32(30);
  } else {
    return str_cat("its info header has an unknown size (", info, " bytes; stb_image reads 12, 40, 56, 108 or 124)");
  }
  if ((compression == 0 || compression == 3) && dims.width > 0 && bits > 0 && bits <= 32) {
    const uint64_t row = (static_cast<uint64_t>(dims.width) * bits + 31) / 32 * 4;
    const uint64_t available = offset <= n ? n - offset : 0;
    if (static_cast<uint64_t>(dims.height) > available / row)
      return str_cat("its ", dims.width, "x", dims.height, " pixels need ", row, " x ", dims.height,
                     " bytes from offset ", offset, ", the file has ", n, " bytes (truncated?)");
  }
  return "";
}

}  // namespace

Image decode_image(const uint8_t* data, size_t size, const std::string& name, int channels, int64_t max_pixels) {
  MINIDL_CHECK(channels == 1 || channels == 3, "load_image: channels must be 1 or 3, got ", channels);
  MINIDL_CHECK(size > 0, "load_image: '", name, "' is empty");
  std::string format, problem;
  Dimensions dims;
  if (size >= 8 && std::memcmp(data, kPngSignature, 8) == 0) {
    format = "PNG";
    problem = png_problem(data, size, dims);
  } else if (size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff) {
    format = "JPEG";
    problem = jpeg_problem(data, size, dims);
  } else if (size >= 2 && data[0] == 'B' && data[1] == 'M') {
    format = "BMP";
    problem = bmp_problem(data, size, dims);
  } else {
    throw Error(str_cat("load_image: '", name, "' is not a PNG, JPEG or BMP file (it starts with ",
                        hex_bytes(data, std::min<size_t>(size, 8)), ")"));
  }
  MINIDL_CHECK(problem.empty(), "load_image: '", name, "' is a damaged ", format, ": ", problem);
  MINIDL_CHECK(dims.width >= 1 && dims.height >= 1, "load_image: '", name, "' is a damaged ", format,
               ": its header declares a ", dims.width, "x", dims.height, " image");
  MINIDL_CHECK(dims.width <= max_pixels / dims.height, "load_image: '", name, "' is ", dims.width, "x", dims.height,
               " pixels, more than the ", max_pixels, " this reader accepts (a corrupt header?)");
  MINIDL_CHECK(size <= static_cast<size_t>(INT32_MAX), "load_image: '", name, "' is too large (", size, " bytes)");
  int w = 0, h = 0, n = 0;
  reset_stb_failure_reason();
  unsigned char* pixels = stbi_load_from_memory(data, static_cast<int>(size), &w, &h, &n, channels);
  if (pixels == nullptr) {
    const char* reason = stbi_failure_reason();
    const std::string data_problem = format == "PNG" ? png_image_data_problem(data, size) : "";
    throw Error(str_cat("load_image: '", name, "' is a damaged ", format, ": ",
                        stb_gave_a_reason(reason, format) ? printable(reason)
                        : !data_problem.empty()           ? data_problem
                                                          : str_cat("its structure checks out (", size, " bytes, ", dims.width, "x", dims.height,
                                      " pixels declared) but stb_image could not decode it and gave no reason; it "
                                      "starts with ", hex_bytes(data, std::min<size_t>(size, 16)))));
  }
  Image img;
  img.width = w;
  img.height = h;
  img.channels = channels;
  img.pixels.assign(pixels, pixels + static_cast<size_t>(w) * h * channels);
  stbi_image_free(pixels);
  return img;
}

Image load_image(const std::string& path, int channels) {
  const std::vector<uint8_t> bytes = read_regular_file(path, "load_image", kMaxImageFileBytes);
  return decode_image(bytes.data(), bytes.size(), path, channels);
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
