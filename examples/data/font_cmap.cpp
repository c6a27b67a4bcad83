// examples/data/font_cmap.cpp — FontChecker (examples/data/font_checker.h), part 2: the character map.
// The Unicode subtable stbtt_InitFont picks (the last one, as it does), of a format stb_truetype reads
// (0, 4, 6, 12, 13), its structure inside table 'cmap'; then stbtt_FindGlyphIndex replayed with every read
// checked, so a lookup that would leave the table is an error naming the character, not a wild read.
#include "examples/data/font_checker.h"

#include "core/error.h"

namespace minidl::font_file {

void FontChecker::choose_cmap_subtable() {
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

uint32_t FontChecker::glyph_index(uint32_t cp) const {
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

uint64_t FontChecker::in_cmap(uint64_t at, uint64_t size, uint32_t cp) const {
  if (at < cmap_.offset || at + size > cmap_.end())
    fail(str_cat("its character map (format ", format_, ") sends the lookup of ", char_text(cp),
                 " outside table 'cmap' (to byte ", at, " of the file; the table is bytes ", cmap_.offset, " to ",
                 cmap_.end(), ")"));
  return at;
}
uint8_t FontChecker::u8(uint64_t at, uint32_t cp) const { return d_[in_cmap(at, 1, cp)]; }
uint16_t FontChecker::u16(uint64_t at, uint32_t cp) const { return be16(d_ + in_cmap(at, 2, cp)); }
uint32_t FontChecker::u32(uint64_t at, uint32_t cp) const { return be32(d_ + in_cmap(at, 4, cp)); }

// stbtt_FindGlyphIndex's format 4 (segments of code points, binary search as it does it, in its types).
uint32_t FontChecker::format4_glyph(uint32_t cp) const {
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
uint32_t FontChecker::format12_glyph(uint32_t cp) const {
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

}  // namespace minidl::font_file
