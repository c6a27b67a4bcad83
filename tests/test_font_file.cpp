// tests/test_font_file.cpp — damaged TrueType fonts are refused before stb_truetype reads them
// (examples/data/font_file.h), through the captcha generator's own paths (render_captcha with a font file,
// MINIDL_CAPTCHA_FONT, draw_font_glyphs). Before the checks, these files crashed the generator inside
// stb_truetype (issue 23, item 4). The damaged files are made here from DejaVu Sans; without it the
// cases that need it are skipped with a warning.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "examples/data/captcha_gen.h"
#include "examples/data/font_file.h"
#include "tests/env_scope.h"
#include "tests/skips.h"

using namespace minidl;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("minidl_test_fonts_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::string write(const std::string& name, const std::vector<uint8_t>& bytes) const {
    const fs::path p = path / name;
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return p.string();
  }
};

// DejaVu Sans (Debian's fonts-dejavu-core, `make deps`), or "" when it is not installed.
std::string dejavu_sans() {
  for (const char* p : {"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/dejavu/DejaVuSans.ttf",
                        "/usr/share/fonts/TTF/DejaVuSans.ttf", "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf"})
    if (fs::is_regular_file(p)) return p;
  return "";
}

std::vector<uint8_t> read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }
uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}
void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

// The byte where the table directory's record of `tag` starts (a plain font, not a collection).
size_t record_of(const std::vector<uint8_t>& font, const char* tag) {
  const size_t count = be16(font.data() + 4);
  for (size_t i = 0; i < count; ++i)
    if (std::memcmp(font.data() + 12 + 16 * i, tag, 4) == 0) return 12 + 16 * i;
  FAIL("no table " << tag);
  return 0;
}
uint32_t table_offset(const std::vector<uint8_t>& font, const char* tag) {
  return be32(font.data() + record_of(font, tag) + 8);
}

// Where glyph g's bytes start in the file (long or short loca, as head says).
size_t glyph_start(const std::vector<uint8_t>& font, uint32_t g) {
  const uint8_t* loca = font.data() + table_offset(font, "loca");
  const bool long_loca = be16(font.data() + table_offset(font, "head") + 50) == 1;
  return table_offset(font, "glyf") + (long_loca ? be32(loca + 4 * g) : 2u * be16(loca + 2 * g));
}

