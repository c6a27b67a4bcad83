// examples/data/font_file.cpp — checking a TrueType font file before stb_truetype reads it
// (examples/data/font_file.h).
//
// The checks follow stb_truetype 1.26 (stb_truetype.h): stbtt_GetFontOffsetForIndex and stbtt_InitFont
// (the header, the table directory, the first table of each tag, the last Unicode cmap subtable),
// stbtt_FindGlyphIndex (replayed below with every read checked), stbtt_ScaleForMappingEmToPixels
// (unitsPerEm), and stbtt_GetGlyphBitmap: the glyph's box from its header (the bitmap's size), then
// stbtt__GetGlyphShapeTT (contours, flags, coordinates; composite glyphs recursively). Offsets are
// computed in uint64_t here, so no check can wrap around.
#include "examples/data/font_file.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "core/error.h"
#include "nn/files.h"

namespace minidl {

namespace {

uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
int16_t be16s(const uint8_t* p) { return static_cast<int16_t>(be16(p)); }
uint32_t be32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 | static_cast<uint32_t>(p[2]) << 8 |
         static_cast<uint32_t>(p[3]);
}

// A table tag (or any 4 bytes) as text: 'glyf', with bytes outside printable ASCII as \xNN.
std::string tag_text(const uint8_t* p) {
  std::string out = "'";
  for (int i = 0; i < 4; ++i) {
    if (p[i] >= ' ' && p[i] <= '~') {
      out += static_cast<char>(p[i]);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", p[i]);
      out += buf;
    }
  }
  return out + "'";
}

std::string hex4(const uint8_t* p) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%02x %02x %02x %02x", p[0], p[1], p[2], p[3]);
  return buf;
}

// A character for messages: 'A', or U+0001 when not printable.
std::string char_text(uint32_t cp) {
  if (cp > ' ' && cp <= '~') return str_cat("'", static_cast<char>(cp), "'");
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", cp);
  return buf;
}

// The sfnt versions stb_truetype accepts as one font (stbtt__isfont).
bool is_sfnt(const uint8_t* p) {
  auto tag = [p](const char* t) { return p[0] == t[0] && p[1] == t[1] && p[2] == t[2] && p[3] == t[3]; };
  return (p[0] == '1' && p[1] == 0 && p[2] == 0 && p[3] == 0) || tag("typ1") || tag("OTTO") ||
         (p[0] == 0 && p[1] == 1 && p[2] == 0 && p[3] == 0) || tag("true");
}

