// tools/plot_png.cpp — a Canvas (tools/plot_canvas.h) drawn with cairo into a PNG file: the same marks as
// the SVG, mark by mark. cairo is optional (Debian package libcairo2-dev, found by CMake through
// pkg-config); a build without it refuses PNG with a message that names the package, and writes SVG.
// The library itself is opened at run time (below), so a machine without it runs every other command.
#include "tools/plot_canvas.h"

#include "core/error.h"

#ifdef MINIDL_HAVE_CAIRO
#include <cairo.h>
#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <type_traits>
#endif

namespace minidl {

#ifdef MINIDL_HAVE_CAIRO

namespace {

// The cairo functions this file calls, looked up in libcairo.so.2 when the first PNG is written. The
// program is linked without cairo (dlopen), so `minidl` starts on a machine that lacks the library (a
// GPU server, a minimal container) and only PNG output is refused there; cairo's header (libcairo2-dev)
// is needed at build time for the types.
struct Cairo {
  decltype(&::cairo_arc) arc = nullptr;
  decltype(&::cairo_create) create = nullptr;
  decltype(&::cairo_destroy) destroy = nullptr;
  decltype(&::cairo_fill_preserve) fill_preserve = nullptr;
  decltype(&::cairo_image_surface_create) image_surface_create = nullptr;
  decltype(&::cairo_line_to) line_to = nullptr;
  decltype(&::cairo_move_to) move_to = nullptr;
  decltype(&::cairo_new_sub_path) new_sub_path = nullptr;
  decltype(&::cairo_paint) paint = nullptr;
  decltype(&::cairo_rectangle) rectangle = nullptr;
  decltype(&::cairo_restore) restore = nullptr;
  decltype(&::cairo_rotate) rotate = nullptr;
  decltype(&::cairo_save) save = nullptr;
  decltype(&::cairo_select_font_face) select_font_face = nullptr;
  decltype(&::cairo_set_dash) set_dash = nullptr;
  decltype(&::cairo_set_font_size) set_font_size = nullptr;
  decltype(&::cairo_set_line_width) set_line_width = nullptr;
  decltype(&::cairo_set_source_rgb) set_source_rgb = nullptr;
  decltype(&::cairo_show_text) show_text = nullptr;
  decltype(&::cairo_status) status = nullptr;
  decltype(&::cairo_status_to_string) status_to_string = nullptr;
  decltype(&::cairo_stroke) stroke = nullptr;
  decltype(&::cairo_surface_destroy) surface_destroy = nullptr;
  decltype(&::cairo_surface_write_to_png) surface_write_to_png = nullptr;
  decltype(&::cairo_text_extents) text_extents = nullptr;
  decltype(&::cairo_translate) translate = nullptr;
};

// The library's functions, or null (and why in *error) when libcairo.so.2 or one of them is missing.
const Cairo* load_cairo(std::string* error) {
  static std::string failure;
  static const Cairo* loaded = [] () -> const Cairo* {
    void* lib = dlopen("libcairo.so.2", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      failure = dlerror();
      return nullptr;
    }
    static Cairo c;
    bool complete = true;
    auto resolve = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (fn == nullptr && complete) {
        complete = false;
        failure = str_cat("libcairo.so.2 has no ", name);
      }
    };
    resolve(c.arc, "cairo_arc");
    resolve(c.create, "cairo_create");
    resolve(c.destroy, "cairo_destroy");
    resolve(c.fill_preserve, "cairo_fill_preserve");
    resolve(c.image_surface_create, "cairo_image_surface_create");
    resolve(c.line_to, "cairo_line_to");
    resolve(c.move_to, "cairo_move_to");
    resolve(c.new_sub_path, "cairo_new_sub_path");
    resolve(c.paint, "cairo_paint");
    resolve(c.rectangle, "cairo_rectangle");
    resolve(c.restore, "cairo_restore");
    resolve(c.rotate, "cairo_rotate");
    resolve(c.save, "cairo_save");
    resolve(c.select_font_face, "cairo_select_font_face");
    resolve(c.set_dash, "cairo_set_dash");
    resolve(c.set_font_size, "cairo_set_font_size");
    resolve(c.set_line_width, "cairo_set_line_width");
    resolve(c.set_source_rgb, "cairo_set_source_rgb");
    resolve(c.show_text, "cairo_show_text");
    resolve(c.status, "cairo_status");
    resolve(c.status_to_string, "cairo_status_to_string");
    resolve(c.stroke, "cairo_stroke");
    resolve(c.surface_destroy, "cairo_surface_destroy");
    resolve(c.surface_write_to_png, "cairo_surface_write_to_png");
    resolve(c.text_extents, "cairo_text_extents");
    resolve(c.translate, "cairo_translate");
    return complete ? &c : nullptr;
  }();
  if (loaded == nullptr && error != nullptr) *error = failure;
  return loaded;
}

// "#rrggbb" or "white" as cairo's red, green, blue in [0, 1]; anything else black.
void set_colour(const Cairo& c, cairo_t* cr, const std::string& colour) {
  if (colour == "white") return c.set_source_rgb(cr, 1, 1, 1);
  if (colour.size() == 7 && colour[0] == '#') {
    const long rgb = std::strtol(colour.c_str() + 1, nullptr, 16);
    return c.set_source_rgb(cr, ((rgb >> 16) & 255) / 255.0, ((rgb >> 8) & 255) / 255.0, (rgb & 255) / 255.0);
  }
  c.set_source_rgb(cr, 0, 0, 0);
}

void stroke_style(const Cairo& c, cairo_t* cr, const Mark& m) {
  set_colour(c, cr, m.stroke);
  c.set_line_width(cr, m.stroke_width);
  const double dashes[] = {6, 4};
  c.set_dash(cr, dashes, m.dashed ? 2 : 0, 0);
}

void draw_text(const Cairo& c, cairo_t* cr, const Mark& m) {
  c.select_font_face(cr, "monospace", CAIRO_FONT_SLANT_NORMAL,
                         m.bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  c.set_font_size(cr, m.font_size);
  cairo_text_extents_t extents;
  c.text_extents(cr, m.text.c_str(), &extents);
  const double shift = m.anchor == Mark::Anchor::start    ? 0
                       : m.anchor == Mark::Anchor::middle ? extents.x_advance / 2
                                                          : extents.x_advance;
  c.save(cr);
  c.translate(cr, m.points[0].first, m.points[0].second);
  if (m.vertical) c.rotate(cr, -1.5707963267948966);  // -90 degrees, as the SVG's rotate(-90)
  c.move_to(cr, -shift, 0);
  set_colour(c, cr, m.fill == "none" ? "black" : m.fill);
  c.show_text(cr, m.text.c_str());
  c.restore(cr);
}

}  // namespace

bool png_supported() { return load_cairo(nullptr) != nullptr; }

void write_canvas_png(const Canvas& canvas, const std::string& path, const std::string& what) {
  std::string why;
  const Cairo* api = load_cairo(&why);
  if (api == nullptr)
    throw Error(str_cat(what, ": cannot write '", path, "': PNG is drawn by the cairo library, which this machine ",
                        "lacks (", why, "; Debian/Ubuntu package libcairo2); write .svg instead"));
  const Cairo& c = *api;
  cairo_surface_t* surface = c.image_surface_create(CAIRO_FORMAT_RGB24, static_cast<int>(canvas.width + 0.5),
                                                        static_cast<int>(canvas.height + 0.5));
  cairo_t* cr = c.create(surface);
  c.set_source_rgb(cr, 1, 1, 1);
  c.paint(cr);
  for (const Mark& m : canvas.marks) {
    switch (m.kind) {
      case Mark::Kind::line:
      case Mark::Kind::polyline:
        c.move_to(cr, m.points[0].first, m.points[0].second);
        for (size_t i = 1; i < m.points.size(); ++i) c.line_to(cr, m.points[i].first, m.points[i].second);
        stroke_style(c, cr, m);
        c.stroke(cr);
        break;
      case Mark::Kind::circle:
        c.new_sub_path(cr);
        c.arc(cr, m.points[0].first, m.points[0].second, m.radius, 0, 6.283185307179586);
        if (m.fill != "none") {
          set_colour(c, cr, m.fill);
          c.fill_preserve(cr);
        }
        stroke_style(c, cr, m);
        c.stroke(cr);
        break;
      case Mark::Kind::rect:
        c.rectangle(cr, m.points[0].first, m.points[0].second, m.points[1].first, m.points[1].second);
        stroke_style(c, cr, m);
        c.stroke(cr);
        break;
      case Mark::Kind::text:
        draw_text(c, cr, m);
        break;
    }
  }
  const cairo_status_t drawn = c.status(cr);
  const cairo_status_t written =
      drawn == CAIRO_STATUS_SUCCESS ? c.surface_write_to_png(surface, path.c_str()) : drawn;
  c.destroy(cr);
  c.surface_destroy(surface);
  MINIDL_CHECK(written == CAIRO_STATUS_SUCCESS, what, ": cannot write '", path, "': ",
               c.status_to_string(written));
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
