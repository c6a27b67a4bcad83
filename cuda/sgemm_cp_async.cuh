// cuda/sgemm_cp_async.cuh — the FP32 ladder's pipelined kernel: warp-tiled 8 x 8 register tiles (v4)
// fed by a STAGES-deep ring of shared buffers that cp.async fills straight from global memory. The
// kernel of "v6_cp_async" (cuda/matmul_v6_cp_async.cu), and what "v7_autotuned" and "splitk" launch
// with other tiles and K splits (cuda/matmul_v7_autotuned.cu, cuda/matmul_splitk.cu).
//
// The pipeline (S = STAGES = Cfg::kStages, slice t of K lives in buffer t % S):
//     prologue:  start copies of slices 0 .. S-2, one commit group each
//     slice t:   wait until slice t has landed (at most S-2 newer groups pending); barrier;
//                start the copies of slice t+S-1 into buffer (t-1) % S (its FMAs, slice t-1, are done:
//                every thread passed the barrier after them); FMAs of slice t
// so S-1 slices are in flight while one is multiplied, and no register holds a staged value.
//
// Split-K: blockIdx.z = batch entry * splits + split. With splits > 1, split s covers K range
// [s * k_per_split, min(K, (s+1) * k_per_split)) and writes its partial product to
// partials[s][batch entry] ([M, N], contiguous); cuda/matmul_splitk.cu adds the splits up in a fixed
// order. k_per_split is a multiple of every BK, so only the last slice of the last split is ragged.
// Accumulation convention: C (or the partial) is overwritten (=).
#pragma once
#include "cuda/sgemm_common.cuh"

namespace minidl {
namespace cuda {

struct KSplit {
  int64_t splits = 1;
  int k_per_split = 0;        // used when splits > 1
  float* partials = nullptr;  // [splits][batch][M][N] when splits > 1
};

template <class Cfg>
constexpr size_t cp_async_smem_bytes() {
  return static_cast<size_t>(Cfg::kStages) * Cfg::BK * (Cfg::kLdA + Cfg::kLdB) * sizeof(float);
}

template <class Cfg, bool TA, bool TB>
__device__ __forceinline__ void cp_async_slice(float* smem, const Operand& a, const Operand& b, int m0, int n0, int k0,
                                               int stage) {
  constexpr int STAGES = Cfg::kStages;
  constexpr int kStageA = Cfg::BK * Cfg::kLdA, kStageB = Cfg::BK * Cfg::kLdB;
  float* As = smem + stage * kStageA;
  float* Bs = smem + STAGES * kStageA + stage * kStageB;
  cp_async_tile<Cfg::BM, Cfg::BK, Cfg::kThreads, !TA, SmemMNMajor<Cfg::kLdA>>(As, a, m0, k0);
  cp_async_tile<Cfg::BN, Cfg::BK, Cfg::kThreads, TB, SmemMNMajor<Cfg::kLdB>>(Bs, b, n0, k0);
}

template <class Cfg, bool TA, bool TB>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks) sgemm_cp_async_kernel(GemmBatch g, KSplit split) {
  constexpr int STAGES = Cfg::kStages;
  static_assert(STAGES >= 2, "a pipeline needs two buffers at least");
  extern __shared__ __align__(16) float smem[];  // As[STAGES][BK][kLdA], then Bs[STAGES][BK][kLdB]
  constexpr int kStageA = Cfg::BK * Cfg::kLdA, kStageB = Cfg::BK * Cfg::kLdB;
  const int M = static_cast<int>(g.M), N = static_cast<int>(g.N), K = static_cast<int>(g.K);
  const int m0 = static_cast<int>(blockIdx.y) * Cfg::BM, n0 = static_cast<int>(blockIdx.x) * Cfg::BN;
  const int64_t r = blockIdx.z / split.splits;                  // batch entry
  const int s = static_cast<int>(blockIdx.z % split.splits);  // K split
  const int k_begin = split.splits > 1 ? s * split.k_per_split : 0;
  const int k_end = split.splits > 1 ? min(K, k_begin + split.k_per_split) : K;
  const Operand a = make_operand(g.A, g.lda, g.stride_a, r, M, k_end, g.vec_a);
  const Operand b = make_operand(g.B, g.ldb, g.stride_b, r, N, k_end, g.vec_b);
  const int slices = max(0, (k_end - k_begin + Cfg::BK - 1) / Cfg::BK);

#pragma unroll
  for (int t = 0; t < STAGES - 1; ++t) {
    if (t < slices) cp_async_slice<Cfg, TA, TB>(smem, a, b, m0, n0, k_begin + t * Cfg::BK, t);
    cp_async_commit();  // an empty group when there is no slice t: keeps the group count per slice fixed
  }
  const int2 o = thread_tile_origin<Cfg>();
  float acc[8][8];
  zero(acc);
  for (int t = 0; t < slices; ++t) {
    cp_async_wait<STAGES - 2>();  // this thread's copies of slice t are done ...
    __syncthreads();              // ... and everyone's; and every thread has finished slice t-1's FMAs
    const int next = t + STAGES - 1;
    if (next < slices) cp_async_slice<Cfg, TA, TB>(smem, a, b, m0, n0, k_begin + next * Cfg::BK, next % STAGES);
    cp_async_commit();
    const int stage = t % STAGES;
    fma_slice<Cfg>(smem + stage * kStageA, smem + STAGES * kStageA + stage * kStageB, o.x, o.y, acc);
  }
  cp_async_wait<0>();  // only empty groups can be pending here; leave none behind

  if (split.splits == 1) {
    store_thread_tile<Cfg>(acc, g.C + r * g.stride_c, g.ldc, M, N, m0 + o.x, n0 + o.y, g.vec_c);
  } else {
    float* partial = split.partials + (static_cast<int64_t>(s) * g.batch + r) * g.M * g.N;
    store_thread_tile<Cfg>(acc, partial, g.N, M, N, m0 + o.x, n0 + o.y, g.N % 4 == 0);
  }
}

// Whether the pipelined kernel with tile Cfg can take g with `splits` K splits (the caller declines
// otherwise).
template <class Cfg>
bool cp_async_fits(const GemmBatch& g, int64_t splits, int device) {
  return ladder_fits(g, Cfg::BM, splits) && properties(device).major >= 8;  // cp.async: sm_80+
}

// Launches the pipelined kernel with tile Cfg (Cfg::kStages buffers) on `stream` (the caller has made the
// device current and checked cp_async_fits). split.partials must hold splits * batch * M * N floats when
// splits > 1.
template <class Cfg>
void launch_sgemm_cp_async(const GemmBatch& g, const KSplit& split, cudaStream_t stream) {
  constexpr size_t smem = cp_async_smem_bytes<Cfg>();
  launch_for_flags(g.trans_a, g.trans_b, [&](auto ta, auto tb) {
    auto* kernel = sgemm_cp_async_kernel<Cfg, decltype(ta)::value, decltype(tb)::value>;
    allow_dynamic_smem(kernel, smem);
    kernel<<<tile_grid<Cfg>(g, split.splits), Cfg::kThreads, smem, stream>>>(g, split);
  });
  MINIDL_LAUNCH_CHECK();
}

}  // namespace cuda
}  // namespace minidl
