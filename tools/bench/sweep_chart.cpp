// tools/bench/sweep_chart.cpp — the chart of `minidl bench --shape-sweep ... --svg FILE` (tools/bench/report.h
// write_sweep_svg): how fast each kernel is as the problem grows.
//
// Layout: a title and a line saying what n is, then one plot area: x the size n (log2 for a sweep of xF
// steps, linear for +S), y GFLOP/s on a log10 scale (GB/s for keys that count no FLOPs), the device's
// peak as a dashed grey line, one <path> per kernel through its timed sizes (a gap where it declined or
// was skipped) with a marker per size whose tooltip gives the numbers, and the legend on the right.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/strings.h"
#include "tools/bench/report.h"
#include "tools/svg.h"

namespace minidl {
namespace bench {

namespace {

using svg::escape;
using svg::num;

constexpr double kWidth = 980, kHeight = 560;
constexpr double kLeft = 90, kRight = 700, kTop = 80, kBottom = 480;  // the plot area
constexpr double kLegendLeft = 725;

// One kernel's line: (size, rate, median seconds) at each size it was timed.
struct SweepSeries {
  std::string label;
  std::vector<int64_t> sizes;  // every size of the sweep, in order, for the gaps
  std::map<int64_t, std::pair<double, double>> points;
};

// log_base(v) as a position between lo and hi.
struct Axis {
  double lo, hi, p0, p1;
  bool log;
  double at(double v) const {
    const double t = log ? (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo)) : (v - lo) / (hi - lo);
    return p0 + t * (p1 - p0);
  }
};

std::string rate_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

// A power of ten on the y axis: "0.01", "1", "1000".
std::string tick_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), v >= 1 ? "%.0f" : "%g", v);
  return buf;
}

}  // namespace

