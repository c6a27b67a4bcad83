// cpu/blas.h — what the OpenBLAS kernels (cpu/matmul_blas.cpp, cpu/conv_im2col.cpp) share: typed GEMM
// calls and the threading rule. Include it only under #ifdef MINIDL_WITH_OPENBLAS.
//
// Threading rule: minidl's CPU kernels use one thread pool, OpenMP's. A kernel that calls OpenBLAS splits
// its work across OpenMP threads itself and keeps OpenBLAS single-threaded meanwhile (SingleThreadedBlas),
// because OpenBLAS' own pool and OpenMP's would otherwise spin against each other on the same cores
// (and OpenBLAS splits small GEMMs such as the MNIST fc layers worse than a plain column split does).
// A call with nothing to split across threads (a convolution of a single image) leaves OpenBLAS its own.
#pragma once
#include <cblas.h>

#include <cstdint>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace minidl {
namespace blas {

// Row-major C [m, n] = op(A) op(B) + beta * C, op = transpose when asked; ld* are row strides.
inline void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}
inline void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
                 const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

// The OpenMP threads a kernel may use.
inline int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// OpenBLAS runs single-threaded while this object lives; the previous setting comes back after.
class SingleThreadedBlas {
 public:
  SingleThreadedBlas() : saved_(openblas_get_num_threads()) {
    if (saved_ != 1) openblas_set_num_threads(1);
  }
  ~SingleThreadedBlas() {
    if (saved_ != 1) openblas_set_num_threads(saved_);
  }
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  int saved_;
};

}  // namespace blas
}  // namespace minidl
