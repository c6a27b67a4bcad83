// cuda/gemm_tiled.cuh — our own float32 GEMM (no cuBLAS), register-blocked, for matmul's
// "v3_register_blocked" kernel and for conv2d's "im2col_gemm" kernels.
//
// The problem is a GemmBatch (cuda/gemm_batch.h): for row-major matrices and a batch of (A_r, B_r)
// pairs summed in groups,
//
//     C_z = sum over r in [z*group, min((z+1)*group, batch)) of op(A_r) op(B_r),      z = 0, 1, ...
//
// group = 1 is an ordinary batched GEMM; group > 1 lets conv2d's weight gradient sum over samples
// inside the kernel (a split over the batch, whose few partial results are then added up).
// Accumulation convention: C is overwritten (=).
//
// How it is fast (each step a classic of hand-written SGEMM, see e.g. Simon Boehm's "How to optimize
// a CUDA matmul kernel"):
//   - a block computes a BM x BN tile of C (128 x 128 with 256 threads, or 64 x 64 with 64 threads
//     when the problem is too small to fill the GPU with big tiles);
//   - it walks K in slices of BK = 8: the block stages an A slice [BM x 8] and a B slice [8 x BN] in
//     shared memory, both stored k-major (As[k][m], Bs[k][n]) so the inner loop reads rows;
//   - each thread owns an 8 x 8 tile of C in registers: per k it loads 8 values of A and 8 of B from
//     shared memory and does 64 FMAs, so shared-memory traffic is 16 loads per 64 FMAs instead of 2
//     per 1 with one output per thread;
//   - the thread's 8 rows are two groups of 4 (ty*4.. and BM/2 + ty*4..), likewise its columns, so the
//     float4 reads of consecutive threads are consecutive 16-byte words: no bank conflicts;
//   - global loads are float4 when the matrix rows are 16-byte aligned, scalar otherwise and at the
//     ragged edges (out-of-range elements load as 0, so odd M, N, K need no special case); shared
//     rows are padded by 4 floats so the transposing stores do not conflict either.
// Not done here: double buffering of the shared tiles, tensor cores (FP32 FFMA only: exact float32);
// the matmul ladder after v3 (cuda/sgemm_common.cuh, docs/gemm-ladder.md) takes those steps.
#pragma once
#include <algorithm>
#include <cstdint>

#include "cuda/cuda_common.h"
#include "cuda/gemm_batch.h"

namespace minidl {
namespace cuda {

namespace gemm_detail {

constexpr int kBK = 8;   // K slice staged in shared memory per step
constexpr int kPad = 4;  // floats of padding per shared row (keeps rows 16-byte aligned)

// Copies the ROWS x COLS tile at (r0, c0) of a row-major matrix (row length ld, extent rows x cols,
// zero outside it) into shared memory, either as is (smem[r * LDS + c]) or transposed
// (smem[c * LDS + r]). Each thread moves whole groups of 4 consecutive elements of a row.
template <int ROWS, int COLS, int THREADS, bool TRANSPOSE, int LDS>
__device__ __forceinline__ void load_tile(const float* __restrict__ src, int64_t ld, int rows, int cols,
                                          int r0, int c0, bool vec, float* __restrict__ smem) {
  constexpr int kVecs = ROWS * COLS / 4;
  static_assert(COLS % 4 == 0 && kVecs % THREADS == 0, "tile must split evenly into float4s per thread");
#pragma unroll
  for (int it = 0; it < kVecs / THREADS; ++it) {
    const int v = it * THREADS + static_cast<int>(threadIdx.x);
    const int r = v / (COLS / 4), c = (v % (COLS / 4)) * 4;
    const int gr = r0 + r, gc = c0 + c;
    float4 val;
    if (vec && gr < rows && gc + 3 < cols) {
      val = *reinterpret_cast<const float4*>(src + static_cast<int64_t>(gr) * ld + gc);
    } else {
      const bool row_ok = gr < rows;
      const float* p = src + static_cast<int64_t>(gr) * ld + gc;
      val.x = (row_ok && gc + 0 < cols) ? p[0] : 0.0f;
      val.y = (row_ok && gc + 1 < cols) ? p[1] : 0.0f;
      val.z = (row_ok && gc + 2 < cols) ? p[2] : 0.0f;
      val.w = (row_ok && gc + 3 < cols) ? p[3] : 0.0f;
    }
    if (TRANSPOSE) {
      smem[(c + 0) * LDS + r] = val.x;
      smem[(c + 1) * LDS + r] = val.y;
      smem[(c + 2) * LDS + r] = val.z;
      smem[(c + 3) * LDS + r] = val.w;
    } else {
      *reinterpret_cast<float4*>(smem + r * LDS + c) = val;
    }
  }
}

// One block per BM x BN tile of one C_z (blockIdx.z = z); (BM/8) x (BN/8) threads, each owning an
// 8 x 8 register tile. The launch bounds ask for 16 resident warps per multiprocessor, which caps
// registers at 128 per thread (64 of them the accumulators). Tile coordinates are 32-bit (the launcher
// checks M, N, K fit) and there is no grid-stride loop over z: both keep the kernel within those 128
// registers without spilling (ptxas -v), where 64-bit coordinates spilled.
template <int BM, int BN, bool TA, bool TB>
__global__ void __launch_bounds__((BM / 8) * (BN / 8), 512 / ((BM / 8) * (BN / 8)))
    gemm_register_blocked_kernel(GemmBatch g) {
  constexpr int kThreads = (BM / 8) * (BN / 8);
  constexpr int kLdA = BM + kPad, kLdB = BN + kPad;
  __shared__ __align__(16) float As[kBK][kLdA];  // As[k][m] = op(A)(m0 + m, k0 + k)
  __shared__ __align__(16) float Bs[kBK][kLdB];  // Bs[k][n] = op(B)(k0 + k, n0 + n)

  const int tx = static_cast<int>(threadIdx.x) % (BN / 8);  // column group of this thread
  const int ty = static_cast<int>(threadIdx.x) / (BN / 8);  // row group of this thread
  const int m0 = static_cast<int>(blockIdx.y) * BM;
  const int n0 = static_cast<int>(blockIdx.x) * BN;
  const int M = static_cast<int>(g.M), N = static_cast<int>(g.N), K = static_cast<int>(g.K);
  const int64_t z = blockIdx.z;

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

  const int64_t r_end = std::min(g.batch, (z + 1) * g.group);
  for (int64_t r = z * g.group; r < r_end; ++r) {
    const float* A = g.A + r * g.stride_a;
    const float* B = g.B + r * g.stride_b;
    for (int k0 = 0; k0 < K; k0 += kBK) {
      // A stored [M, K]: tile rows are m, contiguous along k -> transpose into As[k][m].
      // A stored [K, M] (trans_a): tile rows are k, contiguous along m -> copy as is.
      load_tile<TA ? kBK : BM, TA ? BM : kBK, kThreads, !TA, kLdA>(A, g.lda, TA ? K : M, TA ? M : K, TA ? k0 : m0,
                                                                   TA ? m0 : k0, g.vec_a, &As[0][0]);
      // B stored [K, N]: rows are k -> copy.  B stored [N, K] (trans_b): rows are n -> transpose.
      load_tile<TB ? BN : kBK, TB ? kBK : BN, kThreads, TB, kLdB>(B, g.ldb, TB ? N : K, TB ? K : N, TB ? n0 : k0,
                                                                  TB ? k0 : n0, g.vec_b, &Bs[0][0]);
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kBK; ++k) {
        const float4 a_lo = *reinterpret_cast<const float4*>(&As[k][ty * 4]);
        const float4 a_hi = *reinterpret_cast<const float4*>(&As[k][BM / 2 + ty * 4]);
        const float4 b_lo = *reinterpret_cast<const float4*>(&Bs[k][tx * 4]);
        const float4 b_hi = *reinterpret_cast<const float4*>(&Bs[k][BN / 2 + tx * 4]);
        const float a[8] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w};
        const float b[8] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }
      __syncthreads();
    }
  }

