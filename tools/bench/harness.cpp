// tools/bench/harness.cpp — `minidl bench` itself: which keys, shapes and kernels to time; the reference
// each kernel's output is compared with; and the timing.
//
// Method, for each key and shape (a "case"):
//   1. Inputs from a fixed seed, made on the CPU and copied to the device, so every kernel of the key
//      (called directly through the registry: KernelInfo::fn cast to the key's signature) sees the same
//      numbers, and so does the reference on the CPU.
//   2. The reference: the key's naive CPU kernel, run once. Above naive_flop_limit FLOPs naive is too
//      slow to run on every case (1024^3 takes ~9 s), so the reference is then the CPU's vendor kernel
//      (openblas, im2col_blas) when the key has one, and naive otherwise; the table says which.
//   3. Per kernel: one warm-up call (which also gives the outputs compared with the reference and the
//      time that sizes the repeats), then up to `repeat` timed calls, fewer if they would take longer
//      than budget_seconds. Before each: the case's prepare (untimed: optimizer state restored, a GRU
//      reserve made) and the cache flush. Each call is timed by the backend's time_on_device (CUDA events
//      on the GPU, the host clock around a synchronisation on the CPU). Median and min are reported.
//   4. The machine: a calibration workload timed before and after; a spread above 10% prints a warning.
//   5. Per key, after its cases: every kernel called once on the key's ragged shape (tools/bench/ragged.cpp:
//      sizes that divide no tile), untimed, and compared with the naive CPU kernel, so that a kernel wrong
//      only on partial tiles is caught even when every timed shape fills whole tiles.
// With --shape-sweep the shapes are the sweep's (tools/bench/sweep.h); with --baseline the rows are then
// compared with an earlier --json file (tools/bench/baseline.h).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "core/backend.h"
#include "core/dispatch.h"
#include "core/precision.h"
#include "core/random.h"
#include "core/strings.h"
#include "tools/bench/baseline.h"
#include "tools/bench/bench.h"
#include "tools/bench/case.h"
#include "tools/bench/machine.h"
#include "tools/bench/report.h"
#include "tools/bench/sweep.h"
#include "tools/kernel_table.h"

