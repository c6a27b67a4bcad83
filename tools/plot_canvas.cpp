// tools/plot_canvas.cpp — the marks of tools/plot_canvas.h, and their SVG text.
#include "tools/plot_canvas.h"

#include <sstream>

#include "tools/svg.h"

namespace minidl {

void Canvas::line(double x1, double y1, double x2, double y2, const std::string& colour, double width, bool dashed) {
  Mark m;
  m.kind = Mark::Kind::line;
  m.points = {{x1, y1}, {x2, y2}};
  m.stroke = colour;
  m.stroke_width = width;
  m.dashed = dashed;
  marks.push_back(std::move(m));
}

void Canvas::polyline(std::vector<std::pair<double, double>> points, const std::string& colour, double width,
                      bool dashed) {
  Mark m;
  m.kind = Mark::Kind::polyline;
  m.points = std::move(points);
  m.stroke = colour;
  m.stroke_width = width;
  m.dashed = dashed;
  marks.push_back(std::move(m));
}

void Canvas::circle(double x, double y, double r, const std::string& stroke, const std::string& fill,
                    const std::string& tooltip) {
  Mark m;
  m.kind = Mark::Kind::circle;
  m.points = {{x, y}};
  m.radius = r;
  m.stroke = stroke;
  m.fill = fill;
  m.text = tooltip;
  marks.push_back(std::move(m));
}

void Canvas::rect(double x, double y, double w, double h, const std::string& stroke) {
  Mark m;
  m.kind = Mark::Kind::rect;
  m.points = {{x, y}, {w, h}};
  m.stroke = stroke;
  marks.push_back(std::move(m));
}

Mark& Canvas::text(double x, double y, const std::string& text, Mark::Anchor anchor, const std::string& colour) {
  Mark m;
  m.kind = Mark::Kind::text;
  m.points = {{x, y}};
  m.text = text;
  m.anchor = anchor;
  m.fill = colour;
  marks.push_back(std::move(m));
  return marks.back();
}

std::string canvas_svg(const Canvas& canvas) {
  using svg::escape;
  using svg::num;
  std::ostringstream s;
  s << svg::open(canvas.width, canvas.height);
  for (const Mark& m : canvas.marks) {
    const std::string stroke = " stroke=\"" + m.stroke + "\"" +
                               (m.stroke_width != 1 ? " stroke-width=\"" + num(m.stroke_width) + "\"" : "") +
                               (m.dashed ? " stroke-dasharray=\"6,4\"" : "");
    switch (m.kind) {
      case Mark::Kind::line:
        s << "<line x1=\"" << num(m.points[0].first) << "\" y1=\"" << num(m.points[0].second) << "\" x2=\""
          << num(m.points[1].first) << "\" y2=\"" << num(m.points[1].second) << "\"" << stroke << "/>\n";
        break;
      case Mark::Kind::polyline:
        s << "<polyline fill=\"none\"" << stroke << " points=\"";
        for (size_t i = 0; i < m.points.size(); ++i)
          s << (i ? " " : "") << num(m.points[i].first) << "," << num(m.points[i].second);
        s << "\"/>\n";
        break;
      case Mark::Kind::circle:
        s << "<circle cx=\"" << num(m.points[0].first) << "\" cy=\"" << num(m.points[0].second) << "\" r=\""
          << num(m.radius) << "\" fill=\"" << m.fill << "\"" << stroke;
        if (m.text.empty())
          s << "/>\n";
        else
          s << "><title>" << escape(m.text) << "</title></circle>\n";
        break;
      case Mark::Kind::rect:
        s << "<rect x=\"" << num(m.points[0].first) << "\" y=\"" << num(m.points[0].second) << "\" width=\""
          << num(m.points[1].first) << "\" height=\"" << num(m.points[1].second) << "\" fill=\"none\"" << stroke
          << "/>\n";
        break;
      case Mark::Kind::text: {
        const double x = m.points[0].first, y = m.points[0].second;
        s << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\"";
        if (m.font_size != 11) s << " font-size=\"" << num(m.font_size) << "\"";
        if (m.bold) s << " font-weight=\"bold\"";
        if (m.fill != "none") s << " fill=\"" << m.fill << "\"";
        if (m.vertical) s << " transform=\"rotate(-90 " << num(x) << " " << num(y) << ")\"";
        if (m.anchor != Mark::Anchor::start)
          s << " text-anchor=\"" << (m.anchor == Mark::Anchor::middle ? "middle" : "end") << "\"";
        s << ">" << escape(m.text) << "</text>\n";
        break;
      }
    }
  }
  s << svg::close();
  return s.str();
}

}  // namespace minidl