std::string render_error(const std::string& font_path) {
  CaptchaOptions o;
  o.fonts = {font_path};
  try {
    render_captcha("AB12", o, 0, 0);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool one_line(const std::string& s) { return s.find('\n') == std::string::npos && !s.empty(); }

}  // namespace

TEST_CASE("font files: a folder, a device, a missing or empty file are named as such", "[font][captcha]") {
  TempDir dir;
  const std::string empty = dir.write("empty.ttf", {});
  CHECK(render_error(empty) == "captcha: font '" + empty + "': the file is empty, not a TrueType font");
  CHECK(render_error(dir.path.string()) == "captcha: font: '" + dir.path.string() + "' is a directory, not a file");
  CHECK(render_error("/dev/zero") == "captcha: font: '/dev/zero' is a character device, not a file");
  CHECK(render_error(dir.path.string() + "/missing.ttf") ==
        "captcha: font: cannot open '" + dir.path.string() + "/missing.ttf': No such file or directory");
  const std::string text = dir.write("notes.ttf", {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '\n', 'x'});
  CHECK(render_error(text) == "captcha: font '" + text +
                                  "': not a TrueType font: it starts with 68 65 6c 6c (a TrueType font starts with "
                                  "00 01 00 00 or 'true', a collection with 'ttcf')");
}

TEST_CASE("font files: every truncation of a real font is refused with one line, without a crash", "[font][captcha]") {
  const std::string path = dejavu_sans();
  if (path.empty()) {
    minidl::testing::skip_test("DejaVu Sans is not installed (fonts-dejavu-core, `make deps`)");
    return;
  }
  const std::vector<uint8_t> font = read(path);
  REQUIRE(font.size() > 100000);
  std::string all;
  for (char c = '!'; c <= '~'; ++c) all += c;
  {  // the whole font is accepted and draws every character
    check_truetype_font(font.data(), font.size(), path, all, "test");
    const std::vector<Image> glyphs = draw_font_glyphs(font, path, all, 30);
    REQUIRE(glyphs.size() == all.size());
    for (const Image& g : glyphs) CHECK(g.width > 2);
  }
  // Every 997 bytes, and 300; the last 3 bytes may be padding after the last table.
  std::vector<size_t> lengths = {300};
  for (size_t n = 0; n + 3 < font.size(); n += 997) lengths.push_back(n);
  for (size_t n : lengths) {
    INFO("the first " << n << " bytes");
    const std::vector<uint8_t> cut(font.begin(), font.begin() + static_cast<std::ptrdiff_t>(n));
    std::string message;
    try {
      draw_font_glyphs(cut, "cut.ttf", all, 30);
    } catch (const Error& e) {
      message = e.what();
    }
    CHECK(one_line(message));
    if (n == 0) {
      CHECK(message == "captcha: font 'cut.ttf': the file is empty, not a TrueType font");
    } else {
      CHECK_THAT(message, Catch::StartsWith("captcha: font 'cut.ttf': truncated: ") &&
                              Catch::EndsWith(" of a " + std::to_string(n) + "-byte file"));
    }
  }
  // The same through a font file, as `captcha gen --font` and MINIDL_CAPTCHA_FONT read it.
  TempDir dir;
  const std::string cut = dir.write("cut.ttf", std::vector<uint8_t>(font.begin(), font.begin() + 50000));
  CHECK_THAT(render_error(cut), Catch::StartsWith("captcha: font '" + cut + "': truncated: table '") &&
                                    Catch::EndsWith(" of a 50000-byte file"));
  const std::string tiny = dir.write("tiny.ttf", std::vector<uint8_t>(font.begin(), font.begin() + 300));
  CHECK(render_error(tiny) == "captcha: font '" + tiny + "': truncated: the table directory (" +
                                  std::to_string(be16(font.data() + 4)) + " tables) ends at byte " +
                                  std::to_string(12 + 16 * be16(font.data() + 4)) + " of a 300-byte file");
  testing::EnvScope env("MINIDL_CAPTCHA_FONT", cut);
  CHECK_THROWS_WITH(find_captcha_font(), Catch::StartsWith("captcha: MINIDL_CAPTCHA_FONT '" + cut + "': truncated: "));
}

TEST_CASE("font files: corrupt offsets, glyphs and character maps are refused, naming the fault", "[font][captcha]") {
  const std::string path = dejavu_sans();
  if (path.empty()) {
    minidl::testing::skip_test("DejaVu Sans is not installed (fonts-dejavu-core, `make deps`)");
    return;
  }
  const std::vector<uint8_t> font = read(path);
  TempDir dir;
  auto refusal = [&](const std::vector<uint8_t>& bytes) {
    const std::string file = dir.write("damaged.ttf", bytes);
    const std::string message = render_error(file);
    CHECK(one_line(message));
    CHECK_THAT(message, Catch::StartsWith("captcha: font '" + file + "': "));
    return message.substr(std::min(message.size(), ("captcha: font '" + file + "': ").size()));
  };
  const uint32_t glyf = table_offset(font, "glyf");

  std::vector<uint8_t> bad = font;  // glyf moved near the end: it runs past the file
  put32(bad.data() + record_of(bad, "glyf") + 8, static_cast<uint32_t>(font.size() - 100));
  const uint32_t glyf_length = be32(font.data() + record_of(font, "glyf") + 12);
  CHECK(refusal(bad) == "truncated: table 'glyf' ends at byte " + std::to_string(font.size() - 100 + glyf_length) +
                            " of a " + std::to_string(font.size()) + "-byte file");

  bad = font;  // a table at offset 0, which stb_truetype takes for a missing table
  put32(bad.data() + record_of(bad, "head") + 8, 0);
  CHECK(refusal(bad) == "table 'head' starts at byte 0, inside the font header and table directory");

  bad = font;  // head's unitsPerEm 0 (stb would divide by it)
  put16(bad.data() + table_offset(bad, "head") + 18, 0);
  CHECK(refusal(bad) == "table 'head' gives unitsPerEm 0; it must be 16 to 16384");

  bad = font;  // indexToLocFormat 2
  put16(bad.data() + table_offset(bad, "head") + 50, 2);
  CHECK(refusal(bad) == "table 'head' gives indexToLocFormat 2; it must be 0 (short) or 1 (long)");

  bad = font;  // maxp claims more glyphs than loca holds
  put16(bad.data() + table_offset(bad, "maxp") + 4, 0xffff);
  CHECK_THAT(refusal(bad), Catch::StartsWith("table 'hmtx' has ") || Catch::StartsWith("table 'loca' has "));

  bad = font;  // numberOfHMetrics beyond hmtx
  put16(bad.data() + table_offset(bad, "hhea") + 34, 0);
  CHECK(refusal(bad) == "table 'hhea' gives numberOfHMetrics 0; it must be 1 to the glyph count, " +
                            std::to_string(be16(font.data() + table_offset(font, "maxp") + 4)));

  // Glyph 'A': its loca entry past the end of glyf; its contour count far beyond its bytes; itself as
  // its own component (stb_truetype would recurse until the stack overflows).
  const uint32_t a = truetype_glyph_index(font.data(), font.size(), 'A');
  REQUIRE(a > 0);
  const bool long_loca = be16(font.data() + table_offset(font, "head") + 50) == 1;
  bad = font;
  if (long_loca)
    put32(bad.data() + table_offset(bad, "loca") + 4 * a, glyf_length + 4);
  else
    put16(bad.data() + table_offset(bad, "loca") + 2 * a, static_cast<uint16_t>((glyf_length + 4) / 2));
  CHECK_THAT(refusal(bad), Catch::StartsWith("table 'loca' puts glyph " + std::to_string(a) + " at byte ") &&
                               Catch::EndsWith("of table 'glyf', which has " + std::to_string(glyf_length) + " bytes"));

  bad = font;
  const size_t a_at = glyph_start(font, a);
  REQUIRE(a_at > glyf);
  put16(bad.data() + a_at, 0x7fff);
  CHECK_THAT(refusal(bad), Catch::StartsWith("glyph " + std::to_string(a) + " has ") &&
                               Catch::EndsWith("too few for the end points of its 32767 contours"));

  bad = font;
  put16(bad.data() + a_at, 0xffff);                           // composite
  put16(bad.data() + a_at + 10, 2 | 1);                       // x/y offsets as words, no more components
  put16(bad.data() + a_at + 12, static_cast<uint16_t>(a));    // the component: A itself
  CHECK(refusal(bad) == "its composite glyphs nest more than 8 deep (glyph " + std::to_string(a) +
                            " is reached through itself?)");

  bad = font;  // the Unicode cmap subtable's offset past the table
  const uint32_t cmap = table_offset(font, "cmap");
  for (uint32_t i = 0; i < be16(font.data() + cmap + 2); ++i) put32(bad.data() + cmap + 4 + 8 * i + 4, 0x00ffffff);
  CHECK_THAT(refusal(bad), Catch::StartsWith("its Unicode character map starts at byte 16777215 of table 'cmap'"));

  // The Unicode map stb_truetype uses (the last one listed: DejaVu Sans has format 4 and format 12 maps)
  // with its segment or group count beyond the table.
  bad = font;
  uint32_t sub = 0;
  for (uint32_t i = 0; i < be16(font.data() + cmap + 2); ++i) {
    const uint16_t platform = be16(font.data() + cmap + 4 + 8 * i), encoding = be16(font.data() + cmap + 6 + 8 * i);
    if (platform == 0 || (platform == 3 && (encoding == 1 || encoding == 10)))
      sub = cmap + be32(font.data() + cmap + 4 + 8 * i + 4);
  }
  const uint16_t format = be16(font.data() + sub);
  REQUIRE((format == 4 || format == 12));
  if (format == 4) put16(bad.data() + sub + 6, 0xfffe);
  if (format == 12) put32(bad.data() + sub + 12, 0x00ffffff);
  CHECK_THAT(refusal(bad), Catch::StartsWith(format == 4 ? "its Unicode character map (format 4) needs 262152 bytes, but only "
                                                         : "its Unicode character map (format 12) needs 201326596 bytes, but only ") &&
                               Catch::EndsWith(" remain in table 'cmap'"));
}
