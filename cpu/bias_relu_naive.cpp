// cpu/bias_relu_naive.cpp — the reference of the fused bias + ReLU (ops/bias_relu.cpp), as plain loops
// over [outer, C, inner] (layouts in ops/kernel_signatures.h):
//   out[o, c, i]    = relu(y[o, c, i] + bias[c])                relu(z) = z > 0 ? z : 0
//   grad_y[o, c, i] = out[o, c, i] > 0 ? g[o, c, i] : 0
//   grad_bias[c]    = sum_{o, i} grad_y[o, c, i]                (accumulated in double)
// Accumulation convention: every output is overwritten (=).
#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

bool bias_relu_naive(const Tensor& y, const Tensor& bias, Tensor& out) {
  const int64_t outer = y.shape()[0], channels = y.shape()[1], inner = y.shape()[2];
  return MINIDL_FLOAT_TYPES(y.dtype(), {
    const T* py = y.data<T>();
    const T* pb = bias.data<T>();
    T* po = out.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t k = (o * channels + c) * inner + i;
          const T z = py[k] + pb[c];
          po[k] = z > T(0) ? z : T(0);
        }
  });
}

bool bias_relu_backward_naive(const Tensor& g, const Tensor& out, Tensor& grad_y, Tensor& grad_bias) {
  const int64_t outer = g.shape()[0], channels = g.shape()[1], inner = g.shape()[2];
  return MINIDL_FLOAT_TYPES(g.dtype(), {
    const T* pg = g.data<T>();
    const T* po = out.data<T>();
    T* pgy = grad_y.data<T>();
    T* pgb = grad_bias.data<T>();
    for (int64_t c = 0; c < channels; ++c) {
      double acc = 0;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t k = (o * channels + c) * inner + i;
          pgy[k] = po[k] > T(0) ? pg[k] : T(0);
          acc += pgy[k];
        }
      pgb[c] = static_cast<T>(acc);
    }
  });
}

}  // namespace

void register_bias_relu_naive_cpu() {
  register_kernel(keys::bias_relu, DeviceType::cpu, "naive", Priority::reference,
                  "reference: relu(y + bias[c]) element by element", bias_relu_naive);
  register_kernel(keys::bias_relu_backward, DeviceType::cpu, "naive", Priority::reference,
                  "reference: masked gradient, bias gradient summed in double per channel",
                  bias_relu_backward_naive);
}

}  // namespace minidl
