// tools/bench/sweep.h — `minidl bench --op OP --shape-sweep LO:HI:STEP [--sweep-spec SPEC]`: one op's
// kernels over a range of sizes, for a plot of GFLOP/s against size (--svg) and a table of numbers (--csv).
//
//   LO:HI:xF   LO, LO*F, LO*F^2, ... up to HI        64:1024:x2   -> 64 128 256 512 1024
//   LO:HI:+S   LO, LO+S, LO+2S, ... up to HI        32:128:+32   -> 32 64 96 128
// HI is included when the steps land on it. Each size n goes into the sweep spec, a --shape SPEC of the
// op with the letter n where the size goes (no shape syntax uses the letter n otherwise):
//   matmul   nxnxn                    square products, n x n times n x n (the default)
//   conv2d   8xnx16x16,nxnx3x3,s1p1   n channels in and out, 3x3, batch 8 on 16x16 (the default)
//   any op   --sweep-spec 'nx1024' for relu, --sweep-spec 'nx64x26x26,k2' for max_pool2d, ...
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tools/bench/bench.h"

namespace minidl {
namespace bench {

// The most sizes one sweep may have.
constexpr size_t kMaxSweepSizes = 64;

// The sizes of a range "LO:HI:xF" or "LO:HI:+S". Throws an Error "bench --shape-sweep 'TEXT': WHY" for
// anything else: LO from 1, HI at least LO, F at least 2, S at least 1, at most kMaxSweepSizes sizes,
// every size at most kMaxSize.
std::vector<int64_t> sweep_sizes(const std::string& range);

// The op's default sweep spec ("nxnxn" for matmul), or "" when it has none. `op` may be a key
// ("conv2d.backward_input": the op's spec).
std::string default_sweep_spec(const std::string& op);

// `spec` with every letter n replaced by `size`: sweep_shape("nxnxn", 64) == "64x64x64".
std::string sweep_shape(const std::string& spec, int64_t size);

// A sweep as run_bench runs it: the op, its spec, and one --shape value "OP:SPEC" per size.
struct SweepPlan {
  std::string op;
  std::string spec;
  std::vector<int64_t> sizes;
  std::vector<std::string> shapes;  // shapes[i] is the size sizes[i]
};

// Reads o.sweep and o.sweep_spec for o's one --op; checks every shape of the sweep as --shape would
// (tools/bench/case.h SpecReader). Throws an Error naming the flag at fault: no --op or several, --shape
// given too, a spec without n, an op with no default spec and no --sweep-spec.
SweepPlan plan_sweep(const BenchOptions& o);

}  // namespace bench
}  // namespace minidl