namespace minidl {
namespace bench {

bool is_vendor_kernel(const std::string& name) {
  return name.find("blas") != std::string::npos || name.rfind("cudnn", 0) == 0;
}

namespace {

constexpr uint64_t kSeed = 20240501;

// The kernels of (key, device), highest priority first.
std::vector<const KernelInfo*> kernels_of(const std::string& key, DeviceType device) {
  std::vector<const KernelInfo*> out;
  for (const KernelInfo* k : KernelRegistry::instance().all())
    if (k->key == key && k->device == device) out.push_back(k);
  return out;
}

bool contains(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

// Calls f(i, value) for every element of t (copied to the CPU if it is elsewhere), as a double; read in
// place, without a cast kernel (a 128 MiB output is compared in a fraction of the time).
template <class F>
void for_each_value(const Tensor& t, F f) {
  const Tensor c = t.to(Device::cpu()).contiguous();
  const int64_t n = c.numel();
  switch (c.dtype()) {
    case DType::float32:
      for (int64_t i = 0; i < n; ++i) f(i, static_cast<double>(c.data<float>()[i]));
      break;
    case DType::float64:
      for (int64_t i = 0; i < n; ++i) f(i, c.data<double>()[i]);
      break;
    case DType::int32:
      for (int64_t i = 0; i < n; ++i) f(i, static_cast<double>(c.data<int32_t>()[i]));
      break;
    case DType::int64:
      for (int64_t i = 0; i < n; ++i) f(i, static_cast<double>(c.data<int64_t>()[i]));
      break;
    case DType::bfloat16:
      for (int64_t i = 0; i < n; ++i) f(i, static_cast<double>(bfloat16_to_float(c.data<bfloat16>()[i])));
      break;
  }
}

// The reference's outputs, kept in double (later calls overwrite the tensors).
std::vector<std::vector<double>> snapshot(const BenchCase& c) {
  std::vector<std::vector<double>> out;
  for (const Tensor& t : c.outputs()) {
    out.emplace_back(static_cast<size_t>(t.numel()));
    std::vector<double>& values = out.back();
    for_each_value(t, [&](int64_t i, double v) { values[i] = v; });
  }
  return out;
}

// The relative error above which kernel `name` on d is WRONG (tools/bench/bench.h).
double wrong_threshold(const std::string& name, Device d) {
  if (name.find("tf32") != std::string::npos) return kTf32RelativeError;  // tf32_mma, nhwc_3x3_tf32, ...
  if (name.find("bf16") != std::string::npos) return kBf16RelativeError;  // bf16_wgmma: operands rounded to bfloat16
  if (!d.is_cpu() && is_vendor_kernel(name)) {
    switch (float32_precision()) {  // --precision, or MINIDL_TF32=1
      case Precision::tf32: return kTf32RelativeError;
      case Precision::bf16: return kBf16RelativeError;
      case Precision::fp32: break;
    }
  }
  return kWrongRelativeError;
}

// max |got - ref| and that divided by max |ref|. Equal infinities and NaN against NaN agree; any other
// non-finite difference is an infinite error.
void compare(const BenchCase& c, const std::vector<std::vector<double>>& ref, Device d, Row& row) {
  double max_err = 0, max_ref = 0;
  const std::vector<Tensor> outputs = c.outputs();
  for (size_t o = 0; o < ref.size(); ++o)
    for_each_value(outputs[o], [&](int64_t i, double g) {
      const double r = ref[o][i];
      if (std::isfinite(r)) max_ref = std::max(max_ref, std::fabs(r));
      if (g == r || (std::isnan(g) && std::isnan(r))) return;
      const double err = std::fabs(g - r);
      max_err = std::max(max_err, std::isnan(err) ? INFINITY : err);
    });
  row.max_abs_err = max_err;
  row.max_rel_err = max_ref > 0 ? max_err / max_ref : max_err;
  row.wrong = !(row.max_rel_err <= wrong_threshold(row.kernel, d));
}

struct Reference {
  const KernelInfo* kernel = nullptr;
  std::string why;  // printed with the case
};

// The CPU kernel the outputs of (key, case) are compared with (the method's step 2).
Reference choose_reference(const std::string& key, double flops, const BenchOptions& o) {
  const KernelInfo* naive = nullptr;
  const KernelInfo* vendor = nullptr;
  for (const KernelInfo* k : kernels_of(key, DeviceType::cpu)) {
    if (k->name == "naive") naive = k;
    if (!vendor && is_vendor_kernel(k->name)) vendor = k;
  }
  const bool naive_asked = contains(o.kernels, "naive");
  if (naive && (flops <= o.naive_flop_limit || naive_asked)) return {naive, "naive"};
  if (vendor)
    return {vendor, str_cat("cpu ", vendor->name, " (naive skipped: ", human(flops, "FLOP"), " > ",
                            human(o.naive_flop_limit, "FLOP"), ")")};
  if (naive) return {naive, str_cat("naive, run once (", human(flops, "FLOP"), ")")};
  return {nullptr, "none (no naive CPU kernel)"};
}

// Selects kernel k for its op while it is timed, as `--kernel OP=NAME` would, and puts the previous
// selection back after: a kernel may serve only when selected (the tf32_* matmul kernels without
// MINIDL_TF32=1), and the bench times each kernel as a user choosing it would get it.
class SelectedWhileTimed {
 public:
  explicit SelectedWhileTimed(const KernelInfo& k)
      : op_(k.op), device_(k.device), previous_(KernelRegistry::instance().selected(k.op, k.device)) {
    KernelRegistry::instance().select(op_, device_, k.name);
  }
  ~SelectedWhileTimed() { KernelRegistry::instance().select(op_, device_, previous_); }
  SelectedWhileTimed(const SelectedWhileTimed&) = delete;
  SelectedWhileTimed& operator=(const SelectedWhileTimed&) = delete;

 private:
  std::string op_;
  DeviceType device_;
  std::string previous_;
};

// Times kernel k on case c (the method's step 3); fills the row's times and status.
void time_kernel(const KernelInfo& k, BenchCase& c, Device d, CacheFlush& flush, const BenchOptions& o, Row& row,
                 const std::vector<std::vector<double>>* reference) {
  DeviceBackend& backend = backend_for(d.type);
  SelectedWhileTimed selected(k);
  if (c.prepare) {
    const std::string why = c.prepare(k);
    if (!why.empty()) {
      row.status = "skipped";
      row.note = why;
      return;
    }
  }
  bool accepted = false;
  flush.run();
  const double warmup = backend.time_on_device([&] { accepted = c.run(k); }, d.index);
  if (!accepted) {
    row.status = "declined";
    return;
  }
  if (reference) compare(c, *reference, d, row);
  const int runs = std::max(1, std::min(o.repeat, static_cast<int>(o.budget_seconds / std::max(warmup, 1e-9))));
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    if (c.prepare) c.prepare(k);
    flush.run();
    times.push_back(backend.time_on_device([&] { c.run(k); }, d.index));
  }
  std::sort(times.begin(), times.end());
  row.status = "ok";
  row.runs = runs;
  row.min_s = times.front();
  row.max_s = times.back();
  row.median_s = runs % 2 ? times[runs / 2] : 0.5 * (times[runs / 2 - 1] + times[runs / 2]);
  if (runs >= kSpreadRuns && row.min_s > 0) row.spread = (row.median_s - row.min_s) / row.min_s;
}

// The outputs of the reference kernel `ref` on (key, spec): case c itself on the CPU, a CPU copy of it
// (the same seed) for a case on a GPU.
std::vector<std::vector<double>> reference_outputs(const std::string& key, const std::string& spec,
                                                   const CaseFamily& family, const BenchCase& c, Device d,
                                                   const KernelInfo& ref) {
  BenchCase ref_case = c;
  if (!d.is_cpu()) {
    manual_seed(kSeed);
    ref_case = family.make(key, spec, Device::cpu());
  }
  const std::string why = ref_case.prepare ? ref_case.prepare(ref) : "";
  MINIDL_CHECK(why.empty(), "bench: the reference ", ref.name, " of ", key, " cannot run: ", why);
  MINIDL_CHECK(ref_case.run(ref), "bench: the reference kernel ", ref.name, " of ", key, " declined ", spec);
  return snapshot(ref_case);
}

// One case: every selected kernel of `key` on d at `spec`.
std::vector<Row> run_case(const std::string& key, const DefaultShape& shape, const CaseFamily& family, Device d,
                          CacheFlush& flush, const BenchOptions& o) {
  manual_seed(kSeed);
  BenchCase c = family.make(key, shape.spec, d);
  Row base;
  base.key = key;
  base.shape = shape.spec;
  base.label = shape.label;
  base.flops = c.flops;
  base.bytes = c.bytes;

  const std::vector<const KernelInfo*> kernels = kernels_of(key, d.type);
  const std::vector<const KernelInfo*>& order = KernelRegistry::instance().candidates(key, d.type);
  const std::string default_name = order.empty() ? "" : order.front()->name;
  std::vector<Row> rows;
  std::vector<const KernelInfo*> to_time;
  for (const KernelInfo* k : kernels) {
    Row row = base;
    row.kernel = k->name;
    row.is_default = k->name == default_name;
    row.shown = o.kernels.empty() || contains(o.kernels, k->name);
    if (!row.shown && !is_vendor_kernel(k->name)) continue;
    if (k->name == "naive" && c.flops > o.naive_flop_limit && !contains(o.kernels, "naive")) {
      row.status = "skipped";
      row.note = str_cat(human(c.flops, "FLOP"), " > ", human(o.naive_flop_limit, "FLOP"), ": --kernel naive times it");
      rows.push_back(row);
      continue;
    }
    rows.push_back(row);
    to_time.push_back(k);
  }
  const bool any_shown = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.shown; });
  if (!any_shown) return {};

