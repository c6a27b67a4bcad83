// cuda/gemm_batch.h — the description of a batched float32 GEMM that our own GEMM kernels take (the
// register-blocked kernel of cuda/gemm_tiled.cuh behind v3_register_blocked and im2col_gemm, and the FP32
// ladder of cuda/sgemm_common.cuh), with two host-side helpers they share. Row-major matrices:
//
//     C_z = sum over r in [z*group, min((z+1)*group, batch)) of op(A_r) op(B_r),      z = 0, 1, ...
//     op(A_r) [M, K] = trans_a ? A_r^T : A_r,    op(B_r) [K, N] = trans_b ? B_r^T : B_r,    C_z [M, N]
//
// (group > 1 only in gemm_tiled.cuh; the ladder kernels take group = 1.)
#pragma once
#include <cstdint>

namespace minidl {
namespace cuda {

struct GemmBatch {
  int64_t M = 0, N = 0, K = 0;
  const float* A = nullptr;  // stored [M, K] (or [K, M] when trans_a), row length lda
  int64_t lda = 0, stride_a = 0;
  const float* B = nullptr;  // stored [K, N] (or [N, K] when trans_b), row length ldb
  int64_t ldb = 0, stride_b = 0;
  float* C = nullptr;  // [M, N], row length ldc; C_z starts at C + z * stride_c
  int64_t ldc = 0, stride_c = 0;
  int64_t batch = 1;  // number of (A_r, B_r) pairs; A_r = A + r * stride_a (stride 0 reuses one matrix)
  int64_t group = 1;  // pairs summed into each C_z
  bool trans_a = false, trans_b = false;
  // Set by the launcher: whether rows of A / B / C are 16-byte aligned, allowing float4 accesses.
  bool vec_a = false, vec_b = false, vec_c = false;
};

// Whether every row of a batch of matrices (base, row length ld, batch stride) starts 16-byte aligned.
inline bool rows_aligned(const void* base, int64_t ld, int64_t stride) {
  return reinterpret_cast<uintptr_t>(base) % 16 == 0 && ld % 4 == 0 && stride % 4 == 0;
}

// Whether 128 x 128 output tiles beat 64 x 64 ones for `outputs` products of M x N. Big tiles reuse
// each loaded element more, but only pay when there are enough of them to give every multiprocessor a
// block, and when they do not waste much more of their area on the ragged edges than 64 x 64 tiles
// (M = 64 would leave half of every 128-row tile idle); otherwise 64 x 64 tiles spread the work wider.
// The rule of v3 and of the ladder's v4-v6.
inline bool use_128_tiles(int64_t M, int64_t N, int64_t outputs, int sm_count) {
  const int64_t big_tiles = ((M + 127) / 128) * ((N + 127) / 128) * outputs;
  const int64_t area_128 = ((M + 127) / 128 * 128) * ((N + 127) / 128 * 128);
  const int64_t area_64 = ((M + 63) / 64 * 64) * ((N + 63) / 64 * 64);
  return big_tiles >= sm_count && area_128 * 8 <= area_64 * 9;
}

}  // namespace cuda
}  // namespace minidl
