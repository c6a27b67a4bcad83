// examples/data/font_glyphs.cpp — FontChecker (examples/data/font_checker.h), part 3: each character's
// glyph as stbtt_GetGlyphBitmap reads it. The glyph's box from its header (the bitmap's size), then
// stbtt__GetGlyphShapeTT: a simple glyph's contours, instructions, flags and coordinates, or a composite
// glyph's components, recursively, with a bound on their depth, their count and the points they expand to.
#include "examples/data/font_checker.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "examples/data/font_file.h"

namespace minidl::font_file {

void FontChecker::check_characters(const std::string& characters) {
  for (unsigned char c : characters) {
    const uint32_t glyph = glyph_index(c);
    if (glyph == 0) continue;  // not in the font: the caller reports it when drawing
    if (glyph >= num_glyphs_)
      fail(str_cat("its character map sends ", char_text(c), " to glyph ", glyph, ", but table 'maxp' says the font has ",
                   num_glyphs_, " glyphs"));
    check_glyph(glyph, 0);
  }
}

FontChecker::Expansion FontChecker::check_glyph(uint32_t g, int depth) {
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
uint64_t FontChecker::check_simple_glyph(uint32_t g, uint64_t base, uint64_t limit, int contours) {
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
FontChecker::Expansion FontChecker::check_composite_glyph(uint32_t g, uint64_t base, uint64_t limit,
                                                          int depth) {
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

}  // namespace minidl::font_file
