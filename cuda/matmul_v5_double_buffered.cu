// cuda/matmul_v5_double_buffered.cu — matmul kernel "v5_double_buffered", step 5 of the FP32 GEMM
// ladder (docs/gemm-ladder.md): out[r] = op(a[r]) op(b[r]) in exact float32 FMAs, any M, N, K, all four
// transpose flags, float32 only. Accumulation convention: out is overwritten (=).
//
// What changes from v4 (cuda/matmul_v4_warptiled.cu): the next K slice is fetched while this one is
// multiplied. Two shared buffers per operand; the global loads of slice t+1 go into registers before
// the FMAs of slice t and are stored to the other buffer after them:
//
//     v4:  load t | sync | FMAs t | sync | load t+1 | sync | FMAs t+1 | sync ...   (FMA units idle during loads)
//     v5:  load 0 -> buf 0 | sync | [issue loads t+1] FMAs t on buf t%2 [store t+1 -> buf (t+1)%2] | sync ...
//
// The loads' latency (hundreds of cycles) is spent on the 64 x BK FMAs of each thread instead of in
// the barrier, and one barrier per slice suffices: the buffer written in iteration t was last read in
// iteration t-1, which every thread has left at that barrier. Cost: the staged float4s stay live
// across the FMAs (8 extra registers per operand at 128 x 128), and twice the shared memory (34 KB).
// Why faster: v4 leaves the FMA pipes idle for one global-memory latency per K slice, hidden only by the
// other resident block; v5 overlaps it.
// Tiles: v4's rule (128 x 128 when it fills the GPU, else 64 x 64).
#include "cuda/sgemm_common.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

using cuda::GemmBatch;

template <class Cfg, bool TA, bool TB>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks) sgemm_double_buffered_kernel(GemmBatch g) {
  __shared__ __align__(16) float As[2][Cfg::BK * Cfg::kLdA];  // As[buf][k][m]
  __shared__ __align__(16) float Bs[2][Cfg::BK * Cfg::kLdB];  // Bs[buf][k][n]
  const int M = static_cast<int>(g.M), N = static_cast<int>(g.N), K = static_cast<int>(g.K);
  const int m0 = static_cast<int>(blockIdx.y) * Cfg::BM, n0 = static_cast<int>(blockIdx.x) * Cfg::BN;
  const int64_t r = blockIdx.z;  // batch entry
  const cuda::Operand a = cuda::make_operand(g.A, g.lda, g.stride_a, r, M, K, g.vec_a);
  const cuda::Operand b = cuda::make_operand(g.B, g.ldb, g.stride_b, r, N, K, g.vec_b);
  cuda::StagedTile<Cfg::BM, Cfg::BK, Cfg::kThreads, Cfg::kLdA, !TA> a_tile;
  cuda::StagedTile<Cfg::BN, Cfg::BK, Cfg::kThreads, Cfg::kLdB, TB> b_tile;
  const int2 t = cuda::thread_tile_origin<Cfg>();
  const int slices = (K + Cfg::BK - 1) / Cfg::BK;

  float acc[8][8];
  cuda::zero(acc);
  if (slices > 0) {
    a_tile.load(a, m0, 0);
    b_tile.load(b, n0, 0);
    a_tile.store(As[0]);
    b_tile.store(Bs[0]);
    __syncthreads();
  }
  for (int s = 0; s < slices; ++s) {
    const int cur = s & 1;
    const bool more = s + 1 < slices;
    if (more) {  // in flight during the FMAs below
      a_tile.load(a, m0, (s + 1) * Cfg::BK);
      b_tile.load(b, n0, (s + 1) * Cfg::BK);
    }
    cuda::fma_slice<Cfg>(As[cur], Bs[cur], t.x, t.y, acc);
    if (more) {  // the other buffer: last read in iteration s-1, which every thread has finished
      a_tile.store(As[cur ^ 1]);
      b_tile.store(Bs[cur ^ 1]);
    }
    __syncthreads();
  }
  cuda::store_thread_tile<Cfg>(acc, g.C + r * g.stride_c, g.ldc, M, N, m0 + t.x, n0 + t.y, g.vec_c);
}

bool run_v5_double_buffered(const GemmBatch& g, int device) {
  if (!cuda::ladder_fits(g, 64)) return false;
  cuda::with_rule_tile(g, device, [&](auto tile) {
    using Cfg = decltype(tile);
    cuda::launch_for_flags(g.trans_a, g.trans_b, [&](auto ta, auto tb) {
      sgemm_double_buffered_kernel<Cfg, decltype(ta)::value, decltype(tb)::value>
          <<<cuda::tile_grid<Cfg>(g), Cfg::kThreads, 0, cuda::stream(device)>>>(g);
    });
    MINIDL_LAUNCH_CHECK();
  });
  return true;
}

}  // namespace

void register_matmul_v5_double_buffered_cuda() {
  register_kernel(keys::matmul, DeviceType::cuda, "v5_double_buffered", Priority::tuned + 2,
                  "v4 + next K slice loaded to registers during the FMAs, 2 shared buffers (f32)",
                  cuda::matmul_entry<run_v5_double_buffered>);
}

}  // namespace minidl
