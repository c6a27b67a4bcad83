// examples/data/font_file.h — checking a TrueType font file before stb_truetype reads it.
//
// stb_truetype trusts every offset, count and length in a font: a truncated or damaged file makes it read
// far outside the buffer (a crash, or garbage drawn). This checks everything stb_truetype reads to draw
// the given characters, in the order it reads them, and throws one line naming the file and the fault,
// e.g. "captcha: font 'x.ttf': truncated: table 'glyf' ends at byte 91234 of a 50000-byte file":
//   - the file: a regular file (not a folder, FIFO or device) of 1 byte to kMaxFontFileBytes;
//   - the header: a TrueType font (00 01 00 00, 'true', ...) or a collection ('ttcf'; its first font is
//     the one used), and its table directory, each table inside the file and after the directory;
//   - the tables stb_truetype needs: cmap, head, hhea, hmtx, loca, glyf and maxp (a font with PostScript
//     outlines, 'CFF ', is refused: its reader in stb_truetype is not bounds-checked), each long enough
//     for the fields read from it; head's unitsPerEm (16..16384) and indexToLocFormat (0 or 1), maxp's
//     glyph count, hhea's numberOfHMetrics against hmtx's length, loca's length against the glyph count
//     and every loca entry inside glyf;
//   - the character map stb_truetype picks (the last Unicode subtable, as it does), of a format it reads
//     (0, 4, 6, 12, 13): its structure inside 'cmap', and the lookup of each given character, replayed
//     with every read bounds-checked, giving a glyph below the glyph count;
//   - each of those glyphs as stb_truetype parses it: a header inside its loca range with a sane box
//     (at most kMaxGlyphEms em wide and high), then its contours' end points (increasing), instructions,
//     flags and coordinates inside the glyph's bytes; no contour of a single off-curve point (stb reads
//     one point past its array there); composite glyphs' components (position given as x/y offsets,
//     since stb asserts on anchor points), recursively, at most kMaxComponentDepth deep and
//     kMaxComponents in all (a glyph that contains itself would recurse forever).
// Characters the font does not map (glyph 0) pass: drawing them is the caller's error to report.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace minidl {

// Larger files are refused before they are read: the largest common fonts (CJK collections) are about
// 20 MB, and stb_truetype computes offsets in int.
constexpr uint64_t kMaxFontFileBytes = uint64_t(64) << 20;
// A glyph box wider or higher than this many em is refused (the glyph's bitmap is allocated from it).
constexpr int kMaxGlyphEms = 4;
// Composite glyphs: at most this deep, and this many components in all once expanded.
constexpr int kMaxComponentDepth = 8;
constexpr int kMaxComponents = 1024;

// Throws minidl::Error "<who> '<name>': <what is wrong>" unless stb_truetype can safely read the font in
// data[0, size) and draw each character of `characters` (read as code points 0..255).
void check_truetype_font(const uint8_t* data, size_t size, const std::string& name, const std::string& characters,
                         const std::string& who);

// The bytes of the font file at `path`, checked as above; also refuses a file that is not a regular file
// or is larger than kMaxFontFileBytes (nn/files.h).
std::vector<uint8_t> read_truetype_font(const std::string& path, const std::string& characters,
                                        const std::string& who);

// The glyph stb_truetype's stbtt_FindGlyphIndex returns for `codepoint` in a font check_truetype_font
// accepted (0: not mapped), found the same way with every read checked; for tests and the fuzzer, which
// compare the two.
uint32_t truetype_glyph_index(const uint8_t* data, size_t size, uint32_t codepoint);

}  // namespace minidl
