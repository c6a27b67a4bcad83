// tests/test_image.cpp — reading images: PNG, JPEG and BMP round trips, and every way a file can be
// wrong, each a one-line error naming the file: missing (with the system's reason), a folder, not an
// image, a PNG cut before IEND, a damaged chunk name, a failed CRC, a header claiming huge dimensions, a
// BMP or JPEG cut short, and the files stb_image refuses without a reason (a PNG's corrupt zlib stream, a
// JPEG scan naming an undefined component or a cut quantization table, a BMP info header of an unread
// size). (JPEG Huffman tables: tests/fixtures/fuzz/image, replayed by test_fuzz_regressions.)
#include <stb_image_write.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "nn/image.h"

using namespace minidl;

namespace {

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/minidl_test_image_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string file(const std::string& name) const { return path + "/" + name; }
  std::string path;
};

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::vector<uint8_t> out;
  int c;
  while ((c = std::fgetc(f)) != EOF) out.push_back(static_cast<uint8_t>(c));
  std::fclose(f);
  return out;
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  if (!bytes.empty()) std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

// A w x h RGB test pattern.
Image pattern(int w, int h) {
  Image img;
  img.width = w;
  img.height = h;
  img.channels = 3;
  img.pixels.resize(static_cast<size_t>(w) * h * 3);
  for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = static_cast<uint8_t>(i * 37 % 251);
  return img;
}

void put_be32(std::vector<uint8_t>& b, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(v >> shift));
}

// One PNG chunk with a correct CRC.
void put_chunk(std::vector<uint8_t>& b, const char* type, const std::vector<uint8_t>& data) {
  put_be32(b, static_cast<uint32_t>(data.size()));
  const size_t at = b.size();
  b.insert(b.end(), type, type + 4);
  b.insert(b.end(), data.begin(), data.end());
  put_be32(b, static_cast<uint32_t>(crc32_z(0L, b.data() + at, 4 + data.size())));
}

// A structurally sound PNG whose IHDR claims w x h RGB pixels (with no pixel data worth the name).
std::vector<uint8_t> png_claiming(uint32_t w, uint32_t h) {
  std::vector<uint8_t> b = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};
  std::vector<uint8_t> ihdr;
  put_be32(ihdr, w);
  put_be32(ihdr, h);
  for (uint8_t v : {8, 2, 0, 0, 0}) ihdr.push_back(v);
  put_chunk(b, "IHDR", ihdr);
  put_chunk(b, "IDAT", {0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01});
  put_chunk(b, "IEND", {});
  return b;
}

size_t find(const std::vector<uint8_t>& b, const std::string& s) {
  return static_cast<size_t>(std::search(b.begin(), b.end(), s.begin(), s.end()) - b.begin());
}

bool one_printable_line(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= ' ' && c <= '~'; });
}

