// cuda/matmul_v7_autotuned.cu — matmul kernel "v7_autotuned", the last FP32 step of the GEMM ladder
// (docs/gemm-ladder.md): out[r] = op(a[r]) op(b[r]) in float32 FMAs, any M, N, K, all four transpose
// flags, float32 only, compute capability 8.0 and up. Accumulation convention: out is overwritten (=).
//
// What changes from v6 and splitk: the block tile is no longer picked by a rule but measured. The first
// call of each shape class times the pipelined kernel (cuda/sgemm_cp_async.cuh) with each candidate
// tile on the call's own operands, keeps the fastest, and every later call of the class uses it:
//
//     candidates  128 x 128 (8 warps, 3 stages)   128 x 64 (4 warps)   64 x 128 (4 warps)   64 x 64 (2 warps, 4 stages)
//     shape class (device, transpose flags, 16-byte alignment of a / b / out, and the power-of-two
//                  ceilings of M, N, K and the batch)
//
// The split of K is planned as in splitk (a rule on the shape, cuda/sgemm_split_k.cuh), the same for
// every candidate. Since all candidates then sum each output over the same K ranges in the same order
// (k = 0, 1, 2, ... with fmaf), they produce identical bits: tuning decides speed, never results.
// Timing: one warm-up and 3 timed launches per candidate with CUDA events on the device's stream; the
// first call of a class therefore synchronises the device and takes a few times longer. With
// MINIDL_LOG_DISPATCH set, each tuning prints its timings to stderr.
// Why faster: a fixed rule picks the wrong tile near its thresholds and for non-square outputs (128 x 64
// tiles fill 132 multiprocessors at 1024 x 2048, where the rule falls back to 64 x 64).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

#include "core/dispatch.h"
#include "cuda/sgemm_split_k.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

using cuda::GemmBatch;
using cuda::KSplit;

struct Candidate {
  const char* name;
  bool (*fits)(const GemmBatch&, int64_t splits, int device);
  void (*launch)(const GemmBatch&, const KSplit&, cudaStream_t);
};

const Candidate kCandidates[] = {
    {"128x128", cuda::cp_async_fits<cuda::Tile128x128>, cuda::launch_sgemm_cp_async<cuda::Tile128x128>},
    {"128x64", cuda::cp_async_fits<cuda::Tile128x64>, cuda::launch_sgemm_cp_async<cuda::Tile128x64>},
    {"64x128", cuda::cp_async_fits<cuda::Tile64x128>, cuda::launch_sgemm_cp_async<cuda::Tile64x128>},
    {"64x64", cuda::cp_async_fits<cuda::Tile64x64>, cuda::launch_sgemm_cp_async<cuda::Tile64x64>},
};
constexpr int kCandidateCount = static_cast<int>(sizeof(kCandidates) / sizeof(kCandidates[0]));
constexpr int kTimedRuns = 3;

// ceil(log2(v)) for v >= 1: the size bucket of the shape class (1 -> 0, 2 -> 1, 3..4 -> 2, 5..8 -> 3 ...).
int log2_ceil(int64_t v) {
  int b = 0;
  while ((int64_t{1} << b) < v) ++b;
  return b;
}

using ShapeClass = std::tuple<int, bool, bool, bool, bool, bool, int, int, int, int>;

ShapeClass shape_class(const GemmBatch& g, int device) {
  return ShapeClass{device,         g.trans_a,       g.trans_b,       g.vec_a,         g.vec_b,
                    g.vec_c,        log2_ceil(g.M), log2_ceil(g.N), log2_ceil(g.K), log2_ceil(g.batch)};
}

// Destroys its two events on every path out (a failing check throws).
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    MINIDL_CUDA_CHECK(cudaEventCreate(&start));
    MINIDL_CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
};

void run_candidate(const Candidate& c, const GemmBatch& g, const KSplit& plan, int device) {
  cuda::run_with_split(g, plan, device, [&](const KSplit& split) { c.launch(g, split, cuda::stream(device)); });
}

// Milliseconds per call of candidate c on g (its output is overwritten with the same bits every time).
float time_candidate(const Candidate& c, const GemmBatch& g, const KSplit& plan, int device) {
  const cudaStream_t s = cuda::stream(device);
  run_candidate(c, g, plan, device);  // warm-up: first-launch costs, caches
  EventPair ev;
  MINIDL_CUDA_CHECK(cudaEventRecord(ev.start, s));
  for (int i = 0; i < kTimedRuns; ++i) run_candidate(c, g, plan, device);
  MINIDL_CUDA_CHECK(cudaEventRecord(ev.stop, s));
  MINIDL_CUDA_CHECK(cudaEventSynchronize(ev.stop));
  float ms = 0;
  MINIDL_CUDA_CHECK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
  return ms / kTimedRuns;
}

// Times every candidate that fits; returns the fastest one's index, or -1 when none fits.
int tune(const GemmBatch& g, const KSplit& plan, int device) {
  const bool log = KernelRegistry::instance().log_level() >= 1;  // MINIDL_LOG_DISPATCH
  int best = -1;
  float best_ms = 0;
  if (log)
    std::fprintf(stderr, "[minidl autotune] matmul v7_autotuned, batch %lld M %lld N %lld K %lld%s%s, %lld K splits:",
                 static_cast<long long>(g.batch), static_cast<long long>(g.M), static_cast<long long>(g.N),
                 static_cast<long long>(g.K), g.trans_a ? " A^T" : "", g.trans_b ? " B^T" : "",
                 static_cast<long long>(plan.splits));
  for (int i = 0; i < kCandidateCount; ++i) {
    if (!kCandidates[i].fits(g, plan.splits, device)) continue;
    const float ms = time_candidate(kCandidates[i], g, plan, device);
    if (log) std::fprintf(stderr, " %s %.4f ms", kCandidates[i].name, ms);
    if (best < 0 || ms < best_ms) {
      best = i;
      best_ms = ms;
    }
  }
  if (log) std::fprintf(stderr, " -> %s\n", best >= 0 ? kCandidates[best].name : "none fits");
  return best;
}

bool run_v7_autotuned(const GemmBatch& g, int device) {
  static std::mutex mutex;
  static std::map<ShapeClass, int> choice;  // shape class -> candidate index (-1: none fits)
  const KSplit plan = cuda::plan_k_split(g, cuda::properties(device).multiProcessorCount);
  const ShapeClass key = shape_class(g, device);
  int pick = -2;  // not tuned yet
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = choice.find(key);
    if (it != choice.end()) pick = it->second;
  }
  if (pick == -2) {
    pick = tune(g, plan, device);  // leaves the output computed (by every candidate in turn)
    std::lock_guard<std::mutex> lock(mutex);
    choice.emplace(key, pick);
    return pick >= 0;
  }
  // A class mixes shapes: the one tuned on may have fit a tile this one does not; the smallest tile
  // (the last candidate) fits the most.
  if (pick >= 0 && !kCandidates[pick].fits(g, plan.splits, device)) pick = kCandidateCount - 1;
  if (pick < 0 || !kCandidates[pick].fits(g, plan.splits, device)) return false;
  run_candidate(kCandidates[pick], g, plan, device);
  return true;
}

}  // namespace

void register_matmul_v7_autotuned_cuda() {
  register_kernel(keys::matmul, DeviceType::cuda, "v7_autotuned", Priority::tuned + 5,
                  "v6/splitk with the block tile timed once per shape class (f32, sm_80+)",
                  cuda::matmul_entry<run_v7_autotuned>);
}

}  // namespace minidl
