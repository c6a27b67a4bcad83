// cpu/matmul_blas.cpp — batched matrix product on OpenBLAS sgemm/dgemm, threaded with OpenMP while
// OpenBLAS itself runs single-threaded (the threading rule of cpu/blas.h):
//   - a batch with enough entries gives whole products to each thread;
//   - otherwise each product is cut into one slice per thread along the longer of M and N (rows of
//     op(A) and C, or columns of op(B) and C), each slice one GEMM;
//   - products below kParallelFlops run as one call on the calling thread.
// Transpose flags go straight to BLAS, which reads a transposed operand in place: nothing is copied.
//   out[i] = op(a[i]) op(b[i]),  a [B, ra, ca], b [B, rb, cb], out [B, M, N] contiguous.
// Accumulation convention: out is overwritten (=): beta = 0.
// Built only when CMake found OpenBLAS (MINIDL_WITH_OPENBLAS); otherwise it registers nothing.
#include "core/dispatch.h"
#include "ops/kernel_signatures.h"

#ifdef MINIDL_WITH_OPENBLAS
#include <algorithm>
#include <cstring>

#include "cpu/blas.h"

namespace minidl {

namespace {

constexpr double kParallelFlops = 1 << 20;  // below this (about 10 us of one core), threads cost more

// One batch entry: C [m, n] = op(A) op(B), A and B with row strides lda and ldb.
template <class T>
struct Product {
  const T* a;
  const T* b;
  T* c;
  bool trans_a, trans_b;
  int64_t m, n, k, lda, ldb;
};

// C[m0:m1, n0:n1] = op(A)[m0:m1, :] op(B)[:, n0:n1]. A row of op(A) is a column of A when A is stored
// transposed, and a column of op(B) a row of B.
template <class T>
void product_slice(const Product<T>& p, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  const T* a = p.a + (p.trans_a ? m0 : m0 * p.lda);
  const T* b = p.b + (p.trans_b ? n0 * p.ldb : n0);
  blas::gemm(p.trans_a, p.trans_b, m1 - m0, n1 - n0, p.k, a, p.lda, b, p.ldb, T(0), p.c + m0 * p.n + n0, p.n);
}

template <class T>
void matmul_batches(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  const int64_t batch = out.shape()[0], m = out.shape()[1], n = out.shape()[2];
  const int64_t k = trans_a ? a.shape()[1] : a.shape()[2];
  T* po = out.data<T>();
  if (m * n == 0) return;
  if (k == 0) {  // an empty sum; BLAS would reject the zero leading dimensions
    std::memset(po, 0, sizeof(T) * batch * m * n);
    return;
  }
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  const int64_t a_step = a.shape()[1] * a.shape()[2], b_step = b.shape()[1] * b.shape()[2];
  auto product = [&](int64_t i) {
    return Product<T>{pa + i * a_step, pb + i * b_step, po + i * m * n, trans_a, trans_b, m, n, k,
                      a.shape()[2],    b.shape()[2]};
  };
  const int threads = blas::max_threads();
  blas::SingleThreadedBlas single_threaded;
  if (threads == 1 || 2.0 * m * n * k * batch < kParallelFlops) {
    for (int64_t i = 0; i < batch; ++i) product_slice(product(i), 0, m, 0, n);
    return;
  }
  if (batch % threads == 0 || batch >= 4 * threads) {  // whole products per thread, evenly enough
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < batch; ++i) product_slice(product(i), 0, m, 0, n);
    return;
  }
  const bool split_columns = n >= m;
  const int64_t extent = split_columns ? n : m;
  const int slices = static_cast<int>(std::min<int64_t>(threads, extent));
  for (int64_t i = 0; i < batch; ++i) {
    const Product<T> p = product(i);
#pragma omp parallel for schedule(static) num_threads(slices)
    for (int t = 0; t < slices; ++t) {
      const int64_t lo = extent * t / slices, hi = extent * (t + 1) / slices;
      if (split_columns)
        product_slice(p, 0, m, lo, hi);
      else
        product_slice(p, lo, hi, 0, n);
    }
  }
}

bool matmul_openblas(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  // BLAS takes int sizes; decline what would overflow them.
  constexpr int64_t kMaxInt = 2147483647;
  for (const Tensor* t : {&a, &b, static_cast<const Tensor*>(&out)})
    if (t->shape()[1] > kMaxInt || t->shape()[2] > kMaxInt) return false;
  switch (out.dtype()) {
    case DType::float32:
      matmul_batches<float>(a, b, out, trans_a, trans_b);
      return true;
    case DType::float64:
      matmul_batches<double>(a, b, out, trans_a, trans_b);
      return true;
    default:
      return false;
  }
}

}  // namespace

void register_matmul_blas_cpu() {
  register_kernel(keys::matmul, DeviceType::cpu, "openblas", Priority::tuned,
                  "OpenBLAS sgemm/dgemm, batch entries or row/column slices across OpenMP threads",
                  matmul_openblas);
}

}  // namespace minidl

#else

namespace minidl {
void register_matmul_blas_cpu() {}  // built without OpenBLAS
}  // namespace minidl

#endif
