// tools/plot_canvas.h — what `minidl plot` draws, as a list of marks in pixel coordinates (lines, polylines,
// markers, rectangles, text), and the two ways to put it in a file: SVG text (always) and PNG (through
// cairo, tools/plot_png.cpp, when the build found it). tools/plot.cpp lays a chart out once, on a Canvas;
// both formats then draw the same marks, so a PNG shows what the SVG shows.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace minidl {

struct Mark {
  enum class Kind { line, polyline, circle, rect, text };
  enum class Anchor { start, middle, end };  // where a text's x is: its start, middle or end
  Kind kind = Kind::line;
  std::vector<std::pair<double, double>> points;  // line: 2; polyline: 2 or more; circle: its centre;
                                                  // rect: top-left and (width, height); text: its baseline
  std::string stroke = "none", fill = "none";     // "#rrggbb", "white" or "none"
  double stroke_width = 1;
  bool dashed = false;   // 6 px on, 4 off
  double radius = 0;     // circle
  std::string text;      // text: what it says; circle: its tooltip in SVG (<title>), if any
  double font_size = 11;
  bool bold = false;
  bool vertical = false;  // text read bottom to top (a y axis label)
  Anchor anchor = Anchor::start;
};

struct Canvas {
  double width = 0, height = 0;
  std::vector<Mark> marks;  // drawn in order, on a white page

  void line(double x1, double y1, double x2, double y2, const std::string& colour, double width = 1,
            bool dashed = false);
  void polyline(std::vector<std::pair<double, double>> points, const std::string& colour, double width,
                bool dashed);
  void circle(double x, double y, double r, const std::string& stroke, const std::string& fill,
              const std::string& tooltip = "");
  void rect(double x, double y, double w, double h, const std::string& stroke);
  // A text mark; fill "none" means the default black.
  Mark& text(double x, double y, const std::string& text, Mark::Anchor anchor = Mark::Anchor::start,
             const std::string& colour = "none");
};

// The SVG document of `canvas` (monospace, 11 px unless a mark says otherwise).
std::string canvas_svg(const Canvas& canvas);

// Whether this build draws PNG (it found cairo: Debian package libcairo2-dev).
bool png_supported();
// Writes `canvas` as a PNG file of width x height pixels. Throws an Error naming `what` and the file when it
// cannot, and, in a build without cairo, one that says so and names the package.
void write_canvas_png(const Canvas& canvas, const std::string& path, const std::string& what);

}  // namespace minidl
