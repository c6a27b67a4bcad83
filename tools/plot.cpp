// tools/plot.cpp — the curves of tools/plot.h.
//
// Layout (on a Canvas, tools/plot_canvas.h): a title line, then one panel per --y name, stacked, all with
// the same x range. A panel is a frame with the plot area on the
// left (y ticks and grid, x ticks below, both axis labels) and its legend on the right: one entry per
// series (a run's key), with the series' colour and line style.
#include "tools/plot.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "core/strings.h"
#include "tools/svg.h"

namespace minidl {

namespace {

constexpr const char* kVariantPrefixes[] = {"train_", "test_", "val_"};

// Page geometry, in pixels. The page is wider when a legend entry needs it.
constexpr double kMinWidth = 980;
constexpr double kPlotLeft = 80, kPlotRight = 660;  // the plot area of every panel
constexpr double kInset = 10;                        // between the frame and the outermost points
constexpr double kLegendLeft = 690;
constexpr double kCharWidth = 6.7;                   // of the 11 px monospace font
constexpr double kTitleHeight = 50;
constexpr double kPanelHeight = 240;                 // the plot area's height (more if the legend needs it)
constexpr double kPanelGap = 76;                     // below a plot area: x ticks, x label, the next title
constexpr double kLegendLine = 16;
constexpr int kMaxTicks = 8;

constexpr size_t kMaxMarkedPoints = 100;             // more points (per-step curves): a line only

// One curve: a run's key against x.
struct Series {
  std::string label;  // "run: key"
  std::string key;
  std::string colour;
  bool held_out = false;  // test_ or val_: dashed
  std::vector<std::pair<double, double>> points;  // (x, value), sorted by x, as stored (unscaled)
  std::string same_as;    // the label of an earlier series with exactly these points, if any
};

std::string value_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A per-step record (--metrics-every N) rather than an epoch's.
bool per_step(const MetricsRecord& r) { return r.has("every_steps"); }

std::vector<Series> series_for(const std::string& name, const std::vector<PlotRun>& runs, const std::string& x) {
  std::vector<Series> out;
  for (size_t r = 0; r < runs.size(); ++r)
    for (const std::string& key : keys_for(name, runs[r].log)) {
      Series s;
      s.label = runs[r].label + ": " + key;
      s.key = key;
      s.colour = svg::colour(r);
      s.held_out = starts_with(key, "test_") || starts_with(key, "val_");
      // A key that per-step records hold is drawn from them alone (the finer curve).
      bool in_steps = false;
      for (const MetricsRecord& rec : runs[r].log.records) in_steps = in_steps || (per_step(rec) && rec.has(key));
      for (const MetricsRecord& rec : runs[r].log.records)
        if (per_step(rec) == in_steps && rec.has(x) && rec.has(key)) s.points.emplace_back(rec.get(x), rec.get(key));
      std::stable_sort(s.points.begin(), s.points.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      if (s.points.empty()) continue;
      for (const Series& earlier : out)
        if (earlier.key == key && earlier.points == s.points) {
          s.same_as = earlier.label;
          break;
        }
      out.push_back(std::move(s));
    }
  return out;
}

std::string legend_text(const Series& se) {
  return se.same_as.empty() ? se.label : se.label + " (same as " + se.same_as + ")";
}

// The x range of every panel's points: the panels share their x axis, so that they line up.
std::pair<double, double> x_range(const std::vector<std::vector<Series>>& panels) {
  double lo = 1e300, hi = -1e300;
  for (const std::vector<Series>& panel : panels)
    for (const Series& se : panel)
      for (const auto& point : se.points) lo = std::min(lo, point.first), hi = std::max(hi, point.first);
  return {lo, hi};
}

// One panel whose plot area starts at `top`, x from x_lo to x_hi; returns the height it took.
double draw_panel(Canvas& c, const std::string& name, const std::vector<Series>& series, const std::string& x,
                  double x_lo, double x_hi, double top) {
  using Anchor = Mark::Anchor;
  const double height = std::max(kPanelHeight, kLegendLine * static_cast<double>(series.size()) + 8);
  const double bottom = top + height;
  double y_lo = 1e300, y_hi = -1e300;
  for (const Series& se : series)
    for (const auto& point : se.points) y_lo = std::min(y_lo, point.second), y_hi = std::max(y_hi, point.second);
  const std::string xk = x_key(x);
  const AxisUnit xu = axis_unit(xk, x_hi), yu = axis_unit(name, y_hi);
  // Ticks and positions in the units shown (percent, minutes).
  const svg::Ticks xt = svg::nice_ticks(x_lo * xu.scale, x_hi * xu.scale, kMaxTicks,
                                        /*integers=*/xk == "step" || (xk == "epoch" && x_lo == std::floor(x_lo)));
  const svg::Ticks yt = svg::nice_ticks(y_lo * yu.scale, y_hi * yu.scale, kMaxTicks / 2 + 2);
  const svg::LinearAxis ax{xt.lo, xt.hi, kPlotLeft + kInset, kPlotRight - kInset},
      ay{yt.lo, yt.hi, bottom - kInset, top + kInset};
  const auto px = [&](double v) { return ax.at(v * xu.scale); };
  const auto py = [&](double v) { return ay.at(v * yu.scale); };

  std::vector<std::string> keys;
  for (const Series& se : series)
    if (std::find(keys.begin(), keys.end(), se.key) == keys.end()) keys.push_back(se.key);
  Mark& heading = c.text(kPlotLeft, top - 10, name);
  heading.font_size = 13;
  heading.bold = true;
  c.text(kPlotLeft + 12 + 8.0 * static_cast<double>(name.size()), top - 10, join(keys, ", "), Anchor::start, "#555");
  // Grid, ticks and labels.
  for (double v : yt.values) {
    c.line(kPlotLeft, ay.at(v), kPlotRight, ay.at(v), "#e5e5e5");
    c.text(kPlotLeft - 6, ay.at(v) + 4, yt.label(v), Anchor::end);
  }
  for (double v : xt.values) {
    c.line(ax.at(v), top, ax.at(v), bottom + 4, "#e5e5e5");
    c.text(ax.at(v), bottom + 17, xt.label(v), Anchor::middle);
  }
  c.rect(kPlotLeft, top, kPlotRight - kPlotLeft, height, "#888");
  c.text((kPlotLeft + kPlotRight) / 2, bottom + 34, xu.label, Anchor::middle);
  c.text(22, top + height / 2, yu.label, Anchor::middle).vertical = true;

  // The curves: a line through the points (none for a run of one epoch), a marker at each (unless there
  // are many: per-step curves).
  for (const Series& se : series) {
    if (se.points.size() > 1) {
      std::vector<std::pair<double, double>> line;
      for (const auto& [vx, vy] : se.points) line.emplace_back(px(vx), py(vy));
      c.polyline(std::move(line), se.colour, 2, se.held_out);
    }
    if (se.points.size() <= kMaxMarkedPoints)
      for (const auto& [vx, vy] : se.points)
        c.circle(px(vx), py(vy), 3, se.colour, se.held_out ? "white" : se.colour,
                 str_cat(se.label, " at ", xu.label, " ", value_text(vx * xu.scale), ": ", value_text(vy * yu.scale)));
  }

  // The legend: a sample of each series' line and marker, then its name.
  double ly = top + 12;
  for (const Series& se : series) {
    c.line(kLegendLeft, ly - 4, kLegendLeft + 28, ly - 4, se.colour, 2, se.held_out);
    c.circle(kLegendLeft + 14, ly - 4, 3, se.colour, se.held_out ? "white" : se.colour);
    c.text(kLegendLeft + 36, ly, legend_text(se));
    ly += kLegendLine;
  }
  return height;
}

}  // namespace

std::vector<std::string> keys_for(const std::string& name, const MetricsLog& log) {
  std::vector<std::string> candidates = {name};
  for (const char* prefix : kVariantPrefixes) candidates.push_back(prefix + name);
  std::vector<std::string> found;
  for (const std::string& key : candidates)
    for (const MetricsRecord& r : log.records)
      if (r.has(key)) {
        found.push_back(key);
        break;
      }
  return found;
}

AxisUnit axis_unit(const std::string& name, double largest) {
  if (ends_with(name, "accuracy")) return {name + " (%)", 100};
  if (name == "images_per_second") return {"images/s", 1};
  if (name == "lr") return {"learning rate", 1};
  if (name == "seconds_since_start") return largest > 600 ? AxisUnit{"time (min)", 1.0 / 60} : AxisUnit{"time (s)", 1};
  if (name == "seconds" || name == "train_seconds") return {name + " per epoch (s)", 1};
  if (name == "step") return {"optimizer step", 1};
  return {name, 1};  // epoch, loss and any other key
}

std::string x_key(const std::string& x) { return x == "time" ? "seconds_since_start" : x; }

std::string run_label(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  for (const std::string ext : {".jsonl", ".json"})
    if (name.size() > ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0) {
      name.resize(name.size() - ext.size());
      break;
    }
  return name;
}

Canvas plot_canvas(const std::vector<PlotRun>& runs, const PlotOptions& o) {
  MINIDL_CHECK(!runs.empty(), "plot: no metrics files given");
  MINIDL_CHECK(!o.y.empty(), "plot: --y names no metric");
  const std::string xk = x_key(o.x);
  for (const PlotRun& run : runs) {
    bool has_x = false;
    for (const MetricsRecord& r : run.log.records) has_x = has_x || r.has(xk);
    MINIDL_CHECK(has_x, run.log.path, ": no '", xk, "' in its records, so nothing to draw against --x ", o.x,
                 " (its keys: ", join(run.log.numeric_keys(), ", "), ")");
  }
  std::vector<std::vector<Series>> panels;
  for (const std::string& name : o.y) {
    panels.push_back(series_for(name, runs, xk));
    if (panels.back().empty()) {
      std::string held;
      for (const PlotRun& run : runs) held += str_cat("; ", run.log.path, " has ", join(run.log.numeric_keys(), ", "));
      throw Error(str_cat("plot: --y ", name, ": no run has '", name, "' or train_", name, ", test_", name, ", val_",
                          name, held));
    }
  }

  Canvas c;
  const std::string title = o.title.empty() ? join(o.y, ", ") + " against " + o.x : o.title;
  c.text(10, 22, title).font_size = 14;
  c.text(10, 40, "solid: training; dashed, open markers: held out (test_, val_); one colour per run", Mark::Anchor::start,
         "#555");
  const auto [x_lo, x_hi] = x_range(panels);
  double top = kTitleHeight + 20;
  for (size_t i = 0; i < panels.size(); ++i)
    top += draw_panel(c, o.y[i], panels[i], o.x, x_lo, x_hi, top) + kPanelGap;
  c.height = top - kPanelGap + 50;

  size_t longest = 0;
  for (const std::vector<Series>& panel : panels)
    for (const Series& se : panel) longest = std::max(longest, legend_text(se).size());
  c.width = std::max(kMinWidth, kLegendLeft + 36 + kCharWidth * static_cast<double>(longest) + 10);
  return c;
}

std::string plot_svg(const std::vector<PlotRun>& runs, const PlotOptions& o) { return canvas_svg(plot_canvas(runs, o)); }

void write_plot(const std::vector<PlotRun>& runs, const PlotOptions& options, const std::string& path,
                const std::string& what) {
  std::string lower = path;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (ends_with(lower, ".png"))
    write_canvas_png(plot_canvas(runs, options), path, what);
  else
    svg::write_file(path, plot_svg(runs, options), what);
}

void plot_files(const std::vector<std::string>& files, const std::vector<std::string>& labels,
                const std::string& out_path, const PlotOptions& options, std::FILE* messages) {
  MINIDL_CHECK(labels.size() <= files.size(), "plot: ", labels.size(), " --label for ", files.size(), " file(s)");
  // Default labels: the file names, with their folder when two files have the same name (gpu/cpu.jsonl).
  std::vector<std::string> plain, names;
  for (const std::string& f : files) plain.push_back(run_label(f));
  names = plain;
  for (size_t i = 0; i < files.size(); ++i)
    if (std::count(plain.begin(), plain.end(), plain[i]) > 1) {
      const std::string folder = std::filesystem::path(files[i]).parent_path().filename().string();
      names[i] = folder.empty() ? files[i] : folder + "/" + run_label(files[i]);
    }
  std::vector<PlotRun> runs;
  for (size_t i = 0; i < files.size(); ++i) {
    PlotRun run{i < labels.size() ? labels[i] : names[i], read_metrics_log(files[i])};
    for (const std::string& w : run.log.warnings) std::fprintf(messages, "plot: %s\n", w.c_str());
    runs.push_back(std::move(run));
  }
  write_plot(runs, options, out_path, "plot");
}

}  // namespace minidl
