// cuda/matmul_tf32_mma.cu — matmul kernel "tf32_mma", the first tensor-core step of the GEMM ladder
// (docs/gemm-ladder.md): out[r] = op(a[r]) op(b[r]) with the products on TF32 tensor cores, any M, N, K,
// all four transpose flags, float32 only, compute capability 8.0 and up. Accumulation convention: out
// is overwritten (=).
//
// Precision: TF32 keeps 10 of float32's 23 mantissa bits. Each input is rounded to the nearest TF32
// (cvt.rna) before the multiply; products and sums are float32. The error of an output grows like
// 2^-11 sqrt(K) times the size of the products (tests: tf32_atol in tests/test_util.h). So this kernel
// declines unless MINIDL_TF32=1 or it is selected by name (cuda/sgemm_common.cuh, tf32_kernel_allowed).
//
// What changes from the FP32 ladder: the multiply-adds. One warp-wide mma.sync.m16n8k8 instruction
// multiplies a 16 x 8 tile of A by an 8 x 8 tile of B (1024 FMAs) on the tensor cores; each lane feeds
// it 4 values of A and 2 of B and holds 4 of the 16 x 8 result:
//
//     lane = 4 g + t (g = 0..7, t = 0..3)
//     A fragment  a0 = A[g][t]   a1 = A[g+8][t]   a2 = A[g][t+4]   a3 = A[g+8][t+4]     (16 x 8, m x k)
//     B fragment  b0 = B[t][g]   b1 = B[t+4][g]                                        (8 x 8, k x n)
//     C fragment  c0 = C[g][2t]  c1 = C[g][2t+1]  c2 = C[g+8][2t]  c3 = C[g+8][2t+1]   (16 x 8)
//
// Block tile 128 x 128, K slices of 32, 8 warps as 2 x 4, warp tile 64 x 32 = 4 x 4 mma tiles (64
// accumulators per lane). Per 8-deep k step a warp reads 16 A and 8 B values per lane from shared memory
// for 16 mma: the fragment reads are scalar, laid out to hit 32 different banks (TileLayout below).
// The shared tiles keep the operand's stored orientation, so every copy is a 16-byte cp.async when rows
// are aligned (v6's 3-stage pipeline, cuda/sgemm_common.cuh; 4-byte copies otherwise).
// Why faster: an H100/H200 SM does ~4x more TF32 FMAs per clock on mma.sync than FP32 FFMAs.
// Not done: ldmatrix fragment loads, larger warp tiles, split-K (fc1 runs 1 block: slow there).
#include <type_traits>

#include "cuda/mma_tf32.cuh"
#include "cuda/sgemm_common.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

using cuda::GemmBatch;
using cuda::Operand;

constexpr char kName[] = "tf32_mma";
constexpr int kBM = 128, kBN = 128, kBK = 32, kStages = 3, kThreads = 256;
constexpr int kWarpM = 64, kWarpN = 32, kWarpsN = kBN / kWarpN;  // 2 x 4 warps
constexpr int kMmaM = kWarpM / 16, kMmaN = kWarpN / 8;           // mma tiles per warp tile

// How an operand tile sits in shared memory: in its stored orientation, so cp.async can copy 16 bytes
// at a time. K-contiguous operands: S[mn][k] with rows of 36 floats; a fragment read (mn = base + g,
// k = base + t) hits bank 4g + t. MN-contiguous: S[k][mn] with rows of BMN + 8 floats; bank 8t + g.
template <int BMN, bool K_CONTIG>
using TileLayout = std::conditional_t<K_CONTIG, cuda::SmemKMajor<kBK + 4>, cuda::SmemMNMajor<BMN + 8>>;
template <int BMN, bool K_CONTIG>
constexpr int tile_floats() {
  return K_CONTIG ? BMN * (kBK + 4) : kBK * (BMN + 8);
}
template <bool TA, bool TB>
constexpr size_t smem_bytes() {
  return sizeof(float) * kStages * (tile_floats<kBM, !TA>() + tile_floats<kBN, TB>());
}

using cuda::mma_tf32_16x8x8;
using cuda::to_tf32;

template <bool TA, bool TB>
__device__ __forceinline__ void copy_slice(float* smem, const Operand& a, const Operand& b, int m0, int n0, int k0,
                                           int stage) {
  constexpr int kTileA = tile_floats<kBM, !TA>(), kTileB = tile_floats<kBN, TB>();
  cuda::cp_async_tile<kBM, kBK, kThreads, !TA, TileLayout<kBM, !TA>>(smem + stage * kTileA, a, m0, k0);
  cuda::cp_async_tile<kBN, kBK, kThreads, TB, TileLayout<kBN, TB>>(smem + kStages * kTileA + stage * kTileB, b, n0,
                                                                    k0);
}

