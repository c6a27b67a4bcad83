// tools/svg.h — the small SVG toolkit behind minidl's charts (`minidl bench --svg`, `minidl plot`,
// `minidl compare`). A chart is written as plain text, element by element; these are the pieces every
// chart needs: escaping, numbers, a colour palette, the document's frame, "nice" axis ticks (steps
// of 1, 2 or 5 times a power of ten), and a well-formedness check that the tests run on every chart.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace minidl {
namespace svg {

// Text and attribute values: & < > " as entities.
std::string escape(const std::string& text);

// A number with one decimal ("12.5"): pixel coordinates, and values shown in labels.
std::string num(double v);

// The i-th of 12 distinct colours (matplotlib's "tab10" and two more), cycling.
const char* colour(size_t i);

// The opening <svg> tag with a white background (font: monospace, 11 px), and its closing tag.
std::string open(double width, double height);
std::string close();

// Ticks for a linear axis covering [lo, hi]: at most `max_count` values, a step of 1, 2 or 5 x 10^k
// (at least 1 for `integers`: epochs, steps), lo and hi widened to multiples of the step. A range of
// one value is widened around it.
struct Ticks {
  double lo = 0, hi = 1, step = 1;
  std::vector<double> values;
  std::string label(double v) const;  // with as many decimals as the step needs: "0.02", "1.5", "40"
};
Ticks nice_ticks(double lo, double hi, int max_count, bool integers = false);

// Maps [lo, hi] linearly onto pixels [p0, p1] (p1 < p0 for a y axis that grows upwards).
struct LinearAxis {
  double lo, hi, p0, p1;
  double at(double v) const { return p0 + (v - lo) / (hi - lo) * (p1 - p0); }
};

// "" when `text` is a well-formed SVG document of the kind minidl writes: one <svg> root, every tag
// closed in order, attribute values quoted, no '<' or bare '&' in text. Otherwise what is wrong.
std::string problems(const std::string& text);

// Writes `text` to `path`; throws an Error naming `what` and the file when it cannot.
void write_file(const std::string& path, const std::string& text, const std::string& what);

}  // namespace svg
}  // namespace minidl
