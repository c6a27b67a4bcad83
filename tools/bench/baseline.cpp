// tools/bench/baseline.cpp — reading a --json file as a baseline, and the comparison of tools/bench/baseline.h.
#include "tools/bench/baseline.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/dispatch.h"
#include "core/error.h"
#include "core/strings.h"

namespace minidl {
namespace bench {

double TimedCase::noise() const {
  if (spread >= 0) return spread;
  if (runs >= kSpreadRuns && min_ms > 0 && median_ms >= min_ms) return (median_ms - min_ms) / min_ms;
  return kDefaultSpread;
}

double calibration_drift(const std::vector<double>& before_ms, const std::vector<double>& now_ms) {
  if (before_ms.empty() || now_ms.empty()) return 0;
  std::vector<double> all = before_ms;
  all.insert(all.end(), now_ms.begin(), now_ms.end());
  const auto [lo, hi] = std::minmax_element(all.begin(), all.end());
  return *lo > 0 ? (*hi - *lo) / *lo : 0;
}

namespace {

// The error for file `path`: one line.
[[noreturn]] void refuse(const std::string& flag, const std::string& path, const std::string& why) {
  throw Error(str_cat("bench ", flag, " '", path, "': ", why));
}

// Where a record was read: for the messages.
struct Place {
  std::string flag, path;
  size_t line = 0;
};

std::string text_field(const nlohmann::json& r, const char* name, const Place& at) {
  const auto it = r.find(name);
  if (it == r.end() || !it->is_string())
    refuse(at.flag, at.path, str_cat("line ", at.line, ": a ", r.value("record", std::string("kernel")), " record without \"",
                                     name, "\" (a string)"));
  return it->get<std::string>();
}

// A number, or -1 for null or a missing field; anything else is refused.
double number_field(const nlohmann::json& r, const char* name, const Place& at) {
  const auto it = r.find(name);
  if (it == r.end() || it->is_null()) return -1;
  if (!it->is_number()) refuse(at.flag, at.path, str_cat("line ", at.line, ": \"", name, "\" is not a number"));
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < 0)
    refuse(at.flag, at.path, str_cat("line ", at.line, ": \"", name, "\" is ", v, ", not a time or a count"));
  return v;
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%+.1f%%", 100 * fraction);
  return buf;
}

std::string milliseconds(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), ms >= 1 ? "%.3f" : "%.3g", ms);
  return buf;
}

}  // namespace

BaselineFile read_baseline(const std::string& path, const std::string& flag) {
  Place at{flag, path, 0};
  if (std::filesystem::is_directory(path)) refuse(flag, path, "is a folder, not a `minidl bench --json` file");
  std::ifstream in(path);
  if (!in.good()) refuse(flag, path, str_cat("cannot open it (", std::strerror(errno), ")"));
  BaselineFile b;
  b.path = path;
  std::string text;
  bool have_machine = false;
  while (std::getline(in, text)) {
    ++at.line;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json r;
    try {
      r = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      refuse(flag, path, str_cat("line ", at.line, " is not JSON (parse error at byte ", e.byte, ")"));
    }
    if (!r.is_object() || !r.contains("record") || !r["record"].is_string())
      refuse(flag, path, str_cat("line ", at.line, " is not a `minidl bench --json` record (no \"record\" field)"));
    const std::string record = r["record"].get<std::string>();
    if (!have_machine) {
      if (record != "machine")
        refuse(flag, path, "not a `minidl bench --json` file (its first record is not a machine record)");
      have_machine = true;
      b.device = text_field(r, "device", at);
      b.machine = r.contains("name") && r["name"].is_string() ? r["name"].get<std::string>() : "";
      b.threads = r.contains("threads") && r["threads"].is_number_integer() ? r["threads"].get<int>() : 0;
      b.loaded = r.contains("loaded") && r["loaded"].is_boolean() && r["loaded"].get<bool>();
      for (const char* field : {"calibration_median_ms_before", "calibration_median_ms_after"}) {
        const double ms = number_field(r, field, at);
        if (ms > 0) b.calibration_ms.push_back(ms);
      }
      continue;
    }
    if (record != "kernel") continue;  // "ragged", and kinds a later version may write
    TimedCase c;
    c.device = r.contains("device") ? text_field(r, "device", at) : b.device;
    c.key = text_field(r, "key", at);
    c.shape = text_field(r, "shape", at);
    c.kernel = text_field(r, "kernel", at);
    c.status = text_field(r, "status", at);
    c.median_ms = number_field(r, "median_ms", at);
    c.min_ms = number_field(r, "min_ms", at);
    c.spread = number_field(r, "spread", at);
    c.runs = static_cast<int>(std::min(1e9, std::max(0.0, number_field(r, "runs", at))));
    if (c.status == "ok" && !(c.median_ms > 0))
      refuse(flag, path, str_cat("line ", at.line, ": a kernel record with status \"ok\" and no \"median_ms\" above 0"));
    b.cases.push_back(c);
  }
  if (in.bad()) refuse(flag, path, str_cat("cannot read it (", std::strerror(errno), ")"));
  if (!have_machine) refuse(flag, path, "is empty, not a `minidl bench --json` file");
  return b;
}