template <bool TA, bool TB>
__global__ void __launch_bounds__(kThreads, 2) tf32_mma_kernel(GemmBatch g) {
  using LA = TileLayout<kBM, !TA>;
  using LB = TileLayout<kBN, TB>;
  constexpr int kTileA = tile_floats<kBM, !TA>(), kTileB = tile_floats<kBN, TB>();
  extern __shared__ __align__(16) float smem[];  // A tiles [kStages][kTileA], then B tiles [kStages][kTileB]
  const int M = static_cast<int>(g.M), N = static_cast<int>(g.N), K = static_cast<int>(g.K);
  const int m0 = static_cast<int>(blockIdx.y) * kBM, n0 = static_cast<int>(blockIdx.x) * kBN;
  const int64_t r = blockIdx.z;  // batch entry
  const Operand a = cuda::make_operand(g.A, g.lda, g.stride_a, r, M, K, g.vec_a);
  const Operand b = cuda::make_operand(g.B, g.ldb, g.stride_b, r, N, K, g.vec_b);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int gq = lane / 4, tq = lane % 4;  // g and t of the fragment drawings
  const int wm = (warp / kWarpsN) * kWarpM, wn = (warp % kWarpsN) * kWarpN;
  const int slices = (K + kBK - 1) / kBK;

  float acc[kMmaM][kMmaN][4];
#pragma unroll
  for (int i = 0; i < kMmaM; ++i)
#pragma unroll
    for (int j = 0; j < kMmaN; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  // The pipeline of cuda/sgemm_cp_async.cuh: slice t in buffer t % kStages, kStages - 1 slices in flight.
#pragma unroll
  for (int t = 0; t < kStages - 1; ++t) {
    if (t < slices) copy_slice<TA, TB>(smem, a, b, m0, n0, t * kBK, t);
    cuda::cp_async_commit();
  }
  for (int t = 0; t < slices; ++t) {
    cuda::cp_async_wait<kStages - 2>();
    __syncthreads();
    const int next = t + kStages - 1;
    if (next < slices) copy_slice<TA, TB>(smem, a, b, m0, n0, next * kBK, next % kStages);
    cuda::cp_async_commit();
    const float* As = smem + (t % kStages) * kTileA;
    const float* Bs = smem + kStages * kTileA + (t % kStages) * kTileB;
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 8) {
      uint32_t af[kMmaM][4], bf[kMmaN][2];
#pragma unroll
      for (int i = 0; i < kMmaM; ++i) {
        const int row = wm + i * 16 + gq, k = kk + tq;
        af[i][0] = to_tf32(As[LA::offset(row, k)]);
        af[i][1] = to_tf32(As[LA::offset(row + 8, k)]);
        af[i][2] = to_tf32(As[LA::offset(row, k + 4)]);
        af[i][3] = to_tf32(As[LA::offset(row + 8, k + 4)]);
      }
#pragma unroll
      for (int j = 0; j < kMmaN; ++j) {
        const int col = wn + j * 8 + gq, k = kk + tq;
        bf[j][0] = to_tf32(Bs[LB::offset(col, k)]);
        bf[j][1] = to_tf32(Bs[LB::offset(col, k + 4)]);
      }
#pragma unroll
      for (int i = 0; i < kMmaM; ++i)
#pragma unroll
        for (int j = 0; j < kMmaN; ++j) mma_tf32_16x8x8(acc[i][j], af[i], bf[j]);
    }
  }
  cuda::cp_async_wait<0>();

  float* C = g.C + r * g.stride_c;
#pragma unroll
  for (int i = 0; i < kMmaM; ++i)
#pragma unroll
    for (int j = 0; j < kMmaN; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = m0 + wm + i * 16 + gq + (e / 2) * 8, col = n0 + wn + j * 8 + 2 * tq + e % 2;
        if (row < M && col < N) C[static_cast<int64_t>(row) * g.ldc + col] = acc[i][j][e];
      }
}

bool run_tf32_mma(const GemmBatch& g, int device) {
  const cudaDeviceProp& prop = cuda::properties(device);
  if (!cuda::tf32_kernel_allowed(kName) || prop.major < 8 || !cuda::ladder_fits(g, kBM)) return false;
  const dim3 grid(static_cast<unsigned>((g.N + kBN - 1) / kBN), static_cast<unsigned>((g.M + kBM - 1) / kBM),
                  static_cast<unsigned>(g.batch));
  bool launched = false;
  cuda::launch_for_flags(g.trans_a, g.trans_b, [&](auto ta, auto tb) {
    constexpr bool TA = decltype(ta)::value, TB = decltype(tb)::value;
    constexpr size_t smem = smem_bytes<TA, TB>();
    if (smem > prop.sharedMemPerBlockOptin) return;  // not on this GPU: decline
    cuda::allow_dynamic_smem(tf32_mma_kernel<TA, TB>, smem);
    tf32_mma_kernel<TA, TB><<<grid, kThreads, smem, cuda::stream(device)>>>(g);
    MINIDL_LAUNCH_CHECK();
    launched = true;
  });
  return launched;
}

}  // namespace

void register_matmul_tf32_mma_cuda() {
  // The TF32 kernels sit below the exact FP32 ladder (tuned and up) and keep their ladder order among
  // themselves (portable + 6 to + 9; no two kernels of a key share a priority): they decline unless
  // TF32 is allowed or they are selected, and under TF32 cuBLAS (preferred) serves first.
  register_kernel(keys::matmul, DeviceType::cuda, kName, Priority::portable + 6,
                  "TF32 tensor cores: mma.sync m16n8k8, 128x128 tiles, cp.async (only with MINIDL_TF32=1 "
                  "or when selected; sm_80+)",
                  cuda::matmul_entry<run_tf32_mma>);
}

}  // namespace minidl
