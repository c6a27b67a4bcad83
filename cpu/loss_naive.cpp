// cpu/loss_naive.cpp — reference fused cross-entropy and its backward, one row at a time in double.
// logits [N, C], target [N] int64, loss / grad_loss [N], grad_logits [N, C], all contiguous.
//   m = max_c x[n, c],  s = sum_c exp(x[n, c] - m)        (max subtraction: exp never overflows)
//   loss[n] = m + log(s) - x[n, t_n]
//   grad_logits[n, c] = grad_loss[n] * (exp(x[n, c] - m) / s - [c == t_n])
// A target outside [0, C) throws (naming the value, its row and C). Accumulation convention: outputs
// are overwritten (=).
#include <cmath>

#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

int64_t checked_target(const char* op, const int64_t* target, int64_t n, int64_t classes) {
  const int64_t t = target[n];
  MINIDL_CHECK(t >= 0 && t < classes, op, ": target ", t, " (row ", n, ") is out of range for ", classes,
               " classes; expected a value in [0, ", classes, ")");
  return t;
}

template <class T>
void row_max_and_sum(const T* x, int64_t cols, double& m, double& s) {
  m = -INFINITY;
  for (int64_t c = 0; c < cols; ++c) m = std::fmax(m, static_cast<double>(x[c]));
  s = 0;
  for (int64_t c = 0; c < cols; ++c) s += std::exp(static_cast<double>(x[c]) - m);
}

bool cross_entropy_naive(const Tensor& logits, const Tensor& target, Tensor& loss) {
  const int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  const int64_t* pt = target.data<int64_t>();
  return MINIDL_FLOAT_TYPES(logits.dtype(), {
    const T* px = logits.data<T>();
    T* pl = loss.data<T>();
    for (int64_t n = 0; n < rows; ++n) {
      const int64_t t = checked_target("cross_entropy", pt, n, classes);
      const T* x = px + n * classes;
      double m, s;
      row_max_and_sum(x, classes, m, s);
      pl[n] = static_cast<T>(m + std::log(s) - static_cast<double>(x[t]));
    }
  });
}

bool cross_entropy_backward_naive(const Tensor& logits, const Tensor& target, const Tensor& grad_loss,
                                  Tensor& grad_logits) {
  const int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  const int64_t* pt = target.data<int64_t>();
  return MINIDL_FLOAT_TYPES(logits.dtype(), {
    const T* px = logits.data<T>();
    const T* pgl = grad_loss.data<T>();
    T* pg = grad_logits.data<T>();
    for (int64_t n = 0; n < rows; ++n) {
      const int64_t t = checked_target("cross_entropy.backward", pt, n, classes);
      const T* x = px + n * classes;
      double m, s;
      row_max_and_sum(x, classes, m, s);
      for (int64_t c = 0; c < classes; ++c) {
        const double p = std::exp(static_cast<double>(x[c]) - m) / s;
        pg[n * classes + c] = static_cast<T>(static_cast<double>(pgl[n]) * (p - (c == t ? 1.0 : 0.0)));
      }
    }
  });
}

}  // namespace

void register_loss_naive_cpu() {
  const char* d = "reference: one row at a time in double, max-subtracted logsumexp";
  register_kernel(keys::cross_entropy, DeviceType::cpu, "naive", Priority::reference, d, cross_entropy_naive);
  register_kernel(keys::cross_entropy_backward, DeviceType::cpu, "naive", Priority::reference, d,
                  cross_entropy_backward_naive);
}

}  // namespace minidl
