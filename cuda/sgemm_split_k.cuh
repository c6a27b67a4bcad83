// cuda/sgemm_split_k.cuh — split-K for the FP32 ladder: when a product has too few output tiles to
// give every multiprocessor work (MNIST fc1: 64 x 128 outputs, K = 9216, two 64 x 64 tiles for 132
// multiprocessors), its K range is cut into `splits` pieces computed by separate blocks into partial
// products, which a second kernel adds up:
//
//     C = sum over s of  op(A)[:, K_s] op(B)[K_s, :],     K_s = [s * k_per_split, (s+1) * k_per_split)
//
//         K --------------------------------------->
//     A   | split 0 | split 1 | ... | split S-1 |          each split: one block per output tile,
//     B^T | split 0 | split 1 | ... | split S-1 |          writing partials[s] ([M, N])
//                    then C = partials[0] + partials[1] + ... (one pass, fixed order)
//
// Deterministic: the partials are added in split order, never with atomics, so a shape gives the same
// bits on every run (but not the same bits as an unsplit kernel: the additions are grouped differently).
// Used by "splitk" (cuda/matmul_splitk.cu) and "v7_autotuned" (cuda/matmul_v7_autotuned.cu).
#pragma once
#include "cuda/sgemm_cp_async.cuh"

namespace minidl {
namespace cuda {

constexpr int kSplitKGranule = 16;   // k_per_split is a multiple of every BK of the ladder's tiles
constexpr int kSplitKMinDepth = 64;  // no split is shallower than this (its pipeline would barely fill)

// The split for g: none when 64 x 64 tiles already give every multiprocessor a block; otherwise enough
// splits for about two blocks per multiprocessor, each at least kSplitKMinDepth deep. It depends only
// on the shape and the GPU, not on the tile a kernel then uses, so every tile gives the same bits.
inline KSplit plan_k_split(const GemmBatch& g, int sm_count) {
  KSplit plan;
  const int64_t tiles = ((g.M + 63) / 64) * ((g.N + 63) / 64) * g.batch;
  if (tiles >= sm_count || g.batch > 65535) return plan;
  int64_t splits = std::min((2 * sm_count + tiles - 1) / tiles, g.K / kSplitKMinDepth);
  splits = std::min(splits, 65535 / g.batch);  // gridDim.z = batch * splits
  if (splits < 2) return plan;
  int64_t depth = (g.K + splits - 1) / splits;
  depth = (depth + kSplitKGranule - 1) / kSplitKGranule * kSplitKGranule;
  splits = (g.K + depth - 1) / depth;  // rounding the depth up can leave fewer splits
  if (splits < 2) return plan;
  plan.splits = splits;
  plan.k_per_split = static_cast<int>(depth);
  return plan;
}

// out[i] = partials[0 * n + i] + partials[1 * n + i] + ... + partials[(splits-1) * n + i], on `stream`.
// Defined in cuda/matmul_splitk.cu.
void splitk_reduce(const float* partials, float* out, int64_t n, int64_t splits, cudaStream_t stream);

// Runs launch(plan) (a launch of the pipelined kernel with that split) and, when the plan splits K,
// gives it a workspace for the partials first and adds them into g.C after. g.C must be the
// contiguous [batch, M, N] output of matmul.
template <class Launch>
void run_with_split(const GemmBatch& g, KSplit plan, int device, Launch&& launch) {
  if (plan.splits == 1) {
    launch(plan);
    return;
  }
  MINIDL_CHECK(g.ldc == g.N && g.stride_c == g.M * g.N, "split-K: the output must be contiguous");
  const int64_t n = g.batch * g.M * g.N;
  const Tensor workspace = scratch_bytes(static_cast<size_t>(plan.splits * n) * sizeof(float), device);
  plan.partials = workspace.data<float>();
  launch(plan);
  splitk_reduce(plan.partials, g.C, n, plan.splits, stream(device));
}

}  // namespace cuda
}  // namespace minidl
