// examples/data/font_file.cpp — checking a TrueType font file before stb_truetype reads it
// (examples/data/font_file.h): the file is read (a regular file, not too large), then checked by a
// FontChecker (examples/data/font_checker.h).
//
// The checks follow stb_truetype 1.26 (stb_truetype.h): stbtt_GetFontOffsetForIndex and stbtt_InitFont
// (the header, the table directory, the first table of each tag, the last Unicode cmap subtable;
// font_tables.cpp and font_cmap.cpp), stbtt_FindGlyphIndex (replayed with every read checked;
// font_cmap.cpp), stbtt_ScaleForMappingEmToPixels (unitsPerEm), and stbtt_GetGlyphBitmap: the glyph's box
// from its header (the bitmap's size), then stbtt__GetGlyphShapeTT (contours, flags, coordinates;
// composite glyphs recursively; font_glyphs.cpp). Offsets are computed in uint64_t there, so no check can
// wrap around.
#include "examples/data/font_file.h"

#include "examples/data/font_checker.h"
#include "nn/files.h"

namespace minidl {

void check_truetype_font(const uint8_t* data, size_t size, const std::string& name, const std::string& characters,
                         const std::string& who) {
  font_file::FontChecker checker(data, size, name, who);
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
  font_file::FontChecker checker(data, size, "", "truetype_glyph_index");
  checker.check_structure();
  return checker.glyph_index(codepoint);
}

}  // namespace minidl
