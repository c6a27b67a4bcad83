// cpu/matmul_blas.cpp — batched matrix product on OpenBLAS: one cblas_sgemm / cblas_dgemm per batch
// entry, row-major, the transpose flags passed straight through (BLAS reads a transposed operand in
// place, so nothing is copied). OpenBLAS uses its own thread pool inside each call.
//   out[i] = op(a[i]) op(b[i]),  a [B, ra, ca], b [B, rb, cb], out [B, M, N] contiguous.
// Accumulation convention: out is overwritten (=): beta = 0.
// Built only when CMake found OpenBLAS (MINIDL_WITH_OPENBLAS); otherwise it registers nothing.
#include "cpu/register.h"
#include "ops/kernel_signatures.h"

#ifdef MINIDL_WITH_OPENBLAS
#include <cblas.h>

#include <algorithm>
#include <cstring>

namespace minidl {

namespace {

void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const float* a, int lda, const float* b,
               int ldb, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
}
void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const double* a, int lda, const double* b,
               int ldb, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
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
  for (int64_t i = 0; i < batch; ++i)
    blas_gemm(trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), pa + i * a_step, static_cast<int>(a.shape()[2]),
              pb + i * b_step, static_cast<int>(b.shape()[2]), po + i * m * n, static_cast<int>(n));
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
  register_kernel<MatmulKernel>("matmul", DeviceType::cpu, "openblas", 20,
                                "OpenBLAS sgemm/dgemm per batch entry (its own threads)", matmul_openblas);
}

}  // namespace minidl

#else

namespace minidl {
void register_matmul_blas_cpu() {}  // built without OpenBLAS
}  // namespace minidl

#endif