void write_sweep_svg(const std::string& path, const Report& r, const std::string& spec, bool log_x) {
  std::vector<const Row*> rows;
  for (const Row& row : r.rows)
    if (row.shown && row.size > 0) rows.push_back(&row);
  const bool flops = !rows.empty() && std::all_of(rows.begin(), rows.end(), [](const Row* row) { return row->flops > 0; });
  const std::string unit = flops ? "GFLOP/s" : "GB/s";
  const auto rate = [&](const Row& row) { return flops ? row.gflops() : row.gbytes_per_s(); };
  const MachineInfo& m = r.machine;
  const double peak = (flops ? m.spec.peak_flops : m.spec.peak_bytes_per_second) * 1e-9;

  // The series, in the order of the rows; a label per kernel, with its key when the op has several.
  std::vector<std::string> keys;
  std::vector<int64_t> sizes;
  for (const Row* row : rows) {
    if (std::find(keys.begin(), keys.end(), row->key) == keys.end()) keys.push_back(row->key);
    if (std::find(sizes.begin(), sizes.end(), row->size) == sizes.end()) sizes.push_back(row->size);
  }
  std::sort(sizes.begin(), sizes.end());
  std::vector<SweepSeries> series;
  double lo = 1e300, hi = peak > 0 ? peak : 0;
  for (const Row* row : rows) {
    const std::string label = keys.size() > 1 ? row->key + " " + row->kernel : row->kernel;
    auto it = std::find_if(series.begin(), series.end(), [&](const SweepSeries& s) { return s.label == label; });
    if (it == series.end()) {
      series.push_back({label, sizes, {}});
      it = series.end() - 1;
    }
    if (row->status != "ok" || rate(*row) <= 0) continue;
    it->points[row->size] = {rate(*row), row->median_s};
    lo = std::min(lo, rate(*row)), hi = std::max(hi, rate(*row));
  }
  if (lo > hi) lo = 0.1, hi = std::max(hi, 1.0);
  const double y_lo = std::pow(10.0, std::floor(std::log10(lo))), y_hi = std::pow(10.0, std::ceil(std::log10(hi * 1.01)));
  const double x_min = sizes.empty() ? 1 : static_cast<double>(sizes.front());
  const double x_max = sizes.empty() ? 2 : static_cast<double>(sizes.back());
  const double pad = log_x ? 1.15 : 0;  // markers off the frame
  const Axis ax = log_x ? Axis{x_min / pad, std::max(x_max * pad, x_min * 2), kLeft, kRight, true}
                        : Axis{x_min - std::max(1.0, (x_max - x_min) * 0.04), x_max + std::max(1.0, (x_max - x_min) * 0.04),
                               kLeft, kRight, false};
  const Axis ay{y_lo, y_hi, kBottom, kTop, true};

  std::ostringstream s;
  s << svg::open(kWidth, kHeight);
  s << "<text x=\"10\" y=\"22\" font-size=\"14\">minidl bench on " << escape(m.device.str()) << " ("
    << escape(m.spec.name) << "), " << m.threads << " thread(s): " << escape(join(keys, ", ")) << ", " << unit
    << " against size</text>\n";
  s << "<text x=\"10\" y=\"40\" fill=\"#555\">shape " << escape(spec) << " with n = "
    << escape(join(sizes, ", ", [](int64_t n) { return std::to_string(n); })) << "; median of the timed calls"
    << (r.loaded() ? " (WARNING: the machine was busy during this run)" : "") << "</text>\n";
  if (peak > 0)
    s << "<text x=\"10\" y=\"56\" fill=\"#555\">dashed grey line: the peak the bench measured, " << num(peak) << " " << unit
      << "</text>\n";

  // Grid and ticks: a y line per power of ten, an x tick per size.
  for (double v = y_lo; v <= y_hi * 1.001; v *= 10) {
    s << "<line x1=\"" << kLeft << "\" y1=\"" << num(ay.at(v)) << "\" x2=\"" << kRight << "\" y2=\"" << num(ay.at(v))
      << "\" stroke=\"#e5e5e5\"/>\n";
    s << "<text x=\"" << kLeft - 6 << "\" y=\"" << num(ay.at(v) + 4) << "\" text-anchor=\"end\">" << tick_text(v)
      << "</text>\n";
  }
  for (int64_t n : sizes) {
    const double x = ax.at(static_cast<double>(n));
    s << "<line x1=\"" << num(x) << "\" y1=\"" << kTop << "\" x2=\"" << num(x) << "\" y2=\"" << kBottom + 4
      << "\" stroke=\"#e5e5e5\"/>\n";
    s << "<text x=\"" << num(x) << "\" y=\"" << kBottom + 17 << "\" text-anchor=\"middle\">" << n << "</text>\n";
  }
  s << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kRight - kLeft << "\" height=\""
    << kBottom - kTop << "\" fill=\"none\" stroke=\"#888\"/>\n";
  s << "<text x=\"" << (kLeft + kRight) / 2 << "\" y=\"" << kBottom + 36 << "\" text-anchor=\"middle\">size n (elements; n in "
    << escape(spec) << ", " << (log_x ? "log2 scale" : "linear scale") << ")</text>\n";
  const double label_x = 24, label_y = (kTop + kBottom) / 2;
  s << "<text x=\"" << label_x << "\" y=\"" << num(label_y) << "\" text-anchor=\"middle\" transform=\"rotate(-90 "
    << label_x << " " << num(label_y) << ")\">" << unit << " (log scale)</text>\n";
  if (peak > 0 && peak >= y_lo && peak <= y_hi)
    s << "<line x1=\"" << kLeft << "\" y1=\"" << num(ay.at(peak)) << "\" x2=\"" << kRight << "\" y2=\""
      << num(ay.at(peak)) << "\" stroke=\"#333\" stroke-dasharray=\"6,4\"><title>peak " << num(peak) << " " << unit
      << "</title></line>\n";

  // The lines, then the legend.
  double ly = kTop + 10;
  for (size_t i = 0; i < series.size(); ++i) {
    const SweepSeries& se = series[i];
    const std::string colour = svg::colour(i);
    std::string d;
    bool pen_down = false;
    for (int64_t n : se.sizes) {
      const auto p = se.points.find(n);
      if (p == se.points.end()) {
        pen_down = false;  // a gap: declined or skipped at this size
        continue;
      }
      d += str_cat(d.empty() ? "" : " ", pen_down ? "L" : "M", num(ax.at(static_cast<double>(n))), " ",
                   num(ay.at(p->second.first)));
      pen_down = true;
    }
    if (!d.empty())
      s << "<path d=\"" << d << "\" fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\"><title>"
        << escape(se.label) << "</title></path>\n";
    for (const auto& [n, point] : se.points)
      s << "<circle cx=\"" << num(ax.at(static_cast<double>(n))) << "\" cy=\"" << num(ay.at(point.first))
        << "\" r=\"3\" fill=\"" << colour << "\"><title>" << escape(se.label) << " at n = " << n << ": "
        << rate_text(point.first) << " " << unit << ", " << rate_text(point.second * 1e3) << " ms</title></circle>\n";
    s << "<line x1=\"" << kLegendLeft << "\" y1=\"" << num(ly - 4) << "\" x2=\"" << kLegendLeft + 24 << "\" y2=\""
      << num(ly - 4) << "\" stroke=\"" << colour << "\" stroke-width=\"2\"/>\n";
    s << "<text x=\"" << kLegendLeft + 30 << "\" y=\"" << num(ly) << "\">" << escape(se.label)
      << (se.points.empty() ? " (not timed at any size)" : "") << "</text>\n";
    ly += 16;
  }
  s << svg::close();
  svg::write_file(path, s.str(), "bench --svg");
}

}  // namespace bench
}  // namespace minidl
