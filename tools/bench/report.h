// tools/bench/report.h — the results of `minidl bench` and their three forms: the table printed while it
// runs, JSON Lines (one record per line: the machine first, then one per kernel and shape), and an SVG of
// GFLOP/s bars and a roofline.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tools/bench/machine.h"

namespace minidl {
namespace bench {

// One kernel at one shape.
struct Row {
  std::string key, shape, label, kernel;
  std::string status;           // "ok", "declined", "skipped"
  std::string note;             // why skipped; "default", "reference", "WRONG", "noisy"
  bool is_default = false;      // the kernel dispatch tries first for this key
  bool shown = true;            // false: timed only for the vendor column (--kernel left it out)
  std::string reference;        // the CPU kernel the outputs were compared with, and why that one
  double flops = 0, bytes = 0;  // of one call (tools/bench/case.h)
  int64_t size = 0;             // the --shape-sweep size that made the shape; 0 outside a sweep
  double median_s = 0, min_s = 0, max_s = 0;
  int runs = 0;
  // (median - min) / min of the timed calls: how far the typical call sits above the best one. The
  // "noisy" note (above 10%) and the --baseline verdicts read it; -1 when fewer than kSpreadRuns calls ran.
  double spread = -1;
  std::string vendor;       // the fastest vendor kernel of this key and shape on the device, "" if none
  double vs_vendor = -1;    // its median time / this kernel's (-1: no vendor)
  double max_abs_err = -1;  // max |got - reference| over the outputs (-1: not compared)
  double max_rel_err = -1;  // the same divided by max |reference|
  bool wrong = false;       // max_rel_err > kWrongRelativeError

  double gflops() const { return flops > 0 && median_s > 0 ? flops / median_s * 1e-9 : 0; }
  double gbytes_per_s() const { return bytes > 0 && median_s > 0 ? bytes / median_s * 1e-9 : 0; }
};

// The fewest timed calls whose spread says something (with one or two, the median is one of them), and
// the spread above which a row is noted "noisy".
constexpr int kSpreadRuns = 3;
constexpr double kNoisySpread = 0.10;

struct Report {
  MachineInfo machine;
  std::string flush;
  Calibration before, after;
  int repeat = 0;
  double budget_seconds = 0;
  std::vector<Row> rows;
  std::vector<Row> ragged;  // every kernel once on its key's ragged shape (tools/bench/ragged.cpp)
  bool loaded() const;  // a calibration varied by more than kLoadedSpread, or drifted by that much
};

// The lines printed before the first case: device, peaks, method, load.
void print_preamble(std::FILE* out, const Report& report);
// One case (a key at a shape): a header line, the column names, one line per shown kernel.
void print_case(std::FILE* out, const std::vector<Row>& rows);
// The closing lines: the calibration after the run, the load warning, what the columns mean.
void print_summary(std::FILE* out, const Report& report);

// The ragged check of one key: a header line naming the shape, one line per kernel (its error, ok / WRONG /
// declined), and a FAILED line naming the wrong kernels when there are any.
void print_ragged(std::FILE* out, const std::vector<Row>& rows);

void write_json_lines(const std::string& path, const Report& report);
void write_svg(const std::string& path, const Report& report);
// CSV, one line per shown kernel and shape (a header line first): key, shape, size, kernel, status, times,
// rates, error. Fields with a comma or a quote are quoted.
void write_csv(const std::string& path, const Report& report);
// --shape-sweep with --svg: GFLOP/s (GB/s for keys that count no FLOPs) against the sweep size n of each
// row (log scales; x linear for a sweep of +S steps), one line per kernel (and key, when the op has
// several), the device's peak dashed (tools/bench/sweep_chart.cpp). `spec` is the sweep spec ("nxnxn").
void write_sweep_svg(const std::string& path, const Report& report, const std::string& spec, bool log_x);

// "1.23 GFLOP", "45.6 MB": a count with a unit prefix.
std::string human(double value, const char* unit);

}  // namespace bench
}  // namespace minidl
