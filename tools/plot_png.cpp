// tools/plot_png.cpp — a Canvas (tools/plot_canvas.h) drawn with cairo into a PNG file: the same marks as
// the SVG, mark by mark. cairo is optional (Debian package libcairo2-dev, found by CMake through
// pkg-config); a build without it refuses PNG with a message that names the package, and writes SVG.
#include "tools/plot_canvas.h"

#include "core/error.h"

#ifdef MINIDL_HAVE_CAIRO
#include <cairo.h>

#include <cstdlib>
#endif

namespace minidl {

#ifdef MINIDL_HAVE_CAIRO

namespace {

// "#rrggbb" or "white" as cairo's red, green, blue in [0, 1]; anything else black.
void set_colour(cairo_t* cr, const std::string& colour) {
  if (colour == "white") return cairo_set_source_rgb(cr, 1, 1, 1);
  if (colour.size() == 7 && colour[0] == '#') {
    const long rgb = std::strtol(colour.c_str() + 1, nullptr, 16);
    return cairo_set_source_rgb(cr, ((rgb >> 16) & 255) / 255.0, ((rgb >> 8) & 255) / 255.0, (rgb & 255) / 255.0);
  }
  cairo_set_source_rgb(cr, 0, 0, 0);
}

void stroke_style(cairo_t* cr, const Mark& m) {
  set_colour(cr, m.stroke);
  cairo_set_line_width(cr, m.stroke_width);
  const double dashes[] = {6, 4};
  cairo_set_dash(cr, dashes, m.dashed ? 2 : 0, 0);
}

void draw_text(cairo_t* cr, const Mark& m) {
  cairo_select_font_face(cr, "monospace", CAIRO_FONT_SLANT_NORMAL,
                         m.bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, m.font_size);
  cairo_text_extents_t extents;
  cairo_text_extents(cr, m.text.c_str(), &extents);
  const double shift = m.anchor == Mark::Anchor::start    ? 0
                       : m.anchor == Mark::Anchor::middle ? extents.x_advance / 2
                                                          : extents.x_advance;
  cairo_save(cr);
  cairo_translate(cr, m.points[0].first, m.points[0].second);
  if (m.vertical) cairo_rotate(cr, -1.5707963267948966);  // -90 degrees, as the SVG's rotate(-90)
  cairo_move_to(cr, -shift, 0);
  set_colour(cr, m.fill == "none" ? "black" : m.fill);
  cairo_show_text(cr, m.text.c_str());
  cairo_restore(cr);
}

}  // namespace

bool png_supported() { return true; }

void write_canvas_png(const Canvas& canvas, const std::string& path, const std::string& what) {
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, static_cast<int>(canvas.width + 0.5),
                                                        static_cast<int>(canvas.height + 0.5));
  cairo_t* cr = cairo_create(surface);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  for (const Mark& m : canvas.marks) {
    switch (m.kind) {
      case Mark::Kind::line:
      case Mark::Kind::polyline:
        cairo_move_to(cr, m.points[0].first, m.points[0].second);
        for (size_t i = 1; i < m.points.size(); ++i) cairo_line_to(cr, m.points[i].first, m.points[i].second);
        stroke_style(cr, m);
        cairo_stroke(cr);
        break;
      case Mark::Kind::circle:
        cairo_new_sub_path(cr);
        cairo_arc(cr, m.points[0].first, m.points[0].second, m.radius, 0, 6.283185307179586);
        if (m.fill != "none") {
          set_colour(cr, m.fill);
          cairo_fill_preserve(cr);
        }
        stroke_style(cr, m);
        cairo_stroke(cr);
        break;
      case Mark::Kind::rect:
        cairo_rectangle(cr, m.points[0].first, m.points[0].second, m.points[1].first, m.points[1].second);
        stroke_style(cr, m);
        cairo_stroke(cr);
        break;
      case Mark::Kind::text:
        draw_text(cr, m);
        break;
    }
  }
  const cairo_status_t drawn = cairo_status(cr);
  const cairo_status_t written =
      drawn == CAIRO_STATUS_SUCCESS ? cairo_surface_write_to_png(surface, path.c_str()) : drawn;
  cairo_destroy(cr);
  cairo_surface_destroy(surface);
  MINIDL_CHECK(written == CAIRO_STATUS_SUCCESS, what, ": cannot write '", path, "': ",
               cairo_status_to_string(written));
}

#else  // built without cairo

bool png_supported() { return false; }

void write_canvas_png(const Canvas&, const std::string& path, const std::string& what) {
  throw Error(str_cat(what, ": cannot write '", path, "': this minidl was built without cairo, which draws PNG ",
                      "(install the Debian package libcairo2-dev, then configure and build again); ",
                      "write .svg instead"));
}

#endif

}  // namespace minidl
