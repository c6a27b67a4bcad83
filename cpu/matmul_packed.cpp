// cpu/matmul_packed.cpp — the blocking loops, the packing and the thread split of cpu/matmul_packed.h
// (which explains the algorithm). Registers no kernel itself: the kernels are in matmul_packed_avx2.cpp,
// matmul_packed_avx512.cpp and matmul_packed_omp.cpp.
#include "cpu/matmul_packed.h"

#include <algorithm>
#include <cstring>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace minidl {
namespace packed {

namespace {

// One product: C [m, n] (row stride n) = op(A) op(B), A and B with row strides lda and ldb.
struct Gemm {
  const float* a;
  const float* b;
  float* c;
  bool trans_a, trans_b;
  int64_t m, n, k, lda, ldb, ldc;
  float a_at(int64_t i, int64_t p) const { return trans_a ? a[p * lda + i] : a[i * lda + p]; }  // op(A)[i, p]
};

// A~: rows [i0, i0 + mc) and terms [p0, p0 + kc) of op(A), in micro-panels of mr rows, each stored term
// by term (dst[panel][p][r]); rows past m are zeros.
void pack_a(const Gemm& g, const MicroKernel& micro, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* dst) {
  const int64_t mr = micro.mr;
  for (int64_t panel = 0; panel < mc; panel += mr, dst += mr * kc) {
    const int64_t rows = std::min(mr, mc - panel);
    if (g.trans_a) {  // op(A)[i, p] = A[p, i]: the mr values of a term are contiguous in A
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = g.a + (p0 + p) * g.lda + i0 + panel;
        float* out = dst + p * mr;
        for (int64_t r = 0; r < rows; ++r) out[r] = src[r];
        for (int64_t r = rows; r < mr; ++r) out[r] = 0.0f;
      }
    } else {  // rows of A are contiguous: read each row once, write it with stride mr
      for (int64_t r = 0; r < rows; ++r) {
        const float* src = g.a + (i0 + panel + r) * g.lda + p0;
        for (int64_t p = 0; p < kc; ++p) dst[p * mr + r] = src[p];
      }
      for (int64_t r = rows; r < mr; ++r)
        for (int64_t p = 0; p < kc; ++p) dst[p * mr + r] = 0.0f;
    }
  }
}

// B~: terms [p0, p0 + kc) and columns [j0, j0 + nc) of op(B), in micro-panels of nr columns, each stored
// term by term (dst[panel][p][j]); columns past n are zeros.
void pack_b(const Gemm& g, const MicroKernel& micro, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* dst) {
  const int64_t nr = micro.nr;
  for (int64_t panel = 0; panel < nc; panel += nr, dst += nr * kc) {
    const int64_t cols = std::min(nr, nc - panel);
    if (!g.trans_b) {  // a row of op(B) is a row of B: nr contiguous values per term
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = g.b + (p0 + p) * g.ldb + j0 + panel;
        float* out = dst + p * nr;
        std::memcpy(out, src, sizeof(float) * cols);
        for (int64_t j = cols; j < nr; ++j) out[j] = 0.0f;
      }
    } else {  // op(B)[p, j] = B[j, p]: read each row of B once, write it with stride nr
      for (int64_t j = 0; j < cols; ++j) {
        const float* src = g.b + (j0 + panel + j) * g.ldb + p0;
        for (int64_t p = 0; p < kc; ++p) dst[p * nr + j] = src[p];
      }
      for (int64_t j = cols; j < nr; ++j)
        for (int64_t p = 0; p < kc; ++p) dst[p * nr + j] = 0.0f;
    }
  }
}

int64_t round_up(int64_t v, int64_t unit) { return (v + unit - 1) / unit * unit; }

// The buffers of one thread for products of up to m x n x k: A~, B~ and an edge tile. Each is a tensor,
// so it is 64-byte aligned and comes from the CPU backend's cache of blocks.
struct Workspace {
  Tensor a, b, edge;
  Workspace(const MicroKernel& micro, int64_t m, int64_t n, int64_t k) {
    const TensorOptions o(DType::float32, Device::cpu());
    const int64_t kc = std::max<int64_t>(1, std::min(micro.kc, k));
    a = empty({std::min(micro.mc, round_up(m, micro.mr)) * kc}, o);
    b = empty({round_up(std::min(micro.nc, n), micro.nr) * kc}, o);
    edge = empty({micro.mr * micro.nr}, o);
  }
};

