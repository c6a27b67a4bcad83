// cpu/lstm_naive.cpp — reference kernels of the fused LSTM step ("lstm_cell", "lstm_cell.backward"):
// plain loops over rows n and hidden units j, every formula evaluated in double. Layouts and formulas
// are in ops/kernel_signatures.h: gi, gh, grad_gates [N, 4H] (gates i, f, g, o), c, h_new, c_new,
// grad_h_new, grad_c_new, grad_c [N, H], gates [N, 5H] = (i, f, g, o, tanh c_new).
// Accumulation convention: outputs are overwritten (=).
#include <cmath>

#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

template <class T>
void lstm_cell_naive_t(const Tensor& gi, const Tensor& gh, const Tensor& c, Tensor& h_new, Tensor& c_new,
                       Tensor& gates) {
  const int64_t N = c.shape()[0], H = c.shape()[1];
  const T* pi = gi.data<T>();
  const T* ph = gh.data<T>();
  const T* cp = c.data<T>();
  T* h_out = h_new.data<T>();
  T* c_out = c_new.data<T>();
  T* saved = gates.data<T>();
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t j = 0; j < H; ++j) {
      // The pre-activation of gate k (0 .. 3: i, f, g, o).
      auto pre = [&](int k) {
        return static_cast<double>(pi[n * 4 * H + k * H + j]) + static_cast<double>(ph[n * 4 * H + k * H + j]);
      };
      const double i = sigmoid(pre(0)), f = sigmoid(pre(1)), g = std::tanh(pre(2)), o = sigmoid(pre(3));
      const double cell = f * static_cast<double>(cp[n * H + j]) + i * g;
      const double tanh_cell = std::tanh(cell);
      h_out[n * H + j] = static_cast<T>(o * tanh_cell);
      c_out[n * H + j] = static_cast<T>(cell);
      const double values[5] = {i, f, g, o, tanh_cell};
      for (int k = 0; k < 5; ++k) saved[n * 5 * H + k * H + j] = static_cast<T>(values[k]);
    }
  }
}

template <class T>
void lstm_cell_backward_naive_t(const Tensor& grad_h_new, const Tensor& grad_c_new, const Tensor& c,
                                const Tensor& gates, Tensor& grad_gates, Tensor& grad_c) {
  const int64_t N = c.shape()[0], H = c.shape()[1];
  const T* gh_new = grad_h_new.data<T>();
  const T* gc_new = grad_c_new.data<T>();
  const T* cp = c.data<T>();
  const T* saved = gates.data<T>();
  T* dg = grad_gates.data<T>();
  T* dc_prev = grad_c.data<T>();
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t j = 0; j < H; ++j) {
      auto gate = [&](int k) { return static_cast<double>(saved[n * 5 * H + k * H + j]); };
      const double i = gate(0), f = gate(1), g = gate(2), o = gate(3), tanh_cell = gate(4);
      const double dh = static_cast<double>(gh_new[n * H + j]);
      // h' = o tanh(c'): dh'/dc' = o (1 - tanh(c')^2), dh'/do = tanh(c'); c' = f c + i g: dc'/df = c,
      // dc'/di = g, dc'/dg = i, dc'/dc = f; i, f, o = sigmoid(.): s (1 - s); g = tanh(.): 1 - g^2.
      const double dc = static_cast<double>(gc_new[n * H + j]) + dh * o * (1.0 - tanh_cell * tanh_cell);
      const double d[4] = {dc * g * i * (1.0 - i), dc * static_cast<double>(cp[n * H + j]) * f * (1.0 - f),
                           dc * i * (1.0 - g * g), dh * tanh_cell * o * (1.0 - o)};
      for (int k = 0; k < 4; ++k) dg[n * 4 * H + k * H + j] = static_cast<T>(d[k]);
      dc_prev[n * H + j] = static_cast<T>(dc * f);
    }
  }
}

bool lstm_cell_naive(const Tensor& gi, const Tensor& gh, const Tensor& c, Tensor& h_new, Tensor& c_new,
                     Tensor& gates) {
  return MINIDL_FLOAT_TYPES(c.dtype(), { lstm_cell_naive_t<T>(gi, gh, c, h_new, c_new, gates); });
}

bool lstm_cell_backward_naive(const Tensor& grad_h_new, const Tensor& grad_c_new, const Tensor& c,
                              const Tensor& gates, Tensor& grad_gates, Tensor& grad_c) {
  return MINIDL_FLOAT_TYPES(c.dtype(), {
    lstm_cell_backward_naive_t<T>(grad_h_new, grad_c_new, c, gates, grad_gates, grad_c);
  });
}

}  // namespace

void register_lstm_naive_cpu() {
  register_kernel(keys::lstm_cell, DeviceType::cpu, "naive", Priority::reference,
                  "reference: plain loops over rows and units, double arithmetic", lstm_cell_naive);
  register_kernel(keys::lstm_cell_backward, DeviceType::cpu, "naive", Priority::reference,
                  "reference: plain loops over rows and units, double arithmetic",
                  lstm_cell_backward_naive);
}

}  // namespace minidl
