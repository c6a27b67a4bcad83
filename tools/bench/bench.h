// tools/bench/bench.h — `minidl bench`: every kernel of every key, timed on the same inputs, with GFLOP/s
// or GB/s from a counted model, the fraction of the vendor kernel's speed, and the max error against the
// naive reference. docs/results/benchmarks.md describes the method and the --shape syntax.
//
//   tools/bench/case.h, cases_*.cpp   per key: shapes, inputs, FLOP and byte model, how to call a kernel
//   tools/bench/machine.h             the device's peaks, the cache flush, the load calibration
//   tools/bench/harness.cpp           selection, reference, timing (this header's run_bench)
//   tools/bench/report.h              the table, JSON Lines, CSV and the SVGs
//   tools/bench/ragged.cpp            the shape each key is also checked on, sizes that fill no tile
//   tools/bench/sweep.h               --shape-sweep: a range of sizes put into a shape
//   tools/bench/baseline.h            --baseline: this run against an earlier --json file
#pragma once
#include <cstdio>
#include <string>
#include <vector>

namespace minidl {
namespace bench {

struct BenchOptions {
  std::vector<std::string> ops;      // op names or keys ("conv2d", "conv2d.backward_input"); empty: all
  bool keys_only = false;            // ops are keys only: "conv2d" is its forward key, not conv2d.backward_*
  std::vector<std::string> kernels;  // kernel names to show; empty: all
  std::string device = "cpu";        // "cpu", "cuda", "cuda:1"
  std::vector<std::string> shapes;   // "KEY:SPEC" (KEY an op or a key); replaces that key's default shapes
  int repeat = 20;                   // timed calls per kernel and shape, at most
  double budget_seconds = 0.25;      // ... fewer when they would take longer than this (at least one)
  // A naive kernel above this many FLOPs is not timed unless --kernel naive asks for it, and the
  // reference is then the CPU's vendor kernel when the key has one (naive 1024^3 takes ~9 s).
  double naive_flop_limit = 5e8;
  std::string json_path;  // JSON Lines, one record per line
  std::string svg_path;   // GFLOP/s bars and a roofline; with a sweep, GFLOP/s against the size
  std::string csv_path;   // one line per kernel and shape
  // --shape-sweep "LO:HI:xF" or "LO:HI:+S" (tools/bench/sweep.h): the sizes put into sweep_spec, for the
  // keys of one --op. sweep_spec "" is the op's default (matmul "nxnxn").
  std::string sweep;
  std::string sweep_spec;
  // --baseline FILE: an earlier --json file compared with this run (tools/bench/baseline.h); a kernel
  // slower by more than regression_threshold (a fraction) and more than the noise is a regression.
  std::string baseline_path;
  double regression_threshold = 0.10;
  // --against NEW.json, with --baseline: compare two saved runs; nothing is run or measured.
  std::string against_path;
};

// run_bench's exit statuses (also `minidl bench`'s): 0 all right; kExitWrong when some kernel's output
// differs from the reference, on a timed shape or on its key's ragged shape; kExitRegression when, with
// --baseline and no kernel wrong, some kernel is slower than in the baseline beyond the threshold.
constexpr int kExitWrong = 2;
constexpr int kExitRegression = 3;

// Runs the benchmark and prints the table to `out`: every case, then every key's kernels once on the
// key's ragged shape (sizes that divide no tile, against the naive CPU kernel), then with a baseline the
// comparison. Throws minidl::Error for an unknown op, kernel, device, malformed shape, sweep or baseline
// file. Returns 0, kExitWrong when some kernel's output differs from the reference by more than
// kWrongRelativeError (the table marks it WRONG), or kExitRegression (above).
int run_bench(const BenchOptions& options, std::FILE* out);

// max |got - ref| / max |ref| above which a kernel is reported WRONG; kTf32RelativeError for kernels that
// multiply on TF32 tensor cores by design (10-bit mantissas: names containing "tf32", and cuBLAS / cuDNN
// under --precision tf32 or MINIDL_TF32=1), kBf16RelativeError for BF16 kernels (names containing "bf16")
// and cuBLAS / cuDNN under --precision bf16 (8-bit mantissas: each operand's rounding error is up to 2^-9,
// four times TF32's).
constexpr double kWrongRelativeError = 1e-3;
constexpr double kTf32RelativeError = 1e-2;
constexpr double kBf16RelativeError = 4e-2;

// Reads one --shape value, "KEY:SPEC" (KEY an op, for every key of the op, or one key), as run_bench does,
// and returns the largest bytes one of its cases would hold; allocates nothing and runs nothing. Throws an
// Error naming the field at fault (tools/bench/case.h SpecReader). fuzz/bench_spec_fuzzer.cpp feeds it
// arbitrary text.
double check_shape_flag(const std::string& value);

// The kernels the "vs vendor" column compares with: OpenBLAS (openblas, im2col_blas), cuBLAS, cuDNN.
bool is_vendor_kernel(const std::string& name);

}  // namespace bench
}  // namespace minidl