std::vector<TimedCase> timed_cases(const Report& report) {
  std::vector<TimedCase> out;
  for (const Row& row : report.rows) {
    if (!row.shown) continue;
    TimedCase c;
    c.device = report.machine.device.str();
    c.key = row.key, c.shape = row.shape, c.kernel = row.kernel, c.status = row.status;
    if (row.status == "ok") c.median_ms = row.median_s * 1e3, c.min_ms = row.min_s * 1e3;
    c.spread = row.spread;
    c.runs = row.runs;
    out.push_back(c);
  }
  return out;
}

void use_baseline_cases(const BaselineFile& b, BenchOptions& o) {
  if (o.device.empty()) o.device = b.device.empty() ? "cpu" : b.device;
  if (!o.ops.empty() || !o.shapes.empty() || !o.sweep.empty() || !o.kernels.empty()) return;
  MINIDL_CHECK(!b.cases.empty(), "bench --baseline '", b.path,
               "': it has no kernel records, so no cases to run again (name some with --op or --shape)");
  const DeviceType device = Device::parse(o.device).type;
  std::set<std::string> keys, shapes, in_baseline, registered;
  for (const TimedCase& c : b.cases) {
    if (keys.insert(c.key).second) o.ops.push_back(c.key);
    if (shapes.insert(c.key + ":" + c.shape).second) o.shapes.push_back(c.key + ":" + c.shape);
    in_baseline.insert(c.kernel);
  }
  for (const KernelInfo* k : KernelRegistry::instance().all())
    if (k->device == device && keys.count(k->key)) registered.insert(k->name);
  o.keys_only = true;
  // Every kernel this build has for the keys: no --kernel, so that naive is skipped above the FLOP limit
  // as it was. Otherwise the baseline's own choice (which timed naive if it named it).
  if (std::includes(in_baseline.begin(), in_baseline.end(), registered.begin(), registered.end())) return;
  for (const std::string& name : in_baseline)
    if (registered.count(name)) o.kernels.push_back(name);
}

int BaselineComparison::count(const std::string& verdict) const {
  return static_cast<int>(std::count_if(compared.begin(), compared.end(),
                                        [&](const CaseComparison& c) { return c.verdict == verdict; }));
}

int BaselineComparison::regressions() const {
  return static_cast<int>(
      std::count_if(compared.begin(), compared.end(), [](const CaseComparison& c) { return c.regression; }));
}

BaselineComparison compare_with_baseline(const std::vector<TimedCase>& before, const std::vector<TimedCase>& now,
                                         double threshold, double machine_drift) {
  std::map<std::string, const TimedCase*> old_by_id;
  for (const TimedCase& c : before) old_by_id.emplace(c.id(), &c);  // the first record of a case
  std::set<std::string> matched;
  BaselineComparison out;
  out.machine_drift = machine_drift;
  for (const TimedCase& c : now) {
    const auto it = old_by_id.find(c.id());
    if (it == old_by_id.end()) {
      out.only_now.push_back(c);
      continue;
    }
    if (!matched.insert(c.id()).second) continue;  // a case given twice in this run: compared once
    const TimedCase& old = *it->second;
    if (old.status != "ok" || c.status != "ok") {
      out.not_compared.emplace_back(old, c);
      continue;
    }
    CaseComparison cmp;
    cmp.before = old, cmp.now = c;
    cmp.noise = std::max({old.noise(), c.noise(), machine_drift});
    const double ratio = c.median_ms / old.median_ms;
    cmp.change = ratio - 1;
    cmp.verdict = ratio > 1 + cmp.noise ? "slower" : ratio * (1 + cmp.noise) < 1 ? "faster" : "same";
    cmp.regression = ratio > 1 + std::max(cmp.noise, threshold);
    out.compared.push_back(cmp);
  }
  std::set<std::string> listed;
  for (const TimedCase& c : before)
    if (!matched.count(c.id()) && listed.insert(c.id()).second) out.only_before.push_back(c);
  return out;
}

