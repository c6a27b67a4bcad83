// examples/data/font_tables.cpp — FontChecker (examples/data/font_checker.h), part 1: the font's header,
// its table directory and the fixed fields of the tables stb_truetype needs, as stbtt_GetFontOffsetForIndex
// and stbtt_InitFont read them (the first table of each tag counts); and the messages every check shares.
#include "examples/data/font_checker.h"

#include <cstdio>

#include "core/error.h"
#include "examples/data/font_file.h"

namespace minidl::font_file {

namespace {

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

// The sfnt versions stb_truetype accepts as one font (stbtt__isfont).
bool is_sfnt(const uint8_t* p) {
  auto tag = [p](const char* t) { return p[0] == t[0] && p[1] == t[1] && p[2] == t[2] && p[3] == t[3]; };
  return (p[0] == '1' && p[1] == 0 && p[2] == 0 && p[3] == 0) || tag("typ1") || tag("OTTO") ||
         (p[0] == 0 && p[1] == 1 && p[2] == 0 && p[3] == 0) || tag("true");
}

}  // namespace

// A character for messages: 'A', or U+0001 when not printable.
std::string char_text(uint32_t cp) {
  if (cp > ' ' && cp <= '~') return str_cat("'", static_cast<char>(cp), "'");
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", cp);
  return buf;
}

void FontChecker::fail(const std::string& problem) const {
  throw Error(str_cat(who_, " '", name_, "': ", problem));
}

std::string FontChecker::truncated(const std::string& what, uint64_t end) const {
  return str_cat("truncated: ", what, " ends at byte ", end, " of a ", n_, "-byte file");
}

void FontChecker::check_header() {
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

void FontChecker::check_directory() {
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

Table FontChecker::table(const char* tag) const {
  auto it = tables_.find(tag);
  return it == tables_.end() ? Table{} : it->second;
}

Table FontChecker::required(const char* tag, uint64_t min_length, const char* fields) const {
  const Table t = table(tag);
  if (!t.present) fail(str_cat("it has no '", tag, "' table, which every TrueType font has"));
  if (t.offset == 0) fail(str_cat("table '", tag, "' is at byte 0 (stb_truetype takes that for a missing table)"));
  if (t.length < min_length)
    fail(str_cat("table '", tag, "' has ", t.length, " bytes, fewer than the ", min_length, " of ", fields));
  return t;
}

void FontChecker::check_tables() {
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
uint64_t FontChecker::glyph_offset(uint32_t g) const {
  const uint8_t* p = d_ + loca_.offset;
  return loc_format_ == 0 ? 2 * uint64_t(be16(p + 2 * uint64_t(g))) : be32(p + 4 * uint64_t(g));
}

}  // namespace minidl::font_file
