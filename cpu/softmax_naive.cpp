// cpu/softmax_naive.cpp — reference softmax / log_softmax over the rows of a [rows, cols] matrix, and
// their backward kernels. Each row is computed in double, whatever T is, so the reference is as exact
// as it cheaply can be. Accumulation convention: outputs are overwritten (=).
//
//   softmax:      y = exp(x - m) / s,           m = max_c x,  s = sum_c exp(x - m)
//   log_softmax:  y = x - m - log(s)
//   softmax.backward:      grad_x = y * (g - sum_c(g * y))
//   log_softmax.backward:  grad_x = g - exp(y) * sum_c(g)
#include <cmath>

#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// m and s of one row (s = 0 for an empty row, never used then).
template <class T>
void row_max_and_sum(const T* x, int64_t cols, double& m, double& s) {
  m = -INFINITY;
  for (int64_t c = 0; c < cols; ++c) m = std::fmax(m, static_cast<double>(x[c]));
  s = 0;
  for (int64_t c = 0; c < cols; ++c) s += std::exp(static_cast<double>(x[c]) - m);
}

bool softmax_naive(const Tensor& x, Tensor& y) {
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  return MINIDL_FLOAT_TYPES(x.dtype(), {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      double m, s;
      row_max_and_sum(px + r * cols, cols, m, s);
      for (int64_t c = 0; c < cols; ++c)
        py[r * cols + c] = static_cast<T>(std::exp(static_cast<double>(px[r * cols + c]) - m) / s);
    }
  });
}

bool log_softmax_naive(const Tensor& x, Tensor& y) {
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  return MINIDL_FLOAT_TYPES(x.dtype(), {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      double m, s;
      row_max_and_sum(px + r * cols, cols, m, s);
      const double log_s = std::log(s);
      for (int64_t c = 0; c < cols; ++c)
        py[r * cols + c] = static_cast<T>(static_cast<double>(px[r * cols + c]) - m - log_s);
    }
  });
}

bool softmax_backward_naive(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) {
  const int64_t rows = y.shape()[0], cols = y.shape()[1];
  return MINIDL_FLOAT_TYPES(y.dtype(), {
    const T* py = y.data<T>();
    const T* pg = grad_y.data<T>();
    T* pgx = grad_x.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      double dot = 0;  // sum_c g * y
      for (int64_t c = 0; c < cols; ++c) dot += static_cast<double>(pg[r * cols + c]) * py[r * cols + c];
      for (int64_t c = 0; c < cols; ++c)
        pgx[r * cols + c] = static_cast<T>(static_cast<double>(py[r * cols + c]) * (pg[r * cols + c] - dot));
    }
  });
}

bool log_softmax_backward_naive(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) {
  const int64_t rows = y.shape()[0], cols = y.shape()[1];
  return MINIDL_FLOAT_TYPES(y.dtype(), {
    const T* py = y.data<T>();
    const T* pg = grad_y.data<T>();
    T* pgx = grad_x.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      double total = 0;  // sum_c g
      for (int64_t c = 0; c < cols; ++c) total += pg[r * cols + c];
      for (int64_t c = 0; c < cols; ++c)
        pgx[r * cols + c] = static_cast<T>(pg[r * cols + c] - std::exp(static_cast<double>(py[r * cols + c])) * total);
    }
  });
}

}  // namespace

void register_softmax_naive_cpu() {
  const char* d = "reference: one row at a time, computed in double";
  register_kernel(keys::softmax, DeviceType::cpu, "naive", Priority::reference, d, softmax_naive);
  register_kernel(keys::log_softmax, DeviceType::cpu, "naive", Priority::reference, d, log_softmax_naive);
  register_kernel(keys::softmax_backward, DeviceType::cpu, "naive", Priority::reference, d, softmax_backward_naive);
  register_kernel(keys::log_softmax_backward, DeviceType::cpu, "naive", Priority::reference, d,
                  log_softmax_backward_naive);
}

}  // namespace minidl