// Columns [j_begin, j_end) and rows [i_begin, i_end) of C = op(A) op(B), on the calling thread.
void gemm_block(const Gemm& g, const MicroKernel& micro, Workspace& w, int64_t i_begin, int64_t i_end,
                int64_t j_begin, int64_t j_end) {
  if (g.k == 0) {
    for (int64_t i = i_begin; i < i_end; ++i) std::fill(g.c + i * g.ldc + j_begin, g.c + i * g.ldc + j_end, 0.0f);
    return;
  }
  float* a_packed = w.a.data<float>();
  float* b_packed = w.b.data<float>();
  float* edge = w.edge.data<float>();
  for (int64_t jc = j_begin; jc < j_end; jc += micro.nc) {
    const int64_t nc = std::min(micro.nc, j_end - jc);
    for (int64_t pc = 0; pc < g.k; pc += micro.kc) {
      const int64_t kc = std::min(micro.kc, g.k - pc);
      const bool accumulate = pc > 0;  // the first slice of terms overwrites C (=), the others add
      pack_b(g, micro, pc, kc, jc, nc, b_packed);
      for (int64_t ic = i_begin; ic < i_end; ic += micro.mc) {
        const int64_t mc = std::min(micro.mc, i_end - ic);
        pack_a(g, micro, ic, mc, pc, kc, a_packed);
        for (int64_t jr = 0; jr < nc; jr += micro.nr) {
          const int64_t cols = std::min(micro.nr, nc - jr);
          const float* b_panel = b_packed + jr * kc;
          for (int64_t ir = 0; ir < mc; ir += micro.mr) {
            const int64_t rows = std::min(micro.mr, mc - ir);
            const float* a_panel = a_packed + ir * kc;
            float* c = g.c + (ic + ir) * g.ldc + jc + jr;
            if (rows == micro.mr && cols == micro.nr) {
              micro.tile(kc, a_panel, b_panel, c, g.ldc, accumulate);
              continue;
            }
            // An edge tile: the full tile into the buffer, then its valid part into C.
            micro.tile(kc, a_panel, b_panel, edge, micro.nr, false);
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t j = 0; j < cols; ++j)
                c[r * g.ldc + j] = (accumulate ? c[r * g.ldc + j] : 0.0f) + edge[r * micro.nr + j];
          }
        }
      }
    }
  }
}

int thread_index() {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

}  // namespace

bool matmul_packed(const MicroKernel& micro, const Tensor& a, const Tensor& b, Tensor& out, bool trans_a,
                   bool trans_b, int threads) {
  if (out.dtype() != DType::float32) return false;
  const int64_t batch = out.shape()[0], m = out.shape()[1], n = out.shape()[2];
  const int64_t k = trans_a ? a.shape()[1] : a.shape()[2];
  if (m * n == 0) return true;
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* pc = out.data<float>();
  const int64_t a_step = a.shape()[1] * a.shape()[2], b_step = b.shape()[1] * b.shape()[2];
  auto product = [&](int64_t i) {
    return Gemm{pa + i * a_step, pb + i * b_step, pc + i * m * n, trans_a, trans_b,
                m,               n,               k,              a.shape()[2], b.shape()[2], n};
  };
  // Small products are not worth a thread (a 64 x 64 x 64 product is ~4 us of one core).
  if (2.0 * batch * m * n * k < (1 << 20)) threads = 1;
  std::vector<Workspace> workspaces;
  for (int t = 0; t < threads; ++t) workspaces.emplace_back(micro, m, n, k);
  if (threads == 1) {
    for (int64_t i = 0; i < batch; ++i) gemm_block(product(i), micro, workspaces[0], 0, m, 0, n);
    return true;
  }
  if (batch >= threads) {  // whole products per thread
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < batch; ++i) gemm_block(product(i), micro, workspaces[thread_index()], 0, m, 0, n);
    return true;
  }
  // Each product cut into one slice per thread along its longer side, in whole micro-tiles; every
  // thread packs its own panels (A~ for a column slice is packed by each thread: a small cost next to
  // a barrier per block on a busy machine).
  const bool split_columns = n >= m;
  const int64_t unit = split_columns ? micro.nr : micro.mr;
  const int64_t tiles = ((split_columns ? n : m) + unit - 1) / unit;
  const int slices = static_cast<int>(std::min<int64_t>(threads, tiles));
  for (int64_t i = 0; i < batch; ++i) {
    const Gemm g = product(i);
#pragma omp parallel for schedule(static) num_threads(slices)
    for (int t = 0; t < slices; ++t) {
      const int64_t lo = tiles * t / slices * unit, hi = std::min(tiles * (t + 1) / slices * unit,
                                                                  split_columns ? n : m);
      if (split_columns)
        gemm_block(g, micro, workspaces[t], 0, m, lo, hi);
      else
        gemm_block(g, micro, workspaces[t], lo, hi, 0, n);
    }
  }
  return true;
}

}  // namespace packed
}  // namespace minidl
