// cuda/matmul_v4_warptiled.cu — matmul kernel "v4_warptiled", step 4 of the FP32 GEMM ladder
// (docs/gemm-ladder.md): out[r] = op(a[r]) op(b[r]) in exact float32 FMAs, any M, N, K, all four
// transpose flags, float32 only. Accumulation convention: out is overwritten (=).
//
// Where v3 (v3_register_blocked, cuda/gemm_tiled.cuh) stands: 128 x 128 (or 64 x 64) block tiles, 8 x 8
// outputs per thread, float4 global and shared loads, the A tile stored transposed (As[k][m]) so the inner
// loop reads rows of both tiles, K slices of 8. Its threads are laid out row-major over the block tile:
// a warp (2 x 16 threads) owns a 16 x 128 strip, so per k it reads 16 + 128 floats of shared memory.
//
// What changes:
//   - warp tiling: the block tile is cut into warp tiles (64 x 32 in a 128 x 128 block, 2 x 4 warps),
//     and a warp's 32 lanes (8 x 4) cover their warp tile, each lane owning 8 x 8 outputs as four 4 x 4
//     pieces (cuda/sgemm_common.cuh, WarpTiling). Per k a warp then reads 64 + 32 floats instead of
//     16 + 128 for the same 2048 FMAs, and its shared loads fall on fewer distinct words;
//          block 128 x 128                        one warp tile 64 x 32
//          +-------+-------+-------+-------+      lanes 8 (m) x 4 (n); lane (i, j) owns rows
//          | w0    | w1    | w2    | w3    |      {0, 32} + 4i + {0..3} and columns {0, 16} +
//          +-------+-------+-------+-------+      4j + {0..3}: each float4 read of a staged row is
//          | w4    | w5    | w6    | w7    |      8 (A) or 4 (B) consecutive 16-byte words
//          +-------+-------+-------+-------+
//   - K slices of 16 instead of 8: half the barriers per FMA, twice the bytes in flight per load phase;
//   - K-contiguous tiles (A plain, B transposed) are stored transposed with a lane layout whose four
//     scalar stores hit 32 different banks (StagedTile).
// Still load -> barrier -> compute -> barrier: the warps wait for global memory at every slice (v5 overlaps).
// Why faster: half the barriers and fewer shared loads issued per FMA than v3.
// Tiles: 128 x 128 when that gives every multiprocessor a block, else 64 x 64 (v3's rule, use_128_tiles).
#include "cuda/sgemm_common.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

using cuda::GemmBatch;

template <class Cfg, bool TA, bool TB>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks) sgemm_warptiled_kernel(GemmBatch g) {
  __shared__ __align__(16) float As[Cfg::BK * Cfg::kLdA];  // As[k][m] = op(A)(m0 + m, k0 + k)
  __shared__ __align__(16) float Bs[Cfg::BK * Cfg::kLdB];  // Bs[k][n] = op(B)(k0 + k, n0 + n)
  const int M = static_cast<int>(g.M), N = static_cast<int>(g.N), K = static_cast<int>(g.K);
  const int m0 = static_cast<int>(blockIdx.y) * Cfg::BM, n0 = static_cast<int>(blockIdx.x) * Cfg::BN;
  const int64_t r = blockIdx.z;  // batch entry
  const cuda::Operand a = cuda::make_operand(g.A, g.lda, g.stride_a, r, M, K, g.vec_a);
  const cuda::Operand b = cuda::make_operand(g.B, g.ldb, g.stride_b, r, N, K, g.vec_b);
  cuda::StagedTile<Cfg::BM, Cfg::BK, Cfg::kThreads, Cfg::kLdA, !TA> a_tile;
  cuda::StagedTile<Cfg::BN, Cfg::BK, Cfg::kThreads, Cfg::kLdB, TB> b_tile;
  const int2 t = cuda::thread_tile_origin<Cfg>();

  float acc[8][8];
  cuda::zero(acc);
  for (int k0 = 0; k0 < K; k0 += Cfg::BK) {
    a_tile.load(a, m0, k0);
    b_tile.load(b, n0, k0);
    a_tile.store(As);
    b_tile.store(Bs);
    __syncthreads();
    cuda::fma_slice<Cfg>(As, Bs, t.x, t.y, acc);
    __syncthreads();
  }
  cuda::store_thread_tile<Cfg>(acc, g.C + r * g.stride_c, g.ldc, M, N, m0 + t.x, n0 + t.y, g.vec_c);
}

bool run_v4_warptiled(const GemmBatch& g, int device) {
  if (!cuda::ladder_fits(g, 64)) return false;
  cuda::with_rule_tile(g, device, [&](auto tile) {
    using Cfg = decltype(tile);
    cuda::launch_for_flags(g.trans_a, g.trans_b, [&](auto ta, auto tb) {
      sgemm_warptiled_kernel<Cfg, decltype(ta)::value, decltype(tb)::value>
          <<<cuda::tile_grid<Cfg>(g), Cfg::kThreads, 0, cuda::stream(device)>>>(g);
    });
    MINIDL_LAUNCH_CHECK();
  });
  return true;
}

}  // namespace

void register_matmul_v4_warptiled_cuda() {
  register_kernel(keys::matmul, DeviceType::cuda, "v4_warptiled", Priority::tuned + 1,
                  "v3 + 2-D warp tiling (64x32 warp tiles, 8x8 per lane), K slices of 16 (f32)",
                  cuda::matmul_entry<run_v4_warptiled>);
}

}  // namespace minidl