  // The reference, computed only when some kernel is timed.
  const Reference ref = choose_reference(key, c.flops, o);
  std::vector<std::vector<double>> ref_outputs;
  bool have_reference = false;
  if (!to_time.empty() && ref.kernel) {
    ref_outputs = reference_outputs(key, shape.spec, family, c, d, *ref.kernel);
    have_reference = true;
  }
  for (Row& row : rows) row.reference = have_reference ? ref.why : "not run (no kernel timed)";

  size_t next = 0;
  for (Row& row : rows) {
    if (row.status == "skipped") continue;
    time_kernel(*to_time[next++], c, d, flush, o, row, have_reference ? &ref_outputs : nullptr);
  }

  // The vendor column: the fastest vendor kernel of this case.
  const Row* vendor = nullptr;
  for (const Row& row : rows)
    if (row.status == "ok" && is_vendor_kernel(row.kernel) && (!vendor || row.median_s < vendor->median_s))
      vendor = &row;
  for (Row& row : rows) {
    if (vendor) row.vendor = vendor->kernel;
    if (vendor && row.status == "ok") row.vs_vendor = vendor->median_s / row.median_s;
    std::vector<std::string> notes;
    if (!row.note.empty()) notes.push_back(row.note);
    if (row.is_default) notes.push_back("default");
    if (d.is_cpu() && ref.kernel && row.kernel == ref.kernel->name && row.status == "ok") notes.push_back("reference");
    if (row.wrong) notes.push_back("WRONG");
    if (row.spread > kNoisySpread) notes.push_back("noisy");
    row.note = join(notes, "; ");
  }
  return rows;
}

// The ragged check of `key` (the method's step 5): every shown kernel of the key on d called once on the
// key's ragged shape and compared with the naive CPU kernel (naive on the CPU is the reference itself and
// is left out). Rows with status "ok" (and `wrong` set when the error is too large), "declined" or
// "skipped"; none when no kernel is shown or the key has no naive CPU kernel.
std::vector<Row> check_ragged(const std::string& key, const CaseFamily& family, Device d, const BenchOptions& o) {
  const std::string spec = ragged_spec(key);
  const KernelInfo* naive = nullptr;
  for (const KernelInfo* k : kernels_of(key, DeviceType::cpu))
    if (k->name == "naive") naive = k;
  std::vector<const KernelInfo*> to_check;
  for (const KernelInfo* k : kernels_of(key, d.type))
    if ((o.kernels.empty() || contains(o.kernels, k->name)) && !(d.is_cpu() && k == naive)) to_check.push_back(k);
  if (!naive || to_check.empty() || spec.empty()) return {};

  manual_seed(kSeed);
  BenchCase c = family.make(key, spec, d);
  const std::vector<std::vector<double>> ref = reference_outputs(key, spec, family, c, d, *naive);
  std::vector<Row> rows;
  for (const KernelInfo* k : to_check) {
    Row row;
    row.key = key;
    row.shape = spec;
    row.label = "ragged";
    row.kernel = k->name;
    row.flops = c.flops;
    row.bytes = c.bytes;
    row.reference = "naive";
    SelectedWhileTimed selected(*k);
    const std::string why = c.prepare ? c.prepare(*k) : "";
    if (!why.empty()) {
      row.status = "skipped";
      row.note = why;
    } else if (!c.run(*k)) {
      row.status = "declined";
    } else {
      row.status = "ok";
      compare(c, ref, d, row);
    }
    rows.push_back(row);
  }
  return rows;
}

// --shape values by key or op: "conv2d:..." -> {"conv2d": ["..."]}.
std::map<std::string, std::vector<std::string>> parse_shapes(const std::vector<std::string>& shapes) {
  std::map<std::string, std::vector<std::string>> by_name;
  for (const std::string& s : shapes) {
    check_shape_flag(s);
    const size_t colon = s.find(':');
    by_name[s.substr(0, colon)].push_back(s.substr(colon + 1));
  }
  return by_name;
}

// "" when a case's tensors, `bytes` of them, fit the free memory of d (and of the CPU too when d is a GPU:
// the reference case is built there); otherwise why not.
std::string why_not_fits(double bytes, Device d) {
  for (const Device& where : d.is_cpu() ? std::vector<Device>{d} : std::vector<Device>{d, Device::cpu()}) {
    const FreeMemory free = free_memory(where);
    if (bytes > free.bytes)
      return str_cat("this case needs ", human(bytes, "B"), " for its tensors, more than the ", human(free.bytes, "B"),
                     " ", free.how);
  }
  return "";
}

}  // namespace

