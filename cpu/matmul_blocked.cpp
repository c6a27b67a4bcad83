// cpu/matmul_blocked.cpp — a cache-blocked batched matrix product in plain C++ with OpenMP: the teaching
// middle rung between the triple loop ("naive") and OpenBLAS. What it changes, and why each step helps:
//   1. Packing: a transposed operand is first copied into row-major op(A) [M, K] / op(B) [K, N], so the
//      inner loop always walks memory with stride 1 (an untransposed operand is used in place).
//   2. Loop order i-k-j: the inner loop is  c[i, j..] += a[i, k] * b[k, j..],  a vector multiply-add
//      over contiguous rows that the compiler vectorises (the naive i-j-k order walks b by columns).
//   3. Register blocking: four rows of C are updated together, so every b[k, j] loaded feeds 4 FMAs.
//   4. Cache blocking: a kKc x kNc tile of op(B) (128 x 512 floats = 256 KiB) stays in L2 while the
//      kMc rows of a block of C are updated with it, instead of streaming all of B for each row.
//   5. Threads: the blocks of rows of C are split across OpenMP threads.
// Still far from OpenBLAS (no packed micro-panels, no hand-tuned register kernel), which is the point.
//   out[i] = op(a[i]) op(b[i]),  a [B, ra, ca], b [B, rb, cb], out [B, M, N] contiguous.
// Accumulation convention: out is overwritten (=): each matrix is zeroed, then every tile adds into it.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr int64_t kKc = 128;  // rows of the B tile (the k extent of one pass)
constexpr int64_t kNc = 512;  // columns of the B tile
constexpr int64_t kRows = 4;  // rows of C updated together
constexpr int64_t kMc = 32;   // rows of C per block (one thread's unit of work); each B tile serves all of them

// src [rows, cols] row-major -> dst [cols, rows] row-major.
template <class T>
void transpose_into(const T* src, int64_t rows, int64_t cols, T* dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
}

// c[r, 0:nc] += sum_{k < kc} a[r, k] * b[k, 0:nc] for r < kRows (lda, ldb, ldc are row strides).
template <class T>
void update_rows4(const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, int64_t kc, int64_t nc) {
  T* c0 = c;
  T* c1 = c + ldc;
  T* c2 = c + 2 * ldc;
  T* c3 = c + 3 * ldc;
  for (int64_t k = 0; k < kc; ++k) {
    const T a0 = a[k], a1 = a[lda + k], a2 = a[2 * lda + k], a3 = a[3 * lda + k];
    const T* bk = b + k * ldb;
    for (int64_t j = 0; j < nc; ++j) {
      const T bv = bk[j];
      c0[j] += a0 * bv;
      c1[j] += a1 * bv;
      c2[j] += a2 * bv;
      c3[j] += a3 * bv;
    }
  }
}

// The same for one row (the leftover rows when M is not a multiple of kRows).
template <class T>
void update_row(const T* a, const T* b, int64_t ldb, T* c, int64_t kc, int64_t nc) {
  for (int64_t k = 0; k < kc; ++k) {
    const T ak = a[k];
    const T* bk = b + k * ldb;
    for (int64_t j = 0; j < nc; ++j) c[j] += ak * bk[j];
  }
}

// C [M, N] = A [M, K] B [K, N], all row-major and packed.
template <class T>
void blocked_product(const T* a, const T* b, T* c, int64_t m, int64_t n, int64_t k) {
  std::memset(c, 0, sizeof(T) * m * n);
  const int64_t blocks = (m + kMc - 1) / kMc;
  // One parallel loop over blocks of rows: each thread walks all tiles for its own rows, so threads never
  // wait for each other until the end (a barrier per tile costs a scheduler time slice on a busy machine).
#pragma omp parallel for schedule(static) if (m * n * k > (1 << 18))
  for (int64_t block = 0; block < blocks; ++block) {
    const int64_t row_end = std::min(m, (block + 1) * kMc);
    for (int64_t k0 = 0; k0 < k; k0 += kKc) {
      const int64_t kc = std::min(kKc, k - k0);
      for (int64_t j0 = 0; j0 < n; j0 += kNc) {
        const int64_t nc = std::min(kNc, n - j0);
        const T* b_tile = b + k0 * n + j0;
        int64_t i = block * kMc;
        for (; i + kRows <= row_end; i += kRows) update_rows4(a + i * k + k0, k, b_tile, n, c + i * n + j0, n, kc, nc);
        for (; i < row_end; ++i) update_row(a + i * k + k0, b_tile, n, c + i * n + j0, kc, nc);
      }
    }
  }
}

template <class T>
void matmul_blocked_typed(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  const int64_t batch = out.shape()[0], m = out.shape()[1], n = out.shape()[2];
  const int64_t k = trans_a ? a.shape()[1] : a.shape()[2];
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  std::vector<T> a_packed(trans_a ? m * k : 0), b_packed(trans_b ? k * n : 0);
  for (int64_t i = 0; i < batch; ++i) {
    const T* ai = pa + i * m * k;
    const T* bi = pb + i * k * n;
    if (trans_a) {
      transpose_into(ai, k, m, a_packed.data());
      ai = a_packed.data();
    }
    if (trans_b) {
      transpose_into(bi, n, k, b_packed.data());
      bi = b_packed.data();
    }
    blocked_product(ai, bi, po + i * m * n, m, n, k);
  }
}

bool matmul_blocked(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  return MINIDL_FLOAT_TYPES(out.dtype(), { matmul_blocked_typed<T>(a, b, out, trans_a, trans_b); });
}

}  // namespace

void register_matmul_blocked_cpu() {
  register_kernel(keys::matmul, DeviceType::cpu, "blocked", Priority::portable,
                  "plain C++: packed operands, i-k-j order, 4-row x 128x512 tiles, OpenMP rows",
                  matmul_blocked);
}

}  // namespace minidl
