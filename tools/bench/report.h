// tools/bench/report.h — the results of `minidl bench` and their three forms: the table printed while it
// runs, JSON Lines (one record per line: the machine first, then one per kernel and shape), and an SVG of
// GFLOP/s bars and a roofline.
#pragma once
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
  double median_s = 0, min_s = 0;
  int runs = 0;
  std::string vendor;       // the fastest vendor kernel of this key and shape on the device, "" if none
  double vs_vendor = -1;    // its median time / this kernel's (-1: no vendor)
  double max_abs_err = -1;  // max |got - reference| over the outputs (-1: not compared)
  double max_rel_err = -1;  // the same divided by max |reference|
  bool wrong = false;       // max_rel_err > kWrongRelativeError

  double gflops() const { return flops > 0 && median_s > 0 ? flops / median_s * 1e-9 : 0; }
  double gbytes_per_s() const { return bytes > 0 && median_s > 0 ? bytes / median_s * 1e-9 : 0; }
};

struct Report {
  MachineInfo machine;
  std::string flush;
  Calibration before, after;
  int repeat = 0;
  double budget_seconds = 0;
  std::vector<Row> rows;
  bool loaded() const;  // a calibration varied by more than kLoadedSpread, or drifted by that much
};

// The lines printed before the first case: device, peaks, method, load.
void print_preamble(std::FILE* out, const Report& report);
// One case (a key at a shape): a header line, the column names, one line per shown kernel.
void print_case(std::FILE* out, const std::vector<Row>& rows);
// The closing lines: the calibration after the run, the load warning, what the columns mean.
void print_summary(std::FILE* out, const Report& report);

void write_json_lines(const std::string& path, const Report& report);
void write_svg(const std::string& path, const Report& report);

// "1.23 GFLOP", "45.6 MB": a count with a unit prefix.
std::string human(double value, const char* unit);

}  // namespace bench
}  // namespace minidl