double check_shape_flag(const std::string& value) {
  const size_t colon = value.find(':');
  MINIDL_CHECK(colon != std::string::npos && colon > 0 && colon + 1 < value.size(), "bench: --shape '", value,
               "' is not KEY:SPEC (e.g. matmul:1024x1024x1024; `minidl bench --help` lists the syntax of each key)");
  const std::string name = value.substr(0, colon), spec = value.substr(colon + 1);
  check_ops_known({name}, "bench --shape");
  double bytes = 0;
  for (const CaseFamily& family : case_families())
    for (const CaseKey& k : family.keys)
      if (k.key == name || k.key.substr(0, k.key.find('.')) == name) bytes = std::max(bytes, family.check(k.key, spec));
  return bytes;
}

int run_bench(const BenchOptions& given, std::FILE* out) {
  BenchOptions o = given;
  MINIDL_CHECK(o.repeat >= 1, "bench: --repeat must be at least 1");
  MINIDL_CHECK(o.regression_threshold >= 0, "bench: --regression-threshold must be at least 0");
  if (!o.against_path.empty()) {
    MINIDL_CHECK(!o.baseline_path.empty(), "bench: --against needs --baseline (the run it is compared with)");
    return compare_files(o.baseline_path, o.against_path, o.regression_threshold, out);
  }
  // The baseline first: a file that cannot be read stops the run before anything is measured.
  BaselineFile baseline;
  if (!o.baseline_path.empty()) {
    baseline = read_baseline(o.baseline_path);
    use_baseline_cases(baseline, o);
  }
  if (o.device.empty()) o.device = "cpu";
  const Device d = Device::parse(o.device);
  check_device_usable(d);
  check_ops_known(o.ops, "bench --op");
  // A sweep's sizes, by the shape each one makes.
  std::map<std::string, int64_t> sweep_size_of;
  std::string sweep_spec;
  if (!o.sweep.empty()) {
    const SweepPlan plan = plan_sweep(o);
    o.shapes = plan.shapes;
    sweep_spec = plan.spec;
    for (size_t i = 0; i < plan.sizes.size(); ++i) sweep_size_of[sweep_shape(plan.spec, plan.sizes[i])] = plan.sizes[i];
  }
  const std::map<std::string, std::vector<std::string>> shapes = parse_shapes(o.shapes);
  // The keys: those of --op, else those named by --shape, else all; in the table's order.
  std::vector<std::string> keys;
  std::set<std::string> kernel_names;
  for (const KernelInfo* k : KernelRegistry::instance().all()) {
    if (k->device != d.type) continue;
    bool wanted = true;
    if (!o.ops.empty()) {
      wanted = o.keys_only ? std::find(o.ops.begin(), o.ops.end(), k->key) != o.ops.end() : key_selected(k->key, o.ops);
    } else if (!shapes.empty()) {
      wanted = shapes.count(k->key) || shapes.count(k->op);
    }
    if (!wanted) continue;
    if (keys.empty() || keys.back() != k->key) keys.push_back(k->key);
    kernel_names.insert(k->name);
  }
  // The memory of every case --shape asks for, before anything runs.
  for (const std::string& key : keys)
    for (const std::string& name : {key, key.substr(0, key.find('.'))}) {
      const auto it = shapes.find(name);
      const CaseFamily* family = find_case_family(key);
      if (it == shapes.end() || !family) continue;
      for (const std::string& spec : it->second) {
        const std::string why = why_not_fits(family->check(key, spec), d);
        MINIDL_CHECK(why.empty(), "bench --shape ", key, ":", spec, ": ", why);
      }
    }
  for (const std::string& name : o.kernels)
    if (!kernel_names.count(name)) {
      throw Error(str_cat("bench: no kernel '", name, "' among the selected keys on ", d.str(), "; kernels: ",
                          join(kernel_names, ", ")));
    }
  Report report;
  report.machine = describe_machine(d);
  report.repeat = o.repeat;
  report.budget_seconds = o.budget_seconds;
  CacheFlush flush(report.machine);
  report.flush = flush.describe();
  report.before = calibrate(report.machine, 5);
  revise_peak(report.machine, report.before);
  print_preamble(out, report);

  for (const std::string& key : keys) {
    const CaseFamily* family = find_case_family(key);
    if (!family) {
      std::fprintf(out, "%s: no bench case (add one in tools/bench/cases_*.cpp)\n\n", key.c_str());
      continue;
    }
    std::vector<DefaultShape> specs;
    for (const std::string& name : {key, key.substr(0, key.find('.'))}) {
      auto it = shapes.find(name);
      if (it != shapes.end() && specs.empty())
        for (const std::string& spec : it->second) specs.push_back({spec, ""});
    }
    if (specs.empty())
      for (const DefaultShape& shape : family->defaults)
        if (shape.device.empty() || shape.device == device_type_name(d.type)) specs.push_back(shape);
    for (const DefaultShape& shape : specs) {
      // A default shape larger than this machine's free memory is skipped, and said so (a --shape one was
      // refused above).
      const std::string why = why_not_fits(family->check(key, shape.spec), d);
      if (!why.empty()) {
        std::fprintf(out, "%s %s: skipped: %s\n\n", key.c_str(), shape.spec.c_str(), why.c_str());
        continue;
      }
      std::vector<Row> rows = run_case(key, shape, *family, d, flush, o);
      if (rows.empty()) continue;
      const auto size = sweep_size_of.find(shape.spec);
      for (Row& row : rows) row.size = size == sweep_size_of.end() ? 0 : size->second;
      print_case(out, rows);
      std::fflush(out);
      report.rows.insert(report.rows.end(), rows.begin(), rows.end());
    }
    const std::vector<Row> ragged = check_ragged(key, *family, d, o);
    if (!ragged.empty()) {
      print_ragged(out, ragged);
      std::fflush(out);
      report.ragged.insert(report.ragged.end(), ragged.begin(), ragged.end());
    }
  }
  report.after = calibrate(report.machine, 5);
  if (revise_peak(report.machine, report.after))
    std::fprintf(out, "peak revised (a calibration after the run was faster): %s\n", report.machine.spec.how.c_str());
  print_summary(out, report);
  if (!o.json_path.empty()) write_json_lines(o.json_path, report);
  if (!o.csv_path.empty()) write_csv(o.csv_path, report);
  if (!o.svg_path.empty()) {
    if (o.sweep.empty())
      write_svg(o.svg_path, report);
    else
      write_sweep_svg(o.svg_path, report, sweep_spec, o.sweep.find(":x") != std::string::npos);
  }
  const auto is_wrong = [](const Row& r) { return r.wrong; };
  const bool any_wrong = std::any_of(report.rows.begin(), report.rows.end(), is_wrong) ||
                         std::any_of(report.ragged.begin(), report.ragged.end(), is_wrong);
  int regressions = 0;
  if (!o.baseline_path.empty()) {
    const BaselineComparison comparison =
        compare_with_baseline(
        baseline.cases, timed_cases(report), o.regression_threshold,
        calibration_drift(baseline.calibration_ms, {report.before.median_s * 1e3, report.after.median_s * 1e3}));
    std::fprintf(out, "\n");
    print_comparison(out, baseline, comparison, o.regression_threshold);
    regressions = comparison.regressions();
  }
  if (any_wrong) return kExitWrong;
  return regressions ? kExitRegression : 0;
}

}  // namespace bench
}  // namespace minidl
