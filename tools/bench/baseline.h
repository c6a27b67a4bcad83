// tools/bench/baseline.h — `minidl bench --baseline OLD.json [--regression-threshold PCT]`: this run
// against an earlier `minidl bench --json` file, kernel by kernel, with a verdict that knows the noise.
//
// A case is (key, shape, kernel, device). For each case timed in both runs: the old and new median, the
// change (new / old - 1), and a verdict:
//   noise   = the larger of the two kernels' spreads, (median - min) / min of the timed calls (the same
//             measure as the table's "noisy" note: how far a typical call sat above the best one), and the
//             machine's drift: (max - min) / min of the calibration medians of both runs (a fixed workload
//             timed before and after each run; load that came or went between the runs moves every kernel
//             by about that much, which no kernel's own spread shows)
//   slower  new > old x (1 + noise)          faster  new x (1 + noise) < old          else same
//   REGRESSION: slower by more than the threshold too (new > old x (1 + max(noise, threshold)));
//   run_bench then returns kExitRegression (3).
// A record without a spread (a file written before the field existed, or a kernel timed fewer than 3
// times) gets its spread from its median and min when it ran at least 3 times, else kDefaultSpread. A
// file without calibration medians (written before they were recorded) adds no drift.
// Cases in one run only are listed as new or missing, and cases timed in one run but declined or
// skipped in the other as not compared: none of these is an error.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "tools/bench/bench.h"
#include "tools/bench/report.h"

namespace minidl {
namespace bench {

// The spread assumed for a record that measured none: the table's "noisy" line.
constexpr double kDefaultSpread = kNoisySpread;

// One kernel at one shape, as the comparison sees it: a "kernel" record of a --json file or a row of
// this run.
struct TimedCase {
  std::string device, key, shape, kernel;
  std::string status;  // "ok", "declined", "skipped"
  double median_ms = -1, min_ms = -1;
  double spread = -1;  // -1: not measured (see above)
  int runs = 0;
  double noise() const;  // spread, or what the header says instead
  std::string id() const { return key + " " + shape + " " + kernel + " on " + device; }
};

struct BaselineFile {
  std::string path;
  std::string device, machine;  // of its machine record: "cpu", "Intel(R) Xeon(R) Processor"
  int threads = 0;
  bool loaded = false;  // its calibration said the machine was busy
  std::vector<double> calibration_ms;  // the calibration's median before and after the run (none: not recorded)
  std::vector<TimedCase> cases;
};

// Reads a `minidl bench --json` file. Throws an Error of one line naming the file for anything else:
//   bench --baseline 'old.json': cannot open it (No such file or directory)
//   bench --baseline 'old.json': line 3 is not JSON (parse error at byte 17)
//   bench --baseline 'old.json': not a `minidl bench --json` file (its first line is not a machine record)
//   bench --baseline 'old.json': line 4: a kernel record without "median_ms"
// Records of other kinds ("ragged") are skipped. `flag` names the file's flag in the messages.
BaselineFile read_baseline(const std::string& path, const std::string& flag = "--baseline");

// This run's shown rows, as cases on its device.
std::vector<TimedCase> timed_cases(const Report& report);

// The machine's drift between two runs: (max - min) / min of their calibration medians together; 0 when
// either run has none.
double calibration_drift(const std::vector<double>& before_ms, const std::vector<double>& now_ms);

// When the command line chose no cases (no --op, --shape, --shape-sweep or --kernel), runs the baseline's:
// its keys (as keys, not ops), its shapes, its kernels that this build still has on the device, and its
// device when o.device is "". Otherwise leaves o alone but for the device.
void use_baseline_cases(const BaselineFile& baseline, BenchOptions& o);

struct CaseComparison {
  TimedCase before, now;
  double change = 0;  // now / before - 1 of the medians
  double noise = 0;  // the larger of the two kernels' noise() and the machine's drift
  std::string verdict;  // "faster", "slower", "same"
  bool regression = false;
};

struct BaselineComparison {
  std::vector<CaseComparison> compared;  // in this run's order
  std::vector<TimedCase> only_now;       // new: not in the baseline
  std::vector<TimedCase> only_before;    // missing: in the baseline, not in this run
  std::vector<std::pair<TimedCase, TimedCase>> not_compared;  // in both, not timed in one
  double machine_drift = 0;
  int count(const std::string& verdict) const;
  int regressions() const;
};

// The comparison of `now` with `before`, regression_threshold a fraction (0.10), machine_drift from
// calibration_drift.
BaselineComparison compare_with_baseline(const std::vector<TimedCase>& before, const std::vector<TimedCase>& now,
                                         double regression_threshold, double machine_drift = 0);

// The table of the comparison, the new and missing cases, and a summary line.
void print_comparison(std::FILE* out, const BaselineFile& baseline, const BaselineComparison& c,
                      double regression_threshold);

// `minidl bench --baseline OLD.json --against NEW.json`: the comparison of two saved runs, printed to out;
// returns kExitRegression when a kernel regressed, else 0. Throws an Error naming a file it cannot read.
int compare_files(const std::string& baseline_path, const std::string& against_path, double regression_threshold,
                  std::FILE* out);

}  // namespace bench
}  // namespace minidl