  // Register tile row i lives at C row m0 + (i / 4) * BM/2 + ty*4 + i % 4; columns likewise.
  float* C = g.C + z * g.stride_c;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int m = m0 + (i / 4) * (BM / 2) + ty * 4 + (i % 4);
    if (m >= M) continue;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int n = n0 + half * (BN / 2) + tx * 4;
      float* out = C + static_cast<int64_t>(m) * g.ldc + n;
      const float* v = &acc[i][half * 4];
      if (g.vec_c && n + 3 < N) {
        *reinterpret_cast<float4*>(out) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (n + j < N) out[j] = v[j];
      }
    }
  }
}

template <int BM, int BN>
void launch(const GemmBatch& g, int64_t outputs, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((g.N + BN - 1) / BN), static_cast<unsigned>((g.M + BM - 1) / BM),
                  static_cast<unsigned>(outputs));
  const dim3 block((BM / 8) * (BN / 8));
  if (!g.trans_a && !g.trans_b)
    gemm_register_blocked_kernel<BM, BN, false, false><<<grid, block, 0, stream>>>(g);
  else if (g.trans_a && !g.trans_b)
    gemm_register_blocked_kernel<BM, BN, true, false><<<grid, block, 0, stream>>>(g);
  else if (!g.trans_a && g.trans_b)
    gemm_register_blocked_kernel<BM, BN, false, true><<<grid, block, 0, stream>>>(g);
  else
    gemm_register_blocked_kernel<BM, BN, true, true><<<grid, block, 0, stream>>>(g);
  MINIDL_LAUNCH_CHECK();
}

}  // namespace gemm_detail

// The largest number of outputs C_z one launch handles (gridDim.z).
constexpr int64_t kGemmMaxOutputs = 65535;

// Runs the GEMM on stream(device) (the caller has made `device` current). Returns false, launching
// nothing, when the problem does not fit the kernel's limits: M, N or K beyond 2^31 - 256, M beyond
// 65535 row tiles of 64, or more than kGemmMaxOutputs outputs. The caller then declines.
inline bool gemm_register_blocked(GemmBatch g, int device) {
  if (g.group < 1) g.group = 1;
  const int64_t outputs = (g.batch + g.group - 1) / g.group;
  constexpr int64_t kMaxDim = INT32_MAX - 256;
  if (g.M > kMaxDim || g.N > kMaxDim || g.K > kMaxDim || (g.M + 63) / 64 > 65535 || outputs > kGemmMaxOutputs)
    return false;
  if (g.M == 0 || g.N == 0 || outputs == 0) return true;
  g.vec_a = rows_aligned(g.A, g.lda, g.stride_a);
  g.vec_b = rows_aligned(g.B, g.ldb, g.stride_b);
  g.vec_c = rows_aligned(g.C, g.ldc, g.stride_c);
  if (use_128_tiles(g.M, g.N, outputs, properties(device).multiProcessorCount))
    gemm_detail::launch<128, 128>(g, outputs, stream(device));
  else
    gemm_detail::launch<64, 64>(g, outputs, stream(device));
  return true;
}

}  // namespace cuda
}  // namespace minidl