std::string error_of(const std::string& path) {
  try {
    load_image(path, 3);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("image: PNG, JPEG and BMP load with their size and pixels", "[image]") {
  TempDir dir;
  const Image img = pattern(5, 3);
  save_png(dir.file("a.png"), img);
  REQUIRE(stbi_write_bmp(dir.file("a.bmp").c_str(), 5, 3, 3, img.pixels.data()) != 0);
  REQUIRE(stbi_write_jpg(dir.file("a.jpg").c_str(), 5, 3, 3, img.pixels.data(), 95) != 0);
  for (const char* name : {"a.png", "a.bmp", "a.jpg"}) {
    INFO(name);
    const Image back = load_image(dir.file(name), 3);
    CHECK(back.width == 5);
    CHECK(back.height == 3);
    if (std::string(name) != "a.jpg") CHECK(back.pixels == img.pixels);  // lossless formats
    CHECK(load_image(dir.file(name), 1).pixels.size() == 15);
  }
  const std::vector<uint8_t> bytes = read_bytes(dir.file("a.png"));
  CHECK(decode_image(bytes.data(), bytes.size(), "mem", 3).pixels == img.pixels);
}

TEST_CASE("image: a missing file or a folder says so, with the system's reason", "[image]") {
  TempDir dir;
  CHECK_THROWS_WITH(load_image(dir.file("missing.png"), 3),
                    Catch::Contains("cannot open '" + dir.file("missing.png") + "': No such file or directory"));
  REQUIRE(::mkdir(dir.file("folder.png").c_str(), 0755) == 0);
  CHECK_THROWS_WITH(load_image(dir.file("folder.png"), 3), Catch::Contains("folder.png' is a directory, not a file"));
  write_bytes(dir.file("empty.png"), {});
  CHECK_THROWS_WITH(load_image(dir.file("empty.png"), 3), Catch::Contains("empty.png' is empty"));
  write_bytes(dir.file("text.png"), {'h', 'e', 'l', 'l', 'o'});
  CHECK_THROWS_WITH(load_image(dir.file("text.png"), 3),
                    Catch::Contains("is not a PNG, JPEG or BMP file (it starts with 68 65 6c 6c 6f)"));
  write_bytes(dir.file("anim.gif"), {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0, 0, 0, ';'});
  CHECK_THROWS_WITH(load_image(dir.file("anim.gif"), 3), Catch::Contains("is not a PNG, JPEG or BMP file"));
}

TEST_CASE("image: a damaged PNG gets a reason: cut before IEND, damaged chunk name, failed CRC", "[image]") {
  TempDir dir;
  save_png(dir.file("a.png"), pattern(16, 16));
  const std::vector<uint8_t> good = read_bytes(dir.file("a.png"));
  const size_t iend = find(good, "IEND"), idat = find(good, "IDAT");
  REQUIRE(iend < good.size());
  REQUIRE(idat < good.size());

  // Without IEND (stb's own reason was an empty string).
  write_bytes(dir.file("noiend.png"), std::vector<uint8_t>(good.begin(), good.begin() + (iend - 4)));
  std::string e = error_of(dir.file("noiend.png"));
  CHECK_THAT(e, Catch::Contains("noiend.png' is a damaged PNG: it ends after") && Catch::Contains("without the IEND chunk"));
  CHECK(one_printable_line(e));
  // Cut inside the image data.
  write_bytes(dir.file("cut.png"), std::vector<uint8_t>(good.begin(), good.begin() + (idat + 10)));
  CHECK_THAT(error_of(dir.file("cut.png")), Catch::Contains("chunk 'IDAT' at offset") && Catch::Contains("truncated"));

  // A byte of a chunk name damaged (stb printed it raw, as a control character).
  std::vector<uint8_t> b = good;
  b[idat + 1] = 0x01;
  write_bytes(dir.file("badname.png"), b);
  e = error_of(dir.file("badname.png"));
  CHECK_THAT(e, Catch::Contains("has a damaged name (bytes 49 01 41 54"));
  CHECK(one_printable_line(e));

  // A flipped data bit: the CRC catches it.
  b = good;
  b[idat + 6] ^= 0x20;
  write_bytes(dir.file("flipped.png"), b);
  CHECK_THAT(error_of(dir.file("flipped.png")), Catch::Contains("chunk 'IDAT' at offset") &&
                                                    Catch::Contains("fails its CRC check"));
}

TEST_CASE("image: a header claiming huge dimensions is refused before decoding", "[image]") {
  TempDir dir;
  write_bytes(dir.file("huge.png"), png_claiming(60000, 60000));
  CHECK_THAT(error_of(dir.file("huge.png")),
             Catch::Contains("huge.png' is 60000x60000 pixels, more than the 33554432 this reader accepts"));
  write_bytes(dir.file("huger.png"), png_claiming(1u << 20, 1));
  CHECK_THAT(error_of(dir.file("huger.png")), Catch::Contains("huger.png' is a damaged PNG"));
  // A small image with the same structure decodes its (missing) data to an error, not a crash.
  write_bytes(dir.file("small.png"), png_claiming(4, 4));
  CHECK_THAT(error_of(dir.file("small.png")), Catch::Contains("small.png' is a damaged PNG"));
}

TEST_CASE("image: a BMP or JPEG cut short is an error, not an image padded with black", "[image]") {
  TempDir dir;
  const Image img = pattern(5, 3);
  REQUIRE(stbi_write_bmp(dir.file("a.bmp").c_str(), 5, 3, 3, img.pixels.data()) != 0);
  const std::vector<uint8_t> bmp = read_bytes(dir.file("a.bmp"));
  write_bytes(dir.file("cut.bmp"), std::vector<uint8_t>(bmp.begin(), bmp.end() - 10));
  CHECK_THAT(error_of(dir.file("cut.bmp")),
             Catch::Contains("cut.bmp' is a damaged BMP: its 5x3 pixels need 16 x 3 bytes from offset 54, the file has "
                             "92 bytes (truncated?)"));
  REQUIRE(stbi_write_jpg(dir.file("a.jpg").c_str(), 5, 3, 3, img.pixels.data(), 90) != 0);
  const std::vector<uint8_t> jpg = read_bytes(dir.file("a.jpg"));
  write_bytes(dir.file("cut.jpg"), std::vector<uint8_t>(jpg.begin(), jpg.end() - 2));  // without ff d9
  CHECK_THAT(error_of(dir.file("cut.jpg")), Catch::Contains("cut.jpg' is a damaged JPEG: it ends after") &&
                                                Catch::Contains("without the end-of-image marker"));
}

// Issue 23, item 12: where stb_image fails without a reason it printed "stb_image gave no reason" (or,
// for a JPEG or BMP, the reason its PNG test left behind: "bad png sig"). Each of these now gets its own.
TEST_CASE("image: files stb_image refuses without saying why get a reason", "[image]") {
  TempDir dir;
  // A PNG whose zlib stream has a block of the invalid type 3: zlib names it.
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};
  put_chunk(png, "IHDR", {0, 0, 0, 5, 0, 0, 0, 2, 8, 0, 0, 0, 0});
  put_chunk(png, "IDAT", {0x78, 0x5e, 0x06, 0, 0, 0, 0, 0});
  put_chunk(png, "IEND", {});
  write_bytes(dir.file("deflate.png"), png);
  std::string message;
  std::thread fresh([&] { message = error_of(dir.file("deflate.png")); });  // a thread stb never failed in
  fresh.join();
  CHECK(message == "load_image: '" + dir.file("deflate.png") +
                       "' is a damaged PNG: its image data (IDAT, 8 bytes) is corrupt: invalid block type (zlib)");

  // A JPEG scan naming a component its frame header does not define.
  const Image img = pattern(5, 3);
  REQUIRE(stbi_write_jpg(dir.file("a.jpg").c_str(), 5, 3, 3, img.pixels.data(), 90) != 0);
  const std::vector<uint8_t> jpg = read_bytes(dir.file("a.jpg"));
  std::vector<uint8_t> bad = jpg;
  auto marker = [](const std::vector<uint8_t>& b, uint8_t m) {
    for (size_t i = 0; i + 1 < b.size(); ++i)
      if (b[i] == 0xff && b[i + 1] == m) return i;
    return b.size();
  };
  const size_t sos = marker(bad, 0xda);
  REQUIRE(sos + 6 < bad.size());
  bad[sos + 5] = 0x77;  // the first component's id: 1 -> 119
  write_bytes(dir.file("scan.jpg"), bad);
  CHECK(error_of(dir.file("scan.jpg")) ==
        "load_image: '" + dir.file("scan.jpg") + "' is a damaged JPEG: the scan at offset " + std::to_string(sos) +
            " names component 119, which the frame header (SOF) does not define (it defines 1, 2, 3)");

  // A JPEG quantization table declared 16-bit (129 bytes) where its segment holds an 8-bit one (65).
  bad = jpg;
  const size_t dqt = marker(bad, 0xdb);
  REQUIRE(dqt + 4 + 65 < bad.size());
  REQUIRE((bad[dqt + 2] << 8 | bad[dqt + 3]) == 2 + 2 * 65);  // stb_image_write: both tables in one segment
  bad[dqt + 4 + 65] = 0x11;
  write_bytes(dir.file("dqt.jpg"), bad);
  CHECK(error_of(dir.file("dqt.jpg")) == "load_image: '" + dir.file("dqt.jpg") +
                                             "' is a damaged JPEG: the quantization table segment (DQT) at offset " +
                                             std::to_string(dqt) + " is cut short: its table 1 needs 129 bytes, 65 remain");

  // A BMP info header of a size stb_image does not read.
  REQUIRE(stbi_write_bmp(dir.file("a.bmp").c_str(), 5, 3, 3, img.pixels.data()) != 0);
  bad = read_bytes(dir.file("a.bmp"));
  bad[14] = 41;
  write_bytes(dir.file("info.bmp"), bad);
  CHECK(error_of(dir.file("info.bmp")) == "load_image: '" + dir.file("info.bmp") +
                                              "' is a damaged BMP: its info header has an unknown size (41 bytes; "
                                              "stb_image reads 12, 40, 56, 108 or 124)");
}