struct Table {
  uint64_t offset = 0, length = 0;
  bool present = false;
  uint64_t end() const { return offset + length; }
};

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
  uint32_t glyph_index(uint32_t cp) const {
    const uint64_t m = index_map_;
    switch (format_) {
      case 0: {
        const int32_t bytes = u16(m + 2, cp);
        if (static_cast<int64_t>(cp) < bytes - 6) return u8(m + 6 + cp, cp);
        return 0;
      }
      case 6: {
        const uint32_t first = u16(m + 6, cp), count = u16(m + 8, cp);
        if (cp >= first && cp < first + count) return u16(m + 10 + uint64_t(cp - first) * 2, cp);
        return 0;
      }
      case 4: return format4_glyph(cp);
      default: return format12_glyph(cp);  // 12 or 13
    }
  }

  // Each character's glyph (and, for composite glyphs, their components) as stb_truetype draws it.
  void check_characters(const std::string& characters) {
    for (unsigned char c : characters) {
      const uint32_t glyph = glyph_index(c);
      if (glyph == 0) continue;  // not in the font: the caller reports it when drawing
      if (glyph >= num_glyphs_)
        fail(str_cat("its character map sends ", char_text(c), " to glyph ", glyph, ", but table 'maxp' says the font has ",
                     num_glyphs_, " glyphs"));
      check_glyph(glyph, 0);
    }
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw Error(str_cat(who_, " '", name_, "': ", problem));
  }
  std::string truncated(const std::string& what, uint64_t end) const {
    return str_cat("truncated: ", what, " ends at byte ", end, " of a ", n_, "-byte file");
  }

  // ---------------------------------------------------------------- header and tables
  void check_header() {
    if (n_ == 0) fail("the file is empty, not a TrueType font");
    if (n_ < 12) fail(truncated("the 12-byte font header", 12));
    if (n_ > kMaxFontFileBytes) fail(str_cat("it has ", n_, " bytes, more than the ", kMaxFontFileBytes, " this reader accepts"));
    if (d_[0] == 't' && d_[1] == 't' && d_[2] == 'c' && d_[3] == 'f') {  // a collection: the first font is used
      if (n_ < 16) fail(truncated("the 16-byte collection header", 16));
      const uint32_t version = be32(d_ + 4);
      if (version != 0x00010000u && version != 0x00020000u)
        fail(str_cat("a font collection of unknown version (bytes 4-7: ", hex4(d_ + 4), "; 1.0 or 2.0 expected)"));
      if (static_cast<int32_t>(be32(d_ + 8)) < 1) fail("a font collection that holds no font");
      fontstart_ = be32(d_ + 12);
      if (fontstart_ + 12 > n_) fail(truncated(str_cat("the first font of the collection (at byte ", fontstart_, ")"),
                                               fontstart_ + 12));
      if (!is_sfnt(d_ + fontstart_))
        fail(str_cat("the first font of the collection (at byte ", fontstart_, ") is not a TrueType font: it starts with ",
                     hex4(d_ + fontstart_)));
    } else if (!is_sfnt(d_)) {
      fail(str_cat("not a TrueType font: it starts with ", hex4(d_),
                   " (a TrueType font starts with 00 01 00 00 or 'true', a collection with 'ttcf')"));
    }
  }

  void check_directory() {
    const uint32_t count = be16(d_ + fontstart_ + 4);
    if (count == 0) fail("its table directory is empty");
    directory_end_ = fontstart_ + 12 + 16 * uint64_t(count);
    if (directory_end_ > n_) fail(truncated(str_cat("the table directory (", count, " tables)"), directory_end_));
    for (uint32_t i = 0; i < count; ++i) {
      const uint8_t* record = d_ + fontstart_ + 12 + 16 * uint64_t(i);
      Table t{be32(record + 8), be32(record + 12), true};
      if (t.end() > n_) fail(truncated(str_cat("table ", tag_text(record)), t.end()));
      // stb_truetype takes a table at offset 0 for a missing one; no table overlaps the header anyway.
      if (t.length > 0 && (t.offset < 12 || (t.offset < directory_end_ && t.end() > fontstart_)))
        fail(str_cat("table ", tag_text(record), " starts at byte ", t.offset, ", inside the font header and table directory"));
      const std::string tag(reinterpret_cast<const char*>(record), 4);
      tables_.emplace(tag, t);  // the first of a tag counts, as in stb_truetype
    }
  }

  Table table(const char* tag) const {
    auto it = tables_.find(tag);
    return it == tables_.end() ? Table{} : it->second;
  }
  Table required(const char* tag, uint64_t min_length, const char* fields) const {
    const Table t = table(tag);
    if (!t.present) fail(str_cat("it has no '", tag, "' table, which every TrueType font has"));
    if (t.offset == 0) fail(str_cat("table '", tag, "' is at byte 0 (stb_truetype takes that for a missing table)"));
    if (t.length < min_length)
      fail(str_cat("table '", tag, "' has ", t.length, " bytes, fewer than the ", min_length, " of ", fields));
    return t;
  }

  void check_tables() {
    if (!table("glyf").present) {
      if (table("CFF ").present || table("CFF2").present)
        fail("it has PostScript (CFF) outlines, which this reader does not accept; use a font with TrueType "
             "outlines (a 'glyf' table, usually a .ttf file)");
      fail("it has no 'glyf' table (the glyph outlines of a TrueType font)");
    }
    glyf_ = required("glyf", 0, "");
    head_ = required("head", 54, "its fixed fields");
    units_per_em_ = be16(d_ + head_.offset + 18);
    if (units_per_em_ < 16 || units_per_em_ > 16384)
      fail(str_cat("table 'head' gives unitsPerEm ", units_per_em_, "; it must be 16 to 16384"));
    loc_format_ = be16(d_ + head_.offset + 50);
    if (loc_format_ > 1)
      fail(str_cat("table 'head' gives indexToLocFormat ", loc_format_, "; it must be 0 (short) or 1 (long)"));
    const Table maxp = required("maxp", 6, "its glyph count");
    num_glyphs_ = be16(d_ + maxp.offset + 4);
    if (num_glyphs_ == 0) fail("table 'maxp' says the font has no glyphs");

    const Table hhea = required("hhea", 36, "its fixed fields");
    const uint32_t metrics = be16(d_ + hhea.offset + 34);
    if (metrics == 0 || metrics > num_glyphs_)
      fail(str_cat("table 'hhea' gives numberOfHMetrics ", metrics, "; it must be 1 to the glyph count, ", num_glyphs_));
    const uint64_t hmtx_needed = 4 * uint64_t(metrics) + 2 * uint64_t(num_glyphs_ - metrics);
    const Table hmtx = required("hmtx", 0, "");
    if (hmtx.length < hmtx_needed)
      fail(str_cat("table 'hmtx' has ", hmtx.length, " bytes, fewer than the ", hmtx_needed, " that ", metrics,
                   " metrics (hhea) for ", num_glyphs_, " glyphs (maxp) need"));

    const uint64_t entry = loc_format_ == 0 ? 2 : 4;
    loca_ = required("loca", 0, "");
    if (loca_.length < (num_glyphs_ + 1) * entry)
      fail(str_cat("table 'loca' has ", loca_.length, " bytes, fewer than the ", (num_glyphs_ + 1) * entry, " that ",
                   num_glyphs_, " glyphs (maxp) need in the ", loc_format_ == 0 ? "short" : "long",
                   " format (head's indexToLocFormat)"));
    for (uint32_t g = 0; g <= num_glyphs_; ++g)
      if (glyph_offset(g) > glyf_.length)
        fail(str_cat("table 'loca' puts glyph ", g, " at byte ", glyph_offset(g), " of table 'glyf', which has ",
                     glyf_.length, " bytes"));
    cmap_ = required("cmap", 4, "its header");
  }

  // Entry g of loca: where glyph g starts (and glyph g - 1 ends), from the start of glyf.
  uint64_t glyph_offset(uint32_t g) const {
    const uint8_t* p = d_ + loca_.offset;
    return loc_format_ == 0 ? 2 * uint64_t(be16(p + 2 * uint64_t(g))) : be32(p + 4 * uint64_t(g));
  }

  // ---------------------------------------------------------------- the character map
  void choose_cmap_subtable() {
    const uint32_t records = be16(d_ + cmap_.offset + 2);
    if (4 + 8 * uint64_t(records) > cmap_.length)
      fail(str_cat("table 'cmap' lists ", records, " subtables, which do not fit in its ", cmap_.length, " bytes"));
    uint64_t chosen = 0;
    for (uint32_t i = 0; i < records; ++i) {  // the last Unicode subtable wins, as in stbtt_InitFont
      const uint8_t* r = d_ + cmap_.offset + 4 + 8 * uint64_t(i);
      const uint16_t platform = be16(r), encoding = be16(r + 2);
      if ((platform == 3 && (encoding == 1 || encoding == 10)) || platform == 0) chosen = be32(r + 4) + uint64_t(1);
    }
    if (chosen == 0) fail("its character map has no Unicode subtable (platform 0, or 3 with encoding 1 or 10)");
    const uint64_t offset = chosen - 1;
    if (offset + 2 > cmap_.length)
      fail(str_cat("its Unicode character map starts at byte ", offset, " of table 'cmap', which has ", cmap_.length,
                   " bytes"));
    index_map_ = cmap_.offset + offset;
    format_ = be16(d_ + index_map_);
    const uint64_t room = cmap_.end() - index_map_;
    uint64_t needed = 0;
    switch (format_) {
      case 0: needed = 6; break;
      case 6: needed = room >= 10 ? 10 + 2 * uint64_t(be16(d_ + index_map_ + 8)) : 10; break;
      case 4: needed = room >= 14 ? 16 + 8 * uint64_t(be16(d_ + index_map_ + 6) >> 1) : 14; break;
      case 12:
      case 13: needed = room >= 16 ? 16 + 12 * uint64_t(be32(d_ + index_map_ + 12)) : 16; break;
      default:
        fail(str_cat("its Unicode character map has format ", format_,
                     ", which stb_truetype cannot read (it reads formats 0, 4, 6, 12 and 13)"));
    }
    if (needed > room)
      fail(str_cat("its Unicode character map (format ", format_, ") needs ", needed, " bytes, but only ", room,
                   " remain in table 'cmap'"));
  }

  // Reads inside table 'cmap' during the lookup of cp.
  uint64_t in_cmap(uint64_t at, uint64_t size, uint32_t cp) const {
    if (at < cmap_.offset || at + size > cmap_.end())
      fail(str_cat("its character map (format ", format_, ") sends the lookup of ", char_text(cp),
                   " outside table 'cmap' (to byte ", at, " of the file; the table is bytes ", cmap_.offset, " to ",
                   cmap_.end(), ")"));
    return at;
  }
  uint8_t u8(uint64_t at, uint32_t cp) const { return d_[in_cmap(at, 1, cp)]; }
  uint16_t u16(uint64_t at, uint32_t cp) const { return be16(d_ + in_cmap(at, 2, cp)); }
  uint32_t u32(uint64_t at, uint32_t cp) const { return be32(d_ + in_cmap(at, 4, cp)); }

  // stbtt_FindGlyphIndex's format 4 (segments of code points, binary search as it does it, in its types).
  uint32_t format4_glyph(uint32_t cp) const {
    const uint32_t m = static_cast<uint32_t>(index_map_);
    const uint16_t segcount = u16(m + 6, cp) >> 1;
    uint16_t search_range = u16(m + 8, cp) >> 1;
    uint16_t entry_selector = u16(m + 10, cp);
    const uint16_t range_shift = u16(m + 12, cp) >> 1;
    const uint32_t end_count = m + 14;
    uint32_t search = end_count;
    if (cp > 0xffff) return 0;
    if (cp >= u16(search + range_shift * 2u, cp)) search += range_shift * 2u;
    search -= 2;
    while (entry_selector) {
      search_range >>= 1;
      const uint16_t end = u16(uint64_t(search) + search_range * 2u, cp);
      if (cp > end) search += search_range * 2u;
      --entry_selector;
    }
    search += 2;
    const uint16_t item = static_cast<uint16_t>((search - end_count) >> 1);
    const uint16_t start = u16(uint64_t(m) + 14 + segcount * 2u + 2 + 2u * item, cp);
    const uint16_t last = u16(uint64_t(end_count) + 2u * item, cp);
    if (cp < start || cp > last) return 0;
    const uint16_t offset = u16(uint64_t(m) + 14 + segcount * 6u + 2 + 2u * item, cp);
    if (offset == 0) {
      const int16_t delta = static_cast<int16_t>(u16(uint64_t(m) + 14 + segcount * 4u + 2 + 2u * item, cp));
      return static_cast<uint16_t>(cp + delta);
    }
    return u16(uint64_t(offset) + (cp - start) * 2u + m + 14 + segcount * 6u + 2 + 2u * item, cp);
  }

  // stbtt_FindGlyphIndex's formats 12 and 13 (groups of code points; 13 maps a group to one glyph).
  uint32_t format12_glyph(uint32_t cp) const {
    const uint64_t m = index_map_;
    const uint32_t groups = u32(m + 12, cp);
    int64_t low = 0, high = static_cast<int32_t>(groups);
    while (low < high) {
      const int64_t mid = low + ((high - low) >> 1);
      const uint32_t start_char = u32(m + 16 + mid * 12, cp), end_char = u32(m + 16 + mid * 12 + 4, cp);
      if (cp < start_char) {
        high = mid;
      } else if (cp > end_char) {
        low = mid + 1;
      } else {
        const uint32_t start_glyph = u32(m + 16 + mid * 12 + 8, cp);
        return format_ == 12 ? start_glyph + cp - start_char : start_glyph;
      }
    }
    return 0;
  }

  // ---------------------------------------------------------------- glyphs
  // What drawing a glyph costs stb_truetype: its components once expanded (itself included), the
  // vertices it allocates (points + 2 per contour, summed over them), and how deep its components nest.
  struct Expansion {
    int components = 1;
    uint64_t vertices = 0;
    int depth = 0;
  };
  static constexpr uint64_t kMaxVertices = uint64_t(1) << 17;

  Expansion check_glyph(uint32_t g, int depth) {
    if (depth > kMaxComponentDepth)
      fail(str_cat("its composite glyphs nest more than ", kMaxComponentDepth, " deep (glyph ", g,
                   " is reached through itself?)"));
    if (auto it = checked_.find(g); it != checked_.end()) {
      if (depth + it->second.depth > kMaxComponentDepth)
        fail(str_cat("its composite glyphs nest more than ", kMaxComponentDepth, " deep (through glyph ", g, ")"));
      return it->second;
    }
    const uint64_t start = glyph_offset(g), end = glyph_offset(g + 1);
    Expansion e;
    if (start == end) return checked_[g] = e;  // an empty glyph (a space)
    if (start > end)
      fail(str_cat("table 'loca' ends glyph ", g, " (byte ", end, " of 'glyf') before it starts (byte ", start, ")"));
    if (end - start < 10)
      fail(str_cat("glyph ", g, " has ", end - start, " bytes, fewer than the 10 of a glyph header"));
    const uint64_t base = glyf_.offset + start, limit = glyf_.offset + end;
    const int contours = be16s(d_ + base);
    const int x_min = be16s(d_ + base + 2), y_min = be16s(d_ + base + 4);
    const int x_max = be16s(d_ + base + 6), y_max = be16s(d_ + base + 8);
    const int64_t max_extent = int64_t(kMaxGlyphEms) * units_per_em_;
    if (x_min > x_max || y_min > y_max || x_max - x_min > max_extent || y_max - y_min > max_extent)
      fail(str_cat("glyph ", g, " has the box (", x_min, ", ", y_min, ") to (", x_max, ", ", y_max,
                   "); a glyph box is at most ", kMaxGlyphEms, " em (", max_extent, " units) wide and high"));
    if (contours > 0) {
      e.vertices = check_simple_glyph(g, base, limit, contours);
    } else if (contours < 0) {
      e = check_composite_glyph(g, base, limit, depth);
    }
    return checked_[g] = e;
  }

  // Contours' end points, instructions, flags (a flag with bit 3 set is repeated as many times as the
  // next byte says), then x and y coordinates: 1 byte when bit 1 (x) or 2 (y) is set, none when bit 4
  // (x) or 5 (y) is set instead (same as the previous point), else 2 bytes. Returns stb's vertex bound.
  uint64_t check_simple_glyph(uint32_t g, uint64_t base, uint64_t limit, int contours) {
    const uint64_t glyph_bytes = limit - base;
    uint64_t p = base + 10;
    if (p + 2 * uint64_t(contours) + 2 > limit)
      fail(str_cat("glyph ", g, " has ", glyph_bytes, " bytes, too few for the end points of its ", contours,
                   " contours"));
    std::vector<uint32_t> ends(contours);
    for (int c = 0; c < contours; ++c) {
      ends[c] = be16(d_ + p + 2 * uint64_t(c));
      if (c > 0 && ends[c] <= ends[c - 1])
        fail(str_cat("glyph ", g, "'s contour ", c, " ends at point ", ends[c], ", not after contour ", c - 1,
                     "'s end (", ends[c - 1], ")"));
    }
    const uint32_t points = ends.back() + 1;
    const uint64_t instructions = be16(d_ + p + 2 * uint64_t(contours));
    p += 2 * uint64_t(contours) + 2 + instructions;
    if (p > limit)
      fail(str_cat("glyph ", g, " has ", glyph_bytes, " bytes, too few for its ", instructions, " bytes of instructions"));
    const std::string cut = str_cat("glyph ", g, " has ", glyph_bytes, " bytes, too few for the flags and coordinates of its ",
                                    points, " points (a damaged or cut glyph)");
    std::vector<uint8_t> flags(points);
    uint8_t flag = 0, repeat = 0;
    for (uint32_t i = 0; i < points; ++i) {
      if (repeat == 0) {
        if (p >= limit) fail(cut);
        flag = d_[p++];
        if (flag & 8) {
          if (p >= limit) fail(cut);
          repeat = d_[p++];
        }
      } else {
        --repeat;
      }
      flags[i] = flag;
    }
    uint64_t coordinate_bytes = 0;
    for (uint8_t f : flags) {
      coordinate_bytes += (f & 2) ? 1 : (f & 16) ? 0 : 2;
      coordinate_bytes += (f & 4) ? 1 : (f & 32) ? 0 : 2;
    }
    if (p + coordinate_bytes > limit) fail(cut);
    for (int c = 0; c < contours; ++c) {
      const uint32_t first = c == 0 ? 0 : ends[c - 1] + 1;
      if (first == ends[c] && !(flags[first] & 1))
        fail(str_cat("glyph ", g, "'s contour ", c, " is a single off-curve point, which stb_truetype cannot draw"));
    }
    return points + 2 * uint64_t(contours);
  }

  // Components: flags (uint16), glyph index (uint16), the offset (2 bytes, or 4 with bit 0), then a scale
  // (2 bytes with bit 3), an x and a y scale (4 with bit 6) or a 2x2 matrix (8 with bit 7); bit 5: more
  // components follow. stb_truetype reads the offset as x/y (bit 1) only.
  Expansion check_composite_glyph(uint32_t g, uint64_t base, uint64_t limit, int depth) {
    Expansion e;
    e.components = 1;
    uint64_t p = base + 10;
    for (int k = 0, more = 1; more; ++k) {
      const char* cut = "bytes, too few for its components (a damaged or cut glyph)";
      if (p + 4 > limit) fail(str_cat("glyph ", g, " has ", limit - base, " ", cut));
      const uint16_t flags = be16(d_ + p), component = be16(d_ + p + 2);
      p += 4 + ((flags & 1) ? 4 : 2);
      p += (flags & 8) ? 2 : (flags & 64) ? 4 : (flags & 128) ? 8 : 0;
      if (p > limit) fail(str_cat("glyph ", g, " has ", limit - base, " ", cut));
      if (!(flags & 2))
        fail(str_cat("glyph ", g, "'s component ", k, " is placed by matching points, which stb_truetype cannot do"));
      if (component >= num_glyphs_)
        fail(str_cat("glyph ", g, "'s component ", k, " is glyph ", component, ", but table 'maxp' says the font has ",
                     num_glyphs_, " glyphs"));
      const Expansion sub = check_glyph(component, depth + 1);
      e.components += sub.components;
      e.vertices += sub.vertices;
      e.depth = std::max(e.depth, sub.depth + 1);
      if (e.components > kMaxComponents || e.vertices > kMaxVertices)
        fail(str_cat("glyph ", g, " expands to more than ", kMaxComponents, " components or ", kMaxVertices,
                     " points (its components repeat each other?)"));
      more = flags & 32;
    }
    return e;
  }

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

}  // namespace

void check_truetype_font(const uint8_t* data, size_t size, const std::string& name, const std::string& characters,
                         const std::string& who) {
  FontChecker checker(data, size, name, who);
  checker.check_structure();
  checker.check_characters(characters);
}

std::vector<uint8_t> read_truetype_font(const std::string& path, const std::string& characters,
                                        const std::string& who) {
  std::vector<uint8_t> bytes = read_regular_file(path, who, kMaxFontFileBytes);
  check_truetype_font(bytes.data(), bytes.size(), path, characters, who);
  return bytes;
}

uint32_t truetype_glyph_index(const uint8_t* data, size_t size, uint32_t codepoint) {
  FontChecker checker(data, size, "", "truetype_glyph_index");
  checker.check_structure();
  return checker.glyph_index(codepoint);
}

}  // namespace minidl
