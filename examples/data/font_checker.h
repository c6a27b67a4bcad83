// examples/data/font_checker.h — the checker behind examples/data/font_file.h: one object per font file
// that replays, with every read bounds-checked, what stb_truetype 1.26 reads to draw given characters.
//
// Its checks are spread over three files, in the order stb_truetype reads a font:
//   font_tables.cpp   the header, the table directory and the tables' fixed fields (stbtt_InitFont);
//   font_cmap.cpp     the character map: the subtable stbtt_InitFont picks, and stbtt_FindGlyphIndex;
//   font_glyphs.cpp   each character's glyph as stbtt_GetGlyphBitmap parses it, composites recursively.
// Offsets are computed in uint64_t, so no check can wrap around. A failed check throws minidl::Error
// "<who> '<name>': <what is wrong>". Internal to font_file.cpp and those three files.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace minidl::font_file {

// Big-endian reads, as every TrueType field is stored.
inline uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
inline int16_t be16s(const uint8_t* p) { return static_cast<int16_t>(be16(p)); }
inline uint32_t be32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 | static_cast<uint32_t>(p[2]) << 8 |
         static_cast<uint32_t>(p[3]);
}

// A character for messages: 'A', or U+0001 when not printable.
std::string char_text(uint32_t cp);

// One entry of the table directory.
struct Table {
  uint64_t offset = 0, length = 0;
  bool present = false;
  uint64_t end() const { return offset + length; }
};

// The checks of one font in data[0, size): check_structure first, then glyph_index or check_characters.
class FontChecker {
 public:
  FontChecker(const uint8_t* data, size_t size, const std::string& name, const std::string& who)
      : d_(data), n_(size), name_(name), who_(who) {}

  // Everything stbtt_InitFont reads, and the tables' fixed fields; then the chosen cmap subtable's
  // structure.
  void check_structure() {
    check_header();
    check_directory();
    check_tables();
    choose_cmap_subtable();
  }

  // The glyph of `cp`, as stbtt_FindGlyphIndex finds it (every read checked against table 'cmap').
  uint32_t glyph_index(uint32_t cp) const;

  // Each character's glyph (and, for composite glyphs, their components) as stb_truetype draws it.
  void check_characters(const std::string& characters);

 private:
  [[noreturn]] void fail(const std::string& problem) const;
  std::string truncated(const std::string& what, uint64_t end) const;

  // ---------------------------------------------------------------- header and tables (font_tables.cpp)
  void check_header();
  void check_directory();
  Table table(const char* tag) const;
  // The table `tag`, which must be present, not at byte 0, and at least min_length bytes long (`fields`
  // names what those bytes hold, for the message).
  Table required(const char* tag, uint64_t min_length, const char* fields) const;
  void check_tables();
  // Entry g of loca: where glyph g starts (and glyph g - 1 ends), from the start of glyf.
  uint64_t glyph_offset(uint32_t g) const;

  // ---------------------------------------------------------------- the character map (font_cmap.cpp)
  void choose_cmap_subtable();
  // Reads inside table 'cmap' during the lookup of cp.
  uint64_t in_cmap(uint64_t at, uint64_t size, uint32_t cp) const;
  uint8_t u8(uint64_t at, uint32_t cp) const;
  uint16_t u16(uint64_t at, uint32_t cp) const;
  uint32_t u32(uint64_t at, uint32_t cp) const;
  // stbtt_FindGlyphIndex's format 4 (segments of code points, binary search as it does it, in its types).
  uint32_t format4_glyph(uint32_t cp) const;
  // stbtt_FindGlyphIndex's formats 12 and 13 (groups of code points; 13 maps a group to one glyph).
  uint32_t format12_glyph(uint32_t cp) const;

  // ---------------------------------------------------------------- glyphs (font_glyphs.cpp)
  // What drawing a glyph costs stb_truetype: its components once expanded (itself included), the
  // vertices it allocates (points + 2 per contour, summed over them), and how deep its components nest.
  struct Expansion {
    int components = 1;
    uint64_t vertices = 0;
    int depth = 0;
  };
  static constexpr uint64_t kMaxVertices = uint64_t(1) << 17;

  // Glyph g reached `depth` components deep: its loca range, header and box, then its outline.
  Expansion check_glyph(uint32_t g, int depth);
  // A simple glyph's outline; returns stb's vertex bound.
  uint64_t check_simple_glyph(uint32_t g, uint64_t base, uint64_t limit, int contours);
  // A composite glyph's components, each checked as a glyph one level deeper.
  Expansion check_composite_glyph(uint32_t g, uint64_t base, uint64_t limit, int depth);

  const uint8_t* d_;
  uint64_t n_;
  std::string name_, who_;
  uint64_t fontstart_ = 0, directory_end_ = 0;
  std::map<std::string, Table> tables_;
  Table glyf_, head_, loca_, cmap_;
  uint32_t units_per_em_ = 0, loc_format_ = 0, num_glyphs_ = 0;
  uint64_t index_map_ = 0;
  uint16_t format_ = 0;
  std::map<uint32_t, Expansion> checked_;
};

}  // namespace minidl::font_file
