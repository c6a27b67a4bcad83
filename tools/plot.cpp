// tools/plot.cpp — the curves of tools/plot.h.
//
// Layout: a title line, then one panel per --y name, stacked. A panel is a frame with the plot area on the
// left (y ticks and grid, x ticks below, both axis labels) and its legend on the right: one entry per
// series (a run's key), with the series' colour and line style.
#include "tools/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "core/strings.h"
#include "tools/svg.h"

namespace minidl {

namespace {

using svg::escape;
using svg::num;

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

// One curve: a run's key against x.
struct Series {
  std::string label;  // "run: key"
  std::string colour;
  bool held_out = false;  // test_ or val_: dashed
  std::vector<std::pair<double, double>> points;  // (x, value), sorted by x
};

std::string value_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

std::vector<Series> series_for(const std::string& name, const std::vector<PlotRun>& runs, const std::string& x) {
  std::vector<Series> out;
  for (size_t r = 0; r < runs.size(); ++r)
    for (const std::string& key : keys_for(name, runs[r].log)) {
      Series s;
      s.label = runs[r].label + ": " + key;
      s.colour = svg::colour(r);
      s.held_out = starts_with(key, "test_") || starts_with(key, "val_");
      for (const MetricsRecord& rec : runs[r].log.records)
        if (rec.has(x) && rec.has(key)) s.points.emplace_back(rec.get(x), rec.get(key));
      std::stable_sort(s.points.begin(), s.points.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      if (!s.points.empty()) out.push_back(std::move(s));
    }
  return out;
}

// One panel whose plot area starts at `top`; returns the height it took.
double draw_panel(std::ostringstream& s, const std::string& name, const std::vector<Series>& series,
                  const std::string& x, double top) {
  const double height = std::max(kPanelHeight, kLegendLine * static_cast<double>(series.size()) + 8);
  const double bottom = top + height;
  double x_lo = 1e300, x_hi = -1e300, y_lo = 1e300, y_hi = -1e300;
  for (const Series& se : series)
    for (const auto& [px, py] : se.points) {
      x_lo = std::min(x_lo, px), x_hi = std::max(x_hi, px);
      y_lo = std::min(y_lo, py), y_hi = std::max(y_hi, py);
    }
  const svg::Ticks xt = svg::nice_ticks(x_lo, x_hi, kMaxTicks, /*integers=*/x == "epoch" || x == "step");
  const svg::Ticks yt = svg::nice_ticks(y_lo, y_hi, kMaxTicks / 2 + 2);
  const svg::LinearAxis ax{xt.lo, xt.hi, kPlotLeft + kInset, kPlotRight - kInset},
      ay{yt.lo, yt.hi, bottom - kInset, top + kInset};

  std::vector<std::string> keys;
  for (const Series& se : series) {
    const std::string key = se.label.substr(se.label.rfind(": ") + 2);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  s << "<text x=\"" << kPlotLeft << "\" y=\"" << num(top - 10) << "\" font-size=\"13\" font-weight=\"bold\">"
    << escape(name) << "</text><text x=\"" << num(kPlotLeft + 12 + 8.0 * name.size()) << "\" y=\"" << num(top - 10)
    << "\" fill=\"#555\">" << escape(join(keys, ", ")) << "</text>\n";
  // Grid, ticks and labels.
  for (double v : yt.values) {
    s << "<line x1=\"" << kPlotLeft << "\" y1=\"" << num(ay.at(v)) << "\" x2=\"" << kPlotRight << "\" y2=\""
      << num(ay.at(v)) << "\" stroke=\"#e5e5e5\"/>\n";
    s << "<text x=\"" << kPlotLeft - 6 << "\" y=\"" << num(ay.at(v) + 4) << "\" text-anchor=\"end\">"
      << yt.label(v) << "</text>\n";
  }
  for (double v : xt.values) {
    s << "<line x1=\"" << num(ax.at(v)) << "\" y1=\"" << num(top) << "\" x2=\"" << num(ax.at(v)) << "\" y2=\""
      << num(bottom + 4) << "\" stroke=\"#e5e5e5\"/>\n";
    s << "<text x=\"" << num(ax.at(v)) << "\" y=\"" << num(bottom + 17) << "\" text-anchor=\"middle\">"
      << xt.label(v) << "</text>\n";
  }
  s << "<rect x=\"" << kPlotLeft << "\" y=\"" << num(top) << "\" width=\"" << kPlotRight - kPlotLeft
    << "\" height=\"" << num(height) << "\" fill=\"none\" stroke=\"#888\"/>\n";
  s << "<text x=\"" << num((kPlotLeft + kPlotRight) / 2) << "\" y=\"" << num(bottom + 34)
    << "\" text-anchor=\"middle\">" << escape(x) << "</text>\n";
  const double label_x = 22, label_y = top + height / 2;
  s << "<text x=\"" << label_x << "\" y=\"" << num(label_y) << "\" text-anchor=\"middle\" transform=\"rotate(-90 "
    << label_x << " " << num(label_y) << ")\">" << escape(name) << "</text>\n";

  // The curves: a line through the points (none for a run of one epoch), a marker at each.
  for (const Series& se : series) {
    const std::string dash = se.held_out ? " stroke-dasharray=\"6,4\"" : "";
    if (se.points.size() > 1) {
      s << "<polyline fill=\"none\" stroke=\"" << se.colour << "\" stroke-width=\"2\"" << dash << " points=\"";
      for (size_t i = 0; i < se.points.size(); ++i)
        s << (i ? " " : "") << num(ax.at(se.points[i].first)) << "," << num(ay.at(se.points[i].second));
      s << "\"/>\n";
    }
    for (const auto& [px, py] : se.points)
      s << "<circle cx=\"" << num(ax.at(px)) << "\" cy=\"" << num(ay.at(py)) << "\" r=\"3\" fill=\""
        << (se.held_out ? "white" : se.colour) << "\" stroke=\"" << se.colour << "\"><title>" << escape(se.label)
        << " at " << escape(x) << " " << value_text(px) << ": " << value_text(py) << "</title></circle>\n";
  }

  // The legend: a sample of each series' line and marker, then its name.
  double ly = top + 12;
  for (const Series& se : series) {
    const std::string dash = se.held_out ? " stroke-dasharray=\"6,4\"" : "";
    s << "<line x1=\"" << kLegendLeft << "\" y1=\"" << num(ly - 4) << "\" x2=\"" << kLegendLeft + 28 << "\" y2=\""
      << num(ly - 4) << "\" stroke=\"" << se.colour << "\" stroke-width=\"2\"" << dash << "/>\n";
    s << "<circle cx=\"" << kLegendLeft + 14 << "\" cy=\"" << num(ly - 4) << "\" r=\"3\" fill=\""
      << (se.held_out ? "white" : se.colour) << "\" stroke=\"" << se.colour << "\"/>\n";
    s << "<text x=\"" << kLegendLeft + 36 << "\" y=\"" << num(ly) << "\">" << escape(se.label) << "</text>\n";
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

std::string run_label(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  for (const std::string ext : {".jsonl", ".json"})
    if (name.size() > ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0) {
      name.resize(name.size() - ext.size());
      break;
    }
  return name;
}

std::string plot_svg(const std::vector<PlotRun>& runs, const PlotOptions& o) {
  MINIDL_CHECK(!runs.empty(), "plot: no metrics files given");
  MINIDL_CHECK(!o.y.empty(), "plot: --y names no metric");
  for (const PlotRun& run : runs) {
    bool has_x = false;
    for (const MetricsRecord& r : run.log.records) has_x = has_x || r.has(o.x);
    MINIDL_CHECK(has_x, run.log.path, ": no '", o.x, "' in its records, so nothing to draw against --x ", o.x,
                 " (its keys: ", join(run.log.numeric_keys(), ", "), ")");
  }
  std::vector<std::vector<Series>> panels;
  for (const std::string& name : o.y) {
    panels.push_back(series_for(name, runs, o.x));
    if (panels.back().empty()) {
      std::string held;
      for (const PlotRun& run : runs) held += str_cat("; ", run.log.path, " has ", join(run.log.numeric_keys(), ", "));
      throw Error(str_cat("plot: --y ", name, ": no run has '", name, "' or train_", name, ", test_", name, ", val_",
                          name, held));
    }
  }

  std::ostringstream body;
  double top = kTitleHeight + 20;
  for (size_t i = 0; i < panels.size(); ++i) top += draw_panel(body, o.y[i], panels[i], o.x, top) + kPanelGap;
  const double height = top - kPanelGap + 50;

  size_t longest = 0;
  for (const std::vector<Series>& panel : panels)
    for (const Series& se : panel) longest = std::max(longest, se.label.size());
  const double width = std::max(kMinWidth, kLegendLeft + 36 + kCharWidth * static_cast<double>(longest) + 10);

  std::ostringstream s;
  s << svg::open(width, height);
  const std::string title = o.title.empty() ? join(o.y, ", ") + " against " + o.x : o.title;
  s << "<text x=\"10\" y=\"22\" font-size=\"14\">" << escape(title) << "</text>\n";
  s << "<text x=\"10\" y=\"40\" fill=\"#555\">solid: training; dashed, open markers: held out (test_, val_); "
    << "one colour per run</text>\n";
  s << body.str() << svg::close();
  return s.str();
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
  svg::write_file(out_path, plot_svg(runs, options), "plot");
}

}  // namespace minidl
