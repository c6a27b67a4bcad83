// tools/bench/report.cpp — the table, the JSON Lines, the CSV and the bars-and-roofline SVG of
// tools/bench/report.h (the sweep's chart is tools/bench/sweep_chart.cpp).
#include "tools/bench/report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/strings.h"
#include "tools/bench/bench.h"
#include "tools/svg.h"

namespace minidl {
namespace bench {

std::string human(double value, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int p = 0;
  while (std::fabs(value) >= 1000 && p < 5) value /= 1000, ++p;
  char buf[64];
  std::snprintf(buf, sizeof(buf), value < 10 && p > 0 ? "%.2f %s%s" : "%.3g %s%s", value, prefixes[p], unit);
  return buf;
}

bool Report::loaded() const {
  const double drift = std::fabs(after.median_s - before.median_s) / std::min(after.median_s, before.median_s);
  return before.spread > kLoadedSpread || after.spread > kLoadedSpread || drift > kLoadedSpread;
}

// ---------------------------------------------------------------- the table
void print_preamble(std::FILE* out, const Report& r) {
  const MachineInfo& m = r.machine;
  std::fprintf(out, "minidl bench on %s (%s), %d CPU thread(s) (OpenMP)\n", m.device.str().c_str(),
               m.spec.name.c_str(), m.threads);
  std::fprintf(out, "roofline: %s\n", m.spec.how.c_str());
  std::fprintf(out,
               "method: inputs from one seed, the same for every kernel; a warm-up call (its output checked), then "
               "up to %d timed calls (fewer above %.2g s in all); %s; median and min\n",
               r.repeat, r.budget_seconds, r.flush.c_str());
  std::fprintf(out, "machine: %s; calibration spread %.1f%%%s\n\n", m.load.c_str(), 100 * r.before.spread,
               r.before.spread > kLoadedSpread ? " -- WARNING: the machine is busy, times will vary" : "");
}

namespace {

std::string cell(double value, const char* format) {
  if (value < 0 || !std::isfinite(value)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), format, value);
  return buf;
}

// Milliseconds: three decimals, or three significant digits below 1 ms ("0.000412").
std::string time_cell(double seconds) { return cell(seconds * 1e3, seconds >= 1e-3 ? "%.3f" : "%.3g"); }

// A rate with three significant digits, at least one decimal: "0.0031", "4.27", "85.3", "1234.5".
std::string rate_cell(double value) {
  if (value <= 0 || !std::isfinite(value)) return "-";
  return cell(value, value >= 100 ? "%.1f" : value >= 10 ? "%.2f" : "%.3g");
}

std::string error_cell(const Row& row) {
  if (row.max_abs_err < 0) return "-";
  if (row.max_abs_err == 0) return "0";
  if (std::isinf(row.max_abs_err)) return "inf";
  return cell(row.max_abs_err, "%.1e");
}

}  // namespace

void print_case(std::FILE* out, const std::vector<Row>& rows) {
  const Row& first = rows.front();
  // A long spec (an optimizer's list of parameter shapes) is cut; the label says what it is.
  const std::string shape = first.shape.size() > 48 ? first.shape.substr(0, 40) + "..." : first.shape;
  std::fprintf(out, "%s %s%s%s: %s, %s; reference %s\n", first.key.c_str(), shape.c_str(),
               first.label.empty() ? "" : " -- ", first.label.c_str(),
               first.flops > 0 ? human(first.flops, "FLOP").c_str() : "no FLOPs",
               human(first.bytes, "B").c_str(), first.reference.c_str());
  const std::string vendor = first.vendor.empty() ? "vs vendor" : "vs " + first.vendor;
  std::fprintf(out, "  %-20s %10s %10s %9s %9s %14s %8s  %s\n", "kernel", "median ms", "min ms", "GFLOP/s", "GB/s",
               vendor.c_str(), "max err", "note");
  for (const Row& row : rows) {
    if (!row.shown) continue;
    if (row.status != "ok") {
      std::fprintf(out, "  %-20s %10s %10s %9s %9s %14s %8s  %s%s%s\n", row.kernel.c_str(), "-", "-", "-", "-", "-",
                   "-", row.status.c_str(), row.note.empty() ? "" : ": ", row.note.c_str());
      continue;
    }
    std::fprintf(out, "  %-20s %10s %10s %9s %9s %14s %8s  %s\n", row.kernel.c_str(), time_cell(row.median_s).c_str(),
                 time_cell(row.min_s).c_str(), rate_cell(row.gflops()).c_str(), rate_cell(row.gbytes_per_s()).c_str(),
                 row.vs_vendor < 0 ? "-" : cell(100 * row.vs_vendor, "%.1f%%").c_str(), error_cell(row).c_str(),
                 row.note.c_str());
  }
  std::fprintf(out, "\n");
}

void print_ragged(std::FILE* out, const std::vector<Row>& rows) {
  const Row& first = rows.front();
  std::fprintf(out, "%s %s -- ragged (sizes that divide no tile; correctness only): reference naive\n",
               first.key.c_str(), first.shape.c_str());
  std::fprintf(out, "  %-20s %8s %8s  %s\n", "kernel", "max err", "rel err", "result");
  std::vector<std::string> wrong;
  for (const Row& row : rows) {
    const std::string result = row.status != "ok" ? row.status + (row.note.empty() ? "" : ": " + row.note)
                               : row.wrong        ? std::string("WRONG")
                                                  : std::string("ok");
    std::fprintf(out, "  %-20s %8s %8s  %s\n", row.kernel.c_str(), error_cell(row).c_str(),
                 row.max_rel_err < 0 ? "-" : cell(row.max_rel_err, "%.1e").c_str(), result.c_str());
    if (row.wrong) wrong.push_back(row.kernel);
  }
  if (!wrong.empty())
    std::fprintf(out,
                 "  RAGGED CHECK FAILED: %s %s wrong on %s %s, though a timed shape may look right: check the "
                 "partial tiles (loop bounds, edge guards)\n",
                 join(wrong, ", ").c_str(), wrong.size() > 1 ? "are" : "is", first.key.c_str(), first.shape.c_str());
  std::fprintf(out, "\n");
}

void print_summary(std::FILE* out, const Report& r) {
  int wrong = 0, noisy = 0;
  for (const Row& row : r.rows) {
    wrong += row.wrong && row.shown;
    noisy += row.shown && row.note.find("noisy") != std::string::npos;
  }
  std::fprintf(out, "calibration: spread %.1f%% before, %.1f%% after, median %.3f ms -> %.3f ms\n",
               100 * r.before.spread, 100 * r.after.spread, r.before.median_s * 1e3, r.after.median_s * 1e3);
  if (r.loaded())
    std::fprintf(out,
                 "WARNING: the machine was busy during this run (a calibration varied by more than %.0f%%; %s): "
                 "compare times only within this run, or run again on an idle machine\n",
                 100 * kLoadedSpread, r.machine.load.c_str());
  std::fprintf(out,
               "columns: GFLOP/s and GB/s from the counted FLOP and byte models (tools/bench/cases_*.cpp); vs "
               "VENDOR = the fastest vendor kernel's median time / this kernel's; max err = max |out - reference| "
               "(WRONG above %.0e of max |reference|, %.0e for TF32 kernels, %.0e for BF16 ones); noisy = median more "
               "than 10%% above min\n",
               kWrongRelativeError, kTf32RelativeError, kBf16RelativeError);
  if (noisy) std::fprintf(out, "%d row(s) noisy\n", noisy);
  int above_peak = 0;
  for (const Row& row : r.rows) above_peak += row.shown && row.gflops() > 1e-9 * r.machine.spec.peak_flops * 1.02;
  if (above_peak && r.machine.device.is_cpu())
    std::fprintf(out, "%d row(s) above the measured peak: the machine was busier while the peak was measured\n",
                 above_peak);
  if (wrong) std::fprintf(out, "%d kernel(s) WRONG: their output differs from the reference\n", wrong);
  std::vector<std::string> ragged_wrong;
  for (const Row& row : r.ragged)
    if (row.wrong) ragged_wrong.push_back(row.key + " " + row.kernel);
  if (!ragged_wrong.empty())
    std::fprintf(out, "%zu kernel(s) WRONG on their key's ragged shape: %s\n", ragged_wrong.size(),
                 join(ragged_wrong, ", ").c_str());
}

// ---------------------------------------------------------------- JSON Lines
namespace {
nlohmann::ordered_json number(double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(); }
nlohmann::ordered_json optional(double v) { return v < 0 ? nlohmann::ordered_json() : number(v); }
}  // namespace

void write_json_lines(const std::string& path, const Report& r) {
  std::ofstream out(path);
  MINIDL_CHECK(out.good(), "bench: cannot write ", path);
  const MachineInfo& m = r.machine;
  nlohmann::ordered_json machine = {{"record", "machine"},
                            {"device", m.device.str()},
                            {"name", m.spec.name},
                            {"threads", m.threads},
                            {"peak_gflops", number(m.spec.peak_flops * 1e-9)},
                            {"peak_gbs", number(m.spec.peak_bytes_per_second * 1e-9)},
                            {"peaks", m.spec.how},
                            {"flush", r.flush},
                            {"load", m.load},
                            {"calibration_spread_before", number(r.before.spread)},
                            {"calibration_spread_after", number(r.after.spread)},
                            {"calibration_median_ms_before", number(r.before.median_s * 1e3)},
                            {"calibration_median_ms_after", number(r.after.median_s * 1e3)},
                            {"loaded", r.loaded()},
                            {"repeat", r.repeat}};
  out << machine.dump() << "\n";
  for (const Row& row : r.rows) {
    if (!row.shown) continue;
    nlohmann::ordered_json j = {{"record", "kernel"},
                        {"device", m.device.str()},
                        {"key", row.key},
                        {"shape", row.shape},
                        {"label", row.label},
                        {"kernel", row.kernel},
                        {"status", row.status},
                        {"note", row.note},
                        {"default", row.is_default},
                        {"reference", row.reference},
                        {"flops", row.flops},
                        {"bytes", row.bytes},
                        {"runs", row.runs}};
    const bool ok = row.status == "ok";
    j["median_ms"] = ok ? number(row.median_s * 1e3) : nlohmann::ordered_json();
    j["min_ms"] = ok ? number(row.min_s * 1e3) : nlohmann::ordered_json();
    j["max_ms"] = ok ? number(row.max_s * 1e3) : nlohmann::ordered_json();
    j["spread"] = ok ? optional(row.spread) : nlohmann::ordered_json();
    j["size"] = row.size > 0 ? nlohmann::ordered_json(row.size) : nlohmann::ordered_json();
    j["gflops"] = ok && row.flops > 0 ? number(row.gflops()) : nlohmann::ordered_json();
    j["gbs"] = ok && row.bytes > 0 ? number(row.gbytes_per_s()) : nlohmann::ordered_json();
    j["vendor"] = row.vendor;
    j["vs_vendor"] = optional(row.vs_vendor);
    j["max_abs_err"] = optional(row.max_abs_err);
    j["max_rel_err"] = optional(row.max_rel_err);
    j["wrong"] = row.wrong;
    out << j.dump() << "\n";
  }
  for (const Row& row : r.ragged) {
    const nlohmann::ordered_json j = {{"record", "ragged"},
                                      {"device", m.device.str()},
                                      {"key", row.key},
                                      {"shape", row.shape},
                                      {"kernel", row.kernel},
                                      {"status", row.status},
                                      {"reference", row.reference},
                                      {"max_abs_err", optional(row.max_abs_err)},
                                      {"max_rel_err", optional(row.max_rel_err)},
                                      {"wrong", row.wrong}};
    out << j.dump() << "\n";
  }
}

// ---------------------------------------------------------------- CSV
namespace {

// A CSV field: as it is, or quoted (quotes doubled) when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// A number for CSV: "" when absent (negative, not finite).
std::string csv_number(double v) {
  if (v < 0 || !std::isfinite(v)) return "";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

}  // namespace

void write_csv(const std::string& path, const Report& r) {
  std::ofstream out(path);
  MINIDL_CHECK(out.good(), "bench: cannot write ", path);
  out << "device,key,shape,size,kernel,status,median_ms,min_ms,max_ms,spread,runs,gflops,gbs,max_rel_err,wrong\n";
  for (const Row& row : r.rows) {
    if (!row.shown) continue;
    const bool ok = row.status == "ok";
    out << csv_field(r.machine.device.str()) << ',' << csv_field(row.key) << ',' << csv_field(row.shape) << ','
        << (row.size > 0 ? std::to_string(row.size) : "") << ',' << csv_field(row.kernel) << ',' << row.status << ','
        << (ok ? csv_number(row.median_s * 1e3) : "") << ',' << (ok ? csv_number(row.min_s * 1e3) : "") << ','
        << (ok ? csv_number(row.max_s * 1e3) : "") << ',' << (ok ? csv_number(row.spread) : "") << ',' << row.runs
        << ',' << (ok && row.flops > 0 ? csv_number(row.gflops()) : "") << ','
        << (ok && row.bytes > 0 ? csv_number(row.gbytes_per_s()) : "") << ',' << csv_number(row.max_rel_err) << ','
        << (row.wrong ? "true" : "false") << '\n';
  }
  MINIDL_CHECK(out.good(), "bench: cannot write ", path);
}

// ---------------------------------------------------------------- SVG
namespace {

using svg::escape;
using svg::num;

// A colour per kernel name, the same in both panels.
std::string colour(const std::string& kernel, std::map<std::string, std::string>& palette) {
  auto it = palette.find(kernel);
  if (it != palette.end()) return it->second;
  const std::string c = svg::colour(palette.size());
  palette[kernel] = c;
  return c;
}

// A log10 axis from lo to hi (powers of ten) mapped onto [p0, p1] pixels.
struct LogAxis {
  double lo, hi, p0, p1;
  double at(double v) const { return p0 + (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * (p1 - p0); }
};

double floor_pow10(double v) { return std::pow(10.0, std::floor(std::log10(v))); }
double ceil_pow10(double v) { return std::pow(10.0, std::ceil(std::log10(v))); }

// "a; b (c; d); e" -> {"a", "b (c; d)", "e"}: the clauses of a DeviceSpec::how, split at top-level "; ".
std::vector<std::string> split_clauses(const std::string& text) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (c == ';' && depth == 0) {
      out.emplace_back();
      if (i + 1 < text.size() && text[i + 1] == ' ') ++i;
      continue;
    }
    out.back() += c;
  }
  return out;
}

}  // namespace

void write_svg(const std::string& path, const Report& r) {
  std::vector<const Row*> bars;
  for (const Row& row : r.rows)
    if (row.shown && row.status == "ok" && row.flops > 0) bars.push_back(&row);
  const MachineInfo& m = r.machine;
  const double peak_gflops = m.spec.peak_flops * 1e-9, peak_gbs = m.spec.peak_bytes_per_second * 1e-9;

  const double width = 1000, left = 330, right = 960, row_h = 14;
  const double top = 84 + 14 * static_cast<double>(split_clauses(m.spec.how).size());
  double lo = 1e30, hi = std::max(peak_gflops, 1e-30);
  for (const Row* row : bars) lo = std::min(lo, row->gflops()), hi = std::max(hi, row->gflops());
  if (bars.empty()) lo = 0.1, hi = std::max(hi, 1.0);
  const LogAxis gx{floor_pow10(lo), ceil_pow10(hi), left, right};

  // Case groups: one label line per (key, shape), then a bar per kernel.
  int lines = 0;
  std::string last_case;
  for (const Row* row : bars) {
    const std::string id = row->key + " " + row->shape;
    if (id != last_case) ++lines, last_case = id;
    ++lines;
  }
  const double bars_bottom = top + lines * row_h;
  const double roof_top = bars_bottom + 80, roof_h = 420, roof_left = 90, roof_right = 900;
  std::set<std::string> kernels;
  for (const Row* row : bars) kernels.insert(row->kernel);
  const double legend_lines = std::ceil(kernels.size() / 5.0);
  const double height = roof_top + roof_h + 80 + 16 * legend_lines;

  std::ostringstream s;
  std::map<std::string, std::string> palette;
  s << svg::open(width, height);
  s << "<text x=\"10\" y=\"20\" font-size=\"14\">minidl bench on " << escape(m.device.str()) << " ("
    << escape(m.spec.name) << "), " << m.threads << " thread(s): GFLOP/s per kernel and shape (log scale)</text>\n";
  // The peaks and how they were found, one clause per line.
  s << "<text x=\"10\" y=\"38\">peaks assumed: " << num(peak_gflops) << " GFLOP/s and " << num(peak_gbs)
    << " GB/s" << (r.loaded() ? " (WARNING: the machine was busy during this run)" : "") << "</text>\n";
  double text_y = 38;
  for (const std::string& clause : split_clauses(m.spec.how)) {
    text_y += 14;
    s << "<text x=\"10\" y=\"" << text_y << "\" fill=\"#555\">  " << escape(clause) << "</text>\n";
  }

  // Panel 1: bars.
  for (double v = gx.lo; v <= gx.hi * 1.001; v *= 10) {
    s << "<line x1=\"" << num(gx.at(v)) << "\" y1=\"" << top - 6 << "\" x2=\"" << num(gx.at(v)) << "\" y2=\""
      << bars_bottom << "\" stroke=\"#ddd\"/>\n";
    s << "<text x=\"" << num(gx.at(v)) << "\" y=\"" << top - 8 << "\" text-anchor=\"middle\">" << v << "</text>\n";
  }
  if (peak_gflops > 0)
    s << "<line x1=\"" << num(gx.at(peak_gflops)) << "\" y1=\"" << top - 6 << "\" x2=\"" << num(gx.at(peak_gflops))
      << "\" y2=\"" << bars_bottom << "\" stroke=\"#d62728\" stroke-dasharray=\"4,3\"><title>peak "
      << num(peak_gflops) << " GFLOP/s</title></line>\n";
  double y = top;
  last_case.clear();
  for (const Row* row : bars) {
    const std::string id = row->key + " " + row->shape;
    if (id != last_case) {
      s << "<text x=\"10\" y=\"" << num(y + 11) << "\" font-weight=\"bold\">" << escape(id.substr(0, 52))
        << "</text>\n";
      y += row_h;
      last_case = id;
    }
    const double x1 = gx.at(std::max(row->gflops(), gx.lo));
    s << "<text x=\"24\" y=\"" << num(y + 11) << "\">" << escape(row->kernel) << "</text>\n";
    s << "<rect x=\"" << left << "\" y=\"" << num(y + 2) << "\" width=\"" << num(std::max(1.0, x1 - left))
      << "\" height=\"" << row_h - 4 << "\" fill=\"" << colour(row->kernel, palette) << "\"><title>"
      << escape(row->key + " " + row->shape + " " + row->kernel) << ": " << num(row->gflops()) << " GFLOP/s</title></rect>\n";
    s << "<text x=\"" << num(x1 + 4) << "\" y=\"" << num(y + 11) << "\">" << num(row->gflops()) << "</text>\n";
    y += row_h;
  }

  // Panel 2: the roofline, attainable GFLOP/s = min(peak, bandwidth x FLOP/byte), with every case that
  // has a FLOP and a byte count.
  std::vector<const Row*> points;
  for (const Row* row : bars)
    if (row->bytes > 0) points.push_back(row);
  double ai_lo = 1e30, ai_hi = 0, perf_lo = 1e30;
  for (const Row* row : points) {
    ai_lo = std::min(ai_lo, row->flops / row->bytes);
    ai_hi = std::max(ai_hi, row->flops / row->bytes);
    perf_lo = std::min(perf_lo, row->gflops());
  }
  if (points.empty()) ai_lo = 0.1, ai_hi = 100, perf_lo = 0.1;
  const LogAxis ax{floor_pow10(ai_lo), ceil_pow10(std::max(ai_hi, peak_gbs > 0 ? peak_gflops / peak_gbs : 1.0) * 1.01),
                   roof_left, roof_right};
  const double perf_hi = std::max(peak_gflops, hi);
  const LogAxis ay{floor_pow10(perf_lo), ceil_pow10(perf_hi * 1.01), roof_top + roof_h, roof_top};
  s << "<text x=\"10\" y=\"" << roof_top - 30 << "\" font-size=\"14\">roofline: GFLOP/s against FLOP per byte (log "
    << "scales); the roof is min(" << num(peak_gflops) << " GFLOP/s, " << num(peak_gbs) << " GB/s x FLOP/byte)</text>\n";
  s << "<rect x=\"" << roof_left << "\" y=\"" << roof_top << "\" width=\"" << roof_right - roof_left << "\" height=\""
    << roof_h << "\" fill=\"none\" stroke=\"#888\"/>\n";
  for (double v = ax.lo; v <= ax.hi * 1.001; v *= 10)
    s << "<text x=\"" << num(ax.at(v)) << "\" y=\"" << roof_top + roof_h + 16 << "\" text-anchor=\"middle\">" << v
      << "</text>\n";
  for (double v = ay.lo; v <= ay.hi * 1.001; v *= 10)
    s << "<text x=\"" << roof_left - 6 << "\" y=\"" << num(ay.at(v) + 4) << "\" text-anchor=\"end\">" << v
      << "</text>\n";
  s << "<text x=\"" << (roof_left + roof_right) / 2 << "\" y=\"" << roof_top + roof_h + 34
    << "\" text-anchor=\"middle\">FLOP per byte (counted models)</text>\n";
  if (peak_gflops > 0 && peak_gbs > 0) {
    // The roof as a polyline: the bandwidth slope up to the ridge point, then flat.
    const double ridge = peak_gflops / peak_gbs;
    std::ostringstream poly;
    const double a0 = std::max(ax.lo, ay.lo / peak_gbs);
    poly << num(ax.at(a0)) << "," << num(ay.at(std::max(a0 * peak_gbs, ay.lo))) << " ";
    if (ridge > ax.lo && ridge < ax.hi) poly << num(ax.at(ridge)) << "," << num(ay.at(peak_gflops)) << " ";
    poly << num(ax.at(ax.hi)) << "," << num(ay.at(std::min(peak_gflops, ax.hi * peak_gbs)));
    s << "<polyline points=\"" << poly.str() << "\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\"/>\n";
  }
  for (const Row* row : points) {
    const double ai = row->flops / row->bytes;
    s << "<circle cx=\"" << num(ax.at(ai)) << "\" cy=\"" << num(ay.at(std::max(row->gflops(), ay.lo))) << "\" r=\"4\" fill=\""
      << colour(row->kernel, palette) << "\" fill-opacity=\"0.8\"><title>"
      << escape(row->key + " " + row->shape + " " + row->kernel) << ": " << num(row->gflops()) << " GFLOP/s at "
      << ai << " FLOP/byte</title></circle>\n";
  }
  // The legend.
  double lx = roof_left, ly = roof_top + roof_h + 60;
  for (const auto& [kernel, c] : palette) {
    s << "<rect x=\"" << num(lx) << "\" y=\"" << num(ly - 9) << "\" width=\"10\" height=\"10\" fill=\"" << c << "\"/>\n";
    s << "<text x=\"" << num(lx + 14) << "\" y=\"" << num(ly) << "\">" << escape(kernel) << "</text>\n";
    lx += 150;
    if (lx > roof_right - 100) lx = roof_left, ly += 16;
  }
  s << svg::close();
  svg::write_file(path, s.str(), "bench --svg");
}

}  // namespace bench
}  // namespace minidl
