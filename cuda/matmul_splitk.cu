// cuda/matmul_splitk.cu — matmul kernel "splitk", the FP32 ladder's kernel for tall-skinny products
// (docs/gemm-ladder.md): out[r] = op(a[r]) op(b[r]) in float32 FMAs, any M, N, K, all four transpose
// flags, float32 only, compute capability 8.0 and up. Accumulation convention: out is overwritten (=).
//
// What changes from v6 (cuda/matmul_v6_cp_async.cu): when the output has fewer 64 x 64 tiles than the
// GPU has multiprocessors, K is split across blocks (cuda/sgemm_split_k.cuh draws it): the same
// pipelined kernel computes one partial product per split into a workspace, and a second kernel adds
// the partials in split order. Every other shape runs exactly as v6.
// Why faster: a product with few output tiles (MNIST fc1, 64 x 128 x 9216: two 64 x 64 tiles) leaves
// most multiprocessors idle; split over K it runs on all of them, and the partials cost little traffic.
// Rounding: a split sum groups the additions differently from the unsplit one, so results differ from
// v6 in the last bits (still exact float32 FMAs, deterministic run to run).
// ptxas (sm_90, CUDA 13.0): the pipelined kernel as v6 (no spills); the reduction 32 registers.
#include "cuda/device_utils.cuh"
#include "cuda/sgemm_split_k.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace cuda {

// out[i] = sum over s in 0, 1, ..., splits-1 of partials[s * n + i]. VEC = float4 per thread (n % 4 == 0,
// 16-byte aligned buffers; n then counts float4s).
template <bool VEC>
__global__ void splitk_reduce_kernel(const float* __restrict__ partials, float* __restrict__ out, int64_t n,
                                     int64_t splits) {
  using V = typename std::conditional<VEC, float4, float>::type;
  const V* p = reinterpret_cast<const V*>(partials);
  V* o = reinterpret_cast<V*>(out);
  for (int64_t i = global_thread_index(); i < n; i += global_thread_count()) {
    V sum = p[i];
    for (int64_t s = 1; s < splits; ++s) {
      const V v = p[s * n + i];
      if constexpr (VEC) {
        sum.x += v.x;
        sum.y += v.y;
        sum.z += v.z;
        sum.w += v.w;
      } else {
        sum += v;
      }
    }
    o[i] = sum;
  }
}

void splitk_reduce(const float* partials, float* out, int64_t n, int64_t splits, cudaStream_t stream) {
  if (n % 4 == 0 && reinterpret_cast<uintptr_t>(partials) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0) {
    splitk_reduce_kernel<true><<<grid_for(n / 4, kBlock), kBlock, 0, stream>>>(partials, out, n / 4, splits);
  } else {
    splitk_reduce_kernel<false><<<grid_for(n, kBlock), kBlock, 0, stream>>>(partials, out, n, splits);
  }
  MINIDL_LAUNCH_CHECK();
}

}  // namespace cuda

namespace {

bool run_splitk(const cuda::GemmBatch& g, int device) {
  const cuda::KSplit plan = cuda::plan_k_split(g, cuda::properties(device).multiProcessorCount);
  if (!cuda::cp_async_fits<cuda::Tile64x64>(g, plan.splits, device)) return false;
  // v6's tile rule: a plan that splits K has too few tiles for 128 x 128, so it runs 64 x 64 tiles.
  cuda::run_with_split(g, plan, device, [&](const cuda::KSplit& split) {
    cuda::with_rule_tile(g, device, [&](auto tile) {
      cuda::launch_sgemm_cp_async<decltype(tile)>(g, split, cuda::stream(device));
    });
  });
  return true;
}

}  // namespace

void register_matmul_splitk_cuda() {
  register_kernel(keys::matmul, DeviceType::cuda, "splitk", Priority::tuned + 4,
                  "v6 + K split over blocks when the output has too few tiles (fc1), partials "
                  "added in order (f32, sm_80+)",
                  cuda::matmul_entry<run_splitk>);
}

}  // namespace minidl
