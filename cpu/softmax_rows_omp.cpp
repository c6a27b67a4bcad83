// cpu/softmax_rows_omp.cpp — softmax / log_softmax and their backward kernels for speed ("rows_omp").
//
// What changes against the reference (cpu/softmax_naive.cpp): rows are split across OpenMP threads
// (above 32k elements), everything is computed in T (not double), and the row reductions (max, sums)
// are marked `omp simd` so the compiler may vectorise them by reassociating. Same math, same layout:
// x, y, grad_y, grad_x are [rows, cols] contiguous. Accumulation convention: outputs are overwritten (=).
#include <cmath>

#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr int64_t kParallelThreshold = 1 << 15;

template <class T>
T row_max(const T* x, int64_t cols) {
  T m = -INFINITY;
#pragma omp simd reduction(max : m)
  for (int64_t c = 0; c < cols; ++c) m = x[c] > m ? x[c] : m;
  return m;
}

// y = exp(x - m) for the row; returns sum_c y.
template <class T>
T exp_shifted(const T* x, T* y, int64_t cols, T m) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t c = 0; c < cols; ++c) {
    y[c] = std::exp(x[c] - m);
    s += y[c];
  }
  return s;
}

template <class T>
void softmax_rows(const T* px, T* py, int64_t rows, int64_t cols) {
#pragma omp parallel for schedule(static) if (rows * cols > kParallelThreshold && rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    const T* x = px + r * cols;
    T* y = py + r * cols;
    const T inv = T(1) / exp_shifted(x, y, cols, row_max(x, cols));
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) y[c] *= inv;
  }
}

template <class T>
void log_softmax_rows(const T* px, T* py, int64_t rows, int64_t cols) {
#pragma omp parallel for schedule(static) if (rows * cols > kParallelThreshold && rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    const T* x = px + r * cols;
    T* y = py + r * cols;
    const T m = row_max(x, cols);
    const T shift = m + std::log(exp_shifted(x, y, cols, m));  // y holds exp(x - m) until overwritten
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) y[c] = x[c] - shift;
  }
}

template <class T>
void softmax_backward_rows(const T* py, const T* pg, T* pgx, int64_t rows, int64_t cols) {
#pragma omp parallel for schedule(static) if (rows * cols > kParallelThreshold && rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    const T* y = py + r * cols;
    const T* g = pg + r * cols;
    T* gx = pgx + r * cols;
    T dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int64_t c = 0; c < cols; ++c) dot += g[c] * y[c];
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) gx[c] = y[c] * (g[c] - dot);
  }
}

template <class T>
void log_softmax_backward_rows(const T* py, const T* pg, T* pgx, int64_t rows, int64_t cols) {
#pragma omp parallel for schedule(static) if (rows * cols > kParallelThreshold && rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    const T* y = py + r * cols;
    const T* g = pg + r * cols;
    T* gx = pgx + r * cols;
    T total = 0;
#pragma omp simd reduction(+ : total)
    for (int64_t c = 0; c < cols; ++c) total += g[c];
    for (int64_t c = 0; c < cols; ++c) gx[c] = g[c] - std::exp(y[c]) * total;
  }
}

bool softmax_fast(const Tensor& x, Tensor& y) {
  return MINIDL_FLOAT_TYPES(x.dtype(), { softmax_rows<T>(x.data<T>(), y.data<T>(), x.shape()[0], x.shape()[1]); });
}

bool log_softmax_fast(const Tensor& x, Tensor& y) {
  return MINIDL_FLOAT_TYPES(x.dtype(), { log_softmax_rows<T>(x.data<T>(), y.data<T>(), x.shape()[0], x.shape()[1]); });
}

bool softmax_backward_fast(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) {
  return MINIDL_FLOAT_TYPES(y.dtype(), {
    softmax_backward_rows<T>(y.data<T>(), grad_y.data<T>(), grad_x.data<T>(), y.shape()[0], y.shape()[1]);
  });
}

bool log_softmax_backward_fast(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) {
  return MINIDL_FLOAT_TYPES(y.dtype(), {
    log_softmax_backward_rows<T>(y.data<T>(), grad_y.data<T>(), grad_x.data<T>(), y.shape()[0], y.shape()[1]);
  });
}

}  // namespace

void register_softmax_rows_omp_cpu() {
  const char* d = "rows across OpenMP threads above 32k elements, computed in T, simd row reductions";
  const char* name = "rows_omp";
  register_kernel(keys::softmax, DeviceType::cpu, name, Priority::portable, d, softmax_fast);
  register_kernel(keys::log_softmax, DeviceType::cpu, name, Priority::portable, d, log_softmax_fast);
  register_kernel(keys::softmax_backward, DeviceType::cpu, name, Priority::portable, d, softmax_backward_fast);
  register_kernel(keys::log_softmax_backward, DeviceType::cpu, name, Priority::portable, d,
                  log_softmax_backward_fast);
}

}  // namespace minidl