void print_comparison(std::FILE* out, const BaselineFile& b, const BaselineComparison& c, double threshold) {
  std::fprintf(out, "baseline %s: %s (%s), %d thread(s)%s\n", b.path.c_str(), b.device.c_str(), b.machine.c_str(),
               b.threads, b.loaded ? "; its machine was busy (its calibration said so)" : "");
  std::fprintf(out,
               "verdicts: noise = the larger of the two kernels' spreads (median - min) / min (%.0f%% when a record "
               "has none) and the machine's drift between the runs (%.1f%%: the calibration medians%s); slower or "
               "faster beyond it, else same; REGRESSION: slower by more than %.0f%% and the noise\n",
               100 * kDefaultSpread, 100 * c.machine_drift, b.calibration_ms.empty() ? ", not in the baseline" : "",
               100 * threshold);
  if (!c.compared.empty()) {
    size_t key_w = 3, shape_w = 5, kernel_w = 6;
    for (const CaseComparison& cmp : c.compared) {
      key_w = std::max(key_w, cmp.now.key.size());
      shape_w = std::max(shape_w, std::min<size_t>(cmp.now.shape.size(), 40));
      kernel_w = std::max(kernel_w, cmp.now.kernel.size());
    }
    const int kw = static_cast<int>(key_w), sw = static_cast<int>(shape_w), nw = static_cast<int>(kernel_w);
    std::fprintf(out, "  %-*s %-*s %-*s %10s %10s %8s %7s  %s\n", kw, "key", sw, "shape", nw, "kernel", "old ms",
                 "new ms", "change", "noise", "verdict");
    for (const CaseComparison& cmp : c.compared) {
      const std::string shape = cmp.now.shape.size() > 40 ? cmp.now.shape.substr(0, 37) + "..." : cmp.now.shape;
      char noise[16];
      std::snprintf(noise, sizeof(noise), "%.1f%%", 100 * cmp.noise);
      const std::string verdict = cmp.regression ? cmp.verdict + ": REGRESSION"
                                  : cmp.verdict == "same" ? std::string("same (within noise)")
                                                          : cmp.verdict;
      std::fprintf(out, "  %-*s %-*s %-*s %10s %10s %8s %7s  %s\n", kw, cmp.now.key.c_str(), sw, shape.c_str(), nw,
                   cmp.now.kernel.c_str(), milliseconds(cmp.before.median_ms).c_str(),
                   milliseconds(cmp.now.median_ms).c_str(), percent(cmp.change).c_str(), noise, verdict.c_str());
    }
  }
  for (const auto& [old, now] : c.not_compared)
    std::fprintf(out, "not compared: %s %s %s: %s in the baseline, %s now\n", now.key.c_str(), now.shape.c_str(),
                 now.kernel.c_str(), old.status.c_str(), now.status.c_str());
  for (const TimedCase& t : c.only_now)
    std::fprintf(out, "new (not in the baseline): %s %s %s on %s\n", t.key.c_str(), t.shape.c_str(), t.kernel.c_str(),
                 t.device.c_str());
  for (const TimedCase& t : c.only_before)
    std::fprintf(out, "missing (in the baseline, not in this run): %s %s %s on %s\n", t.key.c_str(), t.shape.c_str(),
                 t.kernel.c_str(), t.device.c_str());
  std::fprintf(out,
               "baseline: %zu compared: %d faster, %d slower, %d same within noise; %zu new, %zu missing, %zu not "
               "compared\n",
               c.compared.size(), c.count("faster"), c.count("slower"), c.count("same"), c.only_now.size(),
               c.only_before.size(), c.not_compared.size());
  if (c.regressions())
    std::fprintf(out, "REGRESSION: %d kernel(s) slower than the baseline by more than %.0f%% and the noise (exit %d)\n",
                 c.regressions(), 100 * threshold, kExitRegression);
}

int compare_files(const std::string& baseline_path, const std::string& against_path, double threshold,
                  std::FILE* out) {
  const BaselineFile before = read_baseline(baseline_path, "--baseline");
  const BaselineFile now = read_baseline(against_path, "--against");
  std::fprintf(out, "against %s: %s (%s), %d thread(s)%s\n", now.path.c_str(), now.device.c_str(),
               now.machine.c_str(), now.threads, now.loaded ? "; its machine was busy (its calibration said so)" : "");
  const BaselineComparison c = compare_with_baseline(before.cases, now.cases, threshold,
                                                     calibration_drift(before.calibration_ms, now.calibration_ms));
  print_comparison(out, before, c, threshold);
  return c.regressions() ? kExitRegression : 0;
}

}  // namespace bench
}  // namespace minidl
