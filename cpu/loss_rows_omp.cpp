// cpu/loss_rows_omp.cpp — fused cross-entropy and its backward for speed ("rows_omp").
//
// What changes against the reference (cpu/loss_naive.cpp): rows are split across OpenMP threads (above
// 32k logits), computed in T with `omp simd` row reductions. The targets are validated in one serial
// pass first, because an exception must not leave an OpenMP region. Same math and layout (see the
// reference). Accumulation convention: outputs are overwritten (=).
#include <cmath>

#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr int64_t kParallelThreshold = 1 << 15;

void check_targets(const char* op, const int64_t* target, int64_t rows, int64_t classes) {
  for (int64_t n = 0; n < rows; ++n)
    MINIDL_CHECK(target[n] >= 0 && target[n] < classes, op, ": target ", target[n], " (row ", n,
                 ") is out of range for ", classes, " classes; expected a value in [0, ", classes, ")");
}

// m = max_c x, returns log(sum_c exp(x - m)) + m.
template <class T>
T row_logsumexp(const T* x, int64_t cols) {
  T m = -INFINITY;
#pragma omp simd reduction(max : m)
  for (int64_t c = 0; c < cols; ++c) m = x[c] > m ? x[c] : m;
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t c = 0; c < cols; ++c) s += std::exp(x[c] - m);
  return m + std::log(s);
}

template <class T>
void cross_entropy_rows(const T* px, const int64_t* pt, T* pl, int64_t rows, int64_t classes) {
#pragma omp parallel for schedule(static) if (rows * classes > kParallelThreshold && rows > 1)
  for (int64_t n = 0; n < rows; ++n) {
    const T* x = px + n * classes;
    pl[n] = row_logsumexp(x, classes) - x[pt[n]];
  }
}

// grad[c] = grad_loss * (exp(x[c] - lse) - [c == t]),  lse = logsumexp of the row.
template <class T>
void cross_entropy_backward_rows(const T* px, const int64_t* pt, const T* pgl, T* pg, int64_t rows, int64_t classes) {
#pragma omp parallel for schedule(static) if (rows * classes > kParallelThreshold && rows > 1)
  for (int64_t n = 0; n < rows; ++n) {
    const T* x = px + n * classes;
    T* g = pg + n * classes;
    const T lse = row_logsumexp(x, classes), scale = pgl[n];
    for (int64_t c = 0; c < classes; ++c) g[c] = scale * std::exp(x[c] - lse);
    g[pt[n]] -= scale;
  }
}

bool cross_entropy_fast(const Tensor& logits, const Tensor& target, Tensor& loss) {
  const int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  const int64_t* pt = target.data<int64_t>();
  check_targets("cross_entropy", pt, rows, classes);
  return MINIDL_FLOAT_TYPES(logits.dtype(),
                            { cross_entropy_rows<T>(logits.data<T>(), pt, loss.data<T>(), rows, classes); });
}

bool cross_entropy_backward_fast(const Tensor& logits, const Tensor& target, const Tensor& grad_loss,
                                 Tensor& grad_logits) {
  const int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  const int64_t* pt = target.data<int64_t>();
  check_targets("cross_entropy.backward", pt, rows, classes);
  return MINIDL_FLOAT_TYPES(logits.dtype(), {
    cross_entropy_backward_rows<T>(logits.data<T>(), pt, grad_loss.data<T>(), grad_logits.data<T>(), rows, classes);
  });
}

}  // namespace

void register_loss_rows_omp_cpu() {
  const char* d = "rows across OpenMP threads above 32k logits, computed in T, simd row reductions";
  register_kernel(keys::cross_entropy, DeviceType::cpu, "rows_omp", Priority::portable, d, cross_entropy_fast);
  register_kernel(keys::cross_entropy_backward, DeviceType::cpu, "rows_omp", Priority::portable, d,
                  cross_entropy_backward_fast);
}

}  // namespace minidl
