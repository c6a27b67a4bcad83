// cpu/gru_naive.cpp — reference kernels of the fused GRU step ("gru_cell", "gru_cell.backward"): plain
// loops over rows n and hidden units j, every formula evaluated in double. Layouts and formulas are in
// ops/kernel_signatures.h: gi, gh, grad_gi, grad_gh [N, 3H] (gates r, z, n), h, h_new, grad_h [N, H],
// gates [N, 4H] = (r, z, n, gh_n).
// Accumulation convention: outputs are overwritten (=).
#include <cmath>

#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

template <class T>
void gru_cell_naive_t(const Tensor& gi, const Tensor& gh, const Tensor& h, Tensor& h_new, Tensor& gates) {
  const int64_t N = h.shape()[0], H = h.shape()[1];
  const T* pi = gi.data<T>();
  const T* ph = gh.data<T>();
  const T* hp = h.data<T>();
  T* out = h_new.data<T>();
  T* saved = gates.data<T>();
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t j = 0; j < H; ++j) {
      auto in = [&](int gate) { return static_cast<double>(pi[n * 3 * H + gate * H + j]); };
      auto hid = [&](int gate) { return static_cast<double>(ph[n * 3 * H + gate * H + j]); };
      const double r = sigmoid(in(0) + hid(0));
      const double z = sigmoid(in(1) + hid(1));
      const double c = std::tanh(in(2) + r * hid(2));  // the candidate state n
      const double prev = static_cast<double>(hp[n * H + j]);
      out[n * H + j] = static_cast<T>((1.0 - z) * c + z * prev);
      saved[n * 4 * H + 0 * H + j] = static_cast<T>(r);
      saved[n * 4 * H + 1 * H + j] = static_cast<T>(z);
      saved[n * 4 * H + 2 * H + j] = static_cast<T>(c);
      saved[n * 4 * H + 3 * H + j] = static_cast<T>(hid(2));
    }
  }
}

template <class T>
void gru_cell_backward_naive_t(const Tensor& grad_h_new, const Tensor& h, const Tensor& gates, Tensor& grad_gi,
                               Tensor& grad_gh, Tensor& grad_h) {
  const int64_t N = h.shape()[0], H = h.shape()[1];
  const T* g = grad_h_new.data<T>();
  const T* hp = h.data<T>();
  const T* saved = gates.data<T>();
  T* gi = grad_gi.data<T>();
  T* gh = grad_gh.data<T>();
  T* gx = grad_h.data<T>();
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t j = 0; j < H; ++j) {
      auto gate = [&](int k) { return static_cast<double>(saved[n * 4 * H + k * H + j]); };
      const double r = gate(0), z = gate(1), c = gate(2), gh_n = gate(3);
      const double dy = static_cast<double>(g[n * H + j]);
      const double prev = static_cast<double>(hp[n * H + j]);
      // h' = (1 - z) c + z h: dh'/dc = 1 - z, dh'/dz = h - c, dh'/dh = z; c = tanh(a): dc/da = 1 - c^2;
      // a = gi_n + r gh_n; r, z = sigmoid(.): derivative s (1 - s).
      const double d_a = dy * (1.0 - z) * (1.0 - c * c);
      const double d_z = dy * (prev - c) * z * (1.0 - z);
      const double d_r = d_a * gh_n * r * (1.0 - r);
      gi[n * 3 * H + 0 * H + j] = static_cast<T>(d_r);
      gi[n * 3 * H + 1 * H + j] = static_cast<T>(d_z);
      gi[n * 3 * H + 2 * H + j] = static_cast<T>(d_a);
      gh[n * 3 * H + 0 * H + j] = static_cast<T>(d_r);
      gh[n * 3 * H + 1 * H + j] = static_cast<T>(d_z);
      gh[n * 3 * H + 2 * H + j] = static_cast<T>(d_a * r);
      gx[n * H + j] = static_cast<T>(dy * z);
    }
  }
}

bool gru_cell_naive(const Tensor& gi, const Tensor& gh, const Tensor& h, Tensor& h_new, Tensor& gates) {
  return MINIDL_FLOAT_TYPES(h.dtype(), { gru_cell_naive_t<T>(gi, gh, h, h_new, gates); });
}

bool gru_cell_backward_naive(const Tensor& grad_h_new, const Tensor& h, const Tensor& gates, Tensor& grad_gi,
                             Tensor& grad_gh, Tensor& grad_h) {
  return MINIDL_FLOAT_TYPES(h.dtype(), {
    gru_cell_backward_naive_t<T>(grad_h_new, h, gates, grad_gi, grad_gh, grad_h);
  });
}

}  // namespace

void register_gru_naive_cpu() {
  register_kernel(keys::gru_cell, DeviceType::cpu, "naive", Priority::reference,
                  "reference: plain loops over rows and units, double arithmetic", gru_cell_naive);
  register_kernel(keys::gru_cell_backward, DeviceType::cpu, "naive", Priority::reference,
                  "reference: plain loops over rows and units, double arithmetic",
                  gru_cell_backward_naive);
}

}  // namespace minidl
