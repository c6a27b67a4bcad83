// cpu/gru_sequence_naive.cpp — reference kernels of the sequence-level GRU ("gru_sequence",
// "gru_sequence.backward"): plain loops over layers, directions, steps, rows and units, every sum and
// every formula in double. Equations, parameter order and layouts are in ops/kernel_signatures.h.
// Accumulation convention: outputs (y, grad_x, grad_params) are overwritten (=); the weight gradients
// are summed over steps (+=) in double buffers, then written once.
//
// The reserve (kernel "naive", x's dtype, one flat vector), what the backward needs:
//   gates   per layer k and direction d, [T, N, 4H] = (r, z, n, gh_n) at step t, as gru_cell saves them;
//           block (k * dirs + d) of T*N*4H values, first
//   outputs layer k's output [T, N, H * dirs] for k = 0 .. L-2 (the input of layer k+1; the last layer's
//           output is y, which the backward gets), after the gates
// The hidden state h_prev of a step is read back from the layer's output at the previous step.
#include <cmath>
#include <vector>

#include "cpu/register.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr const char* kName = "naive";

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Sizes shared by the forward and backward loops.
struct Dims {
  int64_t T, N, I, H, dirs, L;
  int64_t in_features(int64_t k) const { return k == 0 ? I : H * dirs; }
  int64_t out_features() const { return H * dirs; }
  int64_t gates_block() const { return T * N * 4 * H; }
  int64_t output_block() const { return T * N * H * dirs; }
  int64_t reserve_numel() const { return L * dirs * gates_block() + (L - 1) * output_block(); }
};

Dims dims_of(const Tensor& x, const std::vector<Tensor>& params, int num_layers, bool bidirectional) {
  return {x.shape()[0], x.shape()[1], x.shape()[2], params[1].shape()[1], bidirectional ? 2 : 1, num_layers};
}

// The time step visited k-th by a direction, and the one visited before it.
int64_t step_time(const Dims& s, bool reverse, int64_t k) { return reverse ? s.T - 1 - k : k; }
int64_t prev_time(bool reverse, int64_t t) { return reverse ? t + 1 : t - 1; }

// One direction of one layer: reads `in` [T, N, in_f], writes columns [d*H, d*H + H) of `out`
// [T, N, H * dirs] and the gates [T, N, 4H].
template <class T>
void forward_direction(const Dims& s, const T* in, int64_t in_f, const T* w_ih, const T* w_hh, const T* b_ih,
                       const T* b_hh, bool reverse, int64_t d, T* out, T* gates) {
  const int64_t H = s.H, out_f = s.out_features();
  for (int64_t k = 0; k < s.T; ++k) {
    const int64_t t = step_time(s, reverse, k);
    const T* h_prev = k > 0 ? out + prev_time(reverse, t) * s.N * out_f + d * H : nullptr;  // null: h = 0
    for (int64_t n = 0; n < s.N; ++n) {
      const T* x_row = in + (t * s.N + n) * in_f;
      for (int64_t j = 0; j < H; ++j) {
        double gi[3], gh[3];
        for (int g = 0; g < 3; ++g) {
          const int64_t row = g * H + j;
          double a = static_cast<double>(b_ih[row]), b = static_cast<double>(b_hh[row]);
          for (int64_t i = 0; i < in_f; ++i) a += static_cast<double>(w_ih[row * in_f + i]) * x_row[i];
          if (h_prev)
            for (int64_t i = 0; i < H; ++i) b += static_cast<double>(w_hh[row * H + i]) * h_prev[n * out_f + i];
          gi[g] = a;
          gh[g] = b;
        }
        const double r = sigmoid(gi[0] + gh[0]);
        const double z = sigmoid(gi[1] + gh[1]);
        const double c = std::tanh(gi[2] + r * gh[2]);  // the candidate state n
        const double prev = h_prev ? static_cast<double>(h_prev[n * out_f + j]) : 0.0;
        out[(t * s.N + n) * out_f + d * H + j] = static_cast<T>((1.0 - z) * c + z * prev);
        T* saved = gates + (t * s.N + n) * 4 * H;
        saved[j] = static_cast<T>(r);
        saved[H + j] = static_cast<T>(z);
        saved[2 * H + j] = static_cast<T>(c);
        saved[3 * H + j] = static_cast<T>(gh[2]);
      }
    }
  }
}

template <class T>
void gru_sequence_naive_t(const Tensor& x, const std::vector<Tensor>& params, const Dims& s, Tensor& y,
                          Tensor& buffer) {
  T* res = buffer.data<T>();
  for (int64_t k = 0; k < s.L; ++k) {
    const T* in = k == 0 ? x.data<T>() : res + s.L * s.dirs * s.gates_block() + (k - 1) * s.output_block();
    T* out = k == s.L - 1 ? y.data<T>() : res + s.L * s.dirs * s.gates_block() + k * s.output_block();
    for (int64_t d = 0; d < s.dirs; ++d) {
      const size_t p = static_cast<size_t>(4 * (k * s.dirs + d));
      forward_direction<T>(s, in, s.in_features(k), params[p].data<T>(), params[p + 1].data<T>(),
                           params[p + 2].data<T>(), params[p + 3].data<T>(), d == 1, d, out,
                           res + (k * s.dirs + d) * s.gates_block());
    }
  }
}

bool gru_sequence_naive(const Tensor& x, const std::vector<Tensor>& params, int num_layers, bool bidirectional,
                        bool keep_reserve, Tensor& y, GruSequenceReserve& reserve) {
  const Dims s = dims_of(x, params, num_layers, bidirectional);
  // The reserve holds the intermediate layers' outputs, which the forward needs anyway.
  Tensor buffer = empty({s.reserve_numel()}, x.options());
  const bool ok = MINIDL_FLOAT_TYPES(x.dtype(), { gru_sequence_naive_t<T>(x, params, s, y, buffer); });
  if (ok && keep_reserve) reserve = {kName, buffer};
  return ok;
}

// Backpropagation through time over one direction of one layer. d_out [T, N, H * dirs] is dL/d(layer
// output) from above; adds dL/d(layer input) into d_in [T, N, in_f] and the weight gradients into g_*.
template <class T>
void backward_direction(const Dims& s, const T* in, int64_t in_f, const T* w_ih, const T* w_hh, const T* out,
                        const T* gates, bool reverse, int64_t d, const std::vector<double>& d_out,
                        std::vector<double>& d_in, std::vector<double>& g_w_ih, std::vector<double>& g_w_hh,
                        std::vector<double>& g_b_ih, std::vector<double>& g_b_hh) {
  const int64_t H = s.H, out_f = s.out_features();
  std::vector<double> dh(s.N * H, 0.0);  // dL/dh_t from the step visited after t
  std::vector<double> dh_prev(s.N * H);
  std::vector<double> dgi(3 * H), dgh(3 * H);
  for (int64_t k = s.T - 1; k >= 0; --k) {
    const int64_t t = step_time(s, reverse, k);
    const T* h_prev = k > 0 ? out + prev_time(reverse, t) * s.N * out_f + d * H : nullptr;
    for (int64_t n = 0; n < s.N; ++n) {
      const T* saved = gates + (t * s.N + n) * 4 * H;
      for (int64_t j = 0; j < H; ++j) {
        const double r = saved[j], z = saved[H + j], c = saved[2 * H + j], gh_n = saved[3 * H + j];
        const double g = d_out[(t * s.N + n) * out_f + d * H + j] + dh[n * H + j];
        const double prev = h_prev ? static_cast<double>(h_prev[n * out_f + j]) : 0.0;
        // h = (1 - z) c + z prev;  c = tanh(a), a = gi_n + r gh_n;  r, z = sigmoid(.)
        const double d_a = g * (1.0 - z) * (1.0 - c * c);
        const double d_z = g * (prev - c) * z * (1.0 - z);
        const double d_r = d_a * gh_n * r * (1.0 - r);
        dgi[j] = d_r, dgi[H + j] = d_z, dgi[2 * H + j] = d_a;
        dgh[j] = d_r, dgh[H + j] = d_z, dgh[2 * H + j] = d_a * r;
        dh_prev[n * H + j] = g * z;
      }
      const T* x_row = in + (t * s.N + n) * in_f;
      double* dx_row = d_in.data() + (t * s.N + n) * in_f;
      for (int64_t row = 0; row < 3 * H; ++row) {
        g_b_ih[row] += dgi[row];
        g_b_hh[row] += dgh[row];
        for (int64_t i = 0; i < in_f; ++i) {
          g_w_ih[row * in_f + i] += dgi[row] * x_row[i];
          dx_row[i] += dgi[row] * w_ih[row * in_f + i];
        }
        if (h_prev)  // h_prev = 0 at the first step: no contribution to W_hh, nothing to pass back
          for (int64_t i = 0; i < H; ++i) {
            g_w_hh[row * H + i] += dgh[row] * h_prev[n * out_f + i];
            dh_prev[n * H + i] += dgh[row] * w_hh[row * H + i];
          }
      }
    }
    dh.swap(dh_prev);
  }
}

template <class T>
void store(const std::vector<double>& from, Tensor& to) {
  T* p = to.data<T>();
  for (size_t i = 0; i < from.size(); ++i) p[i] = static_cast<T>(from[i]);
}

template <class T>
void gru_sequence_backward_naive_t(const Tensor& grad_y, const Tensor& x, const std::vector<Tensor>& params,
                                   const Dims& s, const Tensor& y, const Tensor& buffer, Tensor& grad_x,
                                   std::vector<Tensor>& grad_params) {
  const T* res = buffer.data<T>();
  const T* gy = grad_y.data<T>();
  std::vector<double> d_out(gy, gy + grad_y.numel());
  for (int64_t k = s.L - 1; k >= 0; --k) {
    const int64_t in_f = s.in_features(k);
    const T* in = k == 0 ? x.data<T>() : res + s.L * s.dirs * s.gates_block() + (k - 1) * s.output_block();
    const T* out = k == s.L - 1 ? y.data<T>() : res + s.L * s.dirs * s.gates_block() + k * s.output_block();
    std::vector<double> d_in(s.T * s.N * in_f, 0.0);
    for (int64_t d = 0; d < s.dirs; ++d) {
      const size_t p = static_cast<size_t>(4 * (k * s.dirs + d));
      std::vector<double> g_w_ih(3 * s.H * in_f, 0.0), g_w_hh(3 * s.H * s.H, 0.0), g_b_ih(3 * s.H, 0.0),
          g_b_hh(3 * s.H, 0.0);
      backward_direction<T>(s, in, in_f, params[p].data<T>(), params[p + 1].data<T>(), out,
                            res + (k * s.dirs + d) * s.gates_block(), d == 1, d, d_out, d_in, g_w_ih, g_w_hh, g_b_ih,
                            g_b_hh);
      store<T>(g_w_ih, grad_params[p]);
      store<T>(g_w_hh, grad_params[p + 1]);
      store<T>(g_b_ih, grad_params[p + 2]);
      store<T>(g_b_hh, grad_params[p + 3]);
    }
    d_out.swap(d_in);  // layer k's input gradient is layer k-1's output gradient
  }
  store<T>(d_out, grad_x);
}

bool gru_sequence_backward_naive(const Tensor& grad_y, const Tensor& x, const std::vector<Tensor>& params,
                                 int num_layers, bool bidirectional, const Tensor& y,
                                 const GruSequenceReserve& reserve, Tensor& grad_x, std::vector<Tensor>& grad_params) {
  const Dims s = dims_of(x, params, num_layers, bidirectional);
  // Only a reserve this kernel wrote, for these sizes and this dtype.
  if (reserve.kernel != kName || !reserve.data.defined() || reserve.data.dtype() != x.dtype() ||
      reserve.data.numel() != s.reserve_numel())
    return false;
  return MINIDL_FLOAT_TYPES(x.dtype(), {
    gru_sequence_backward_naive_t<T>(grad_y, x, params, s, y, reserve.data, grad_x, grad_params);
  });
}

}  // namespace

void register_gru_sequence_naive_cpu() {
  register_kernel<GruSequenceKernel>("gru_sequence", DeviceType::cpu, kName, 0,
                                     "reference: plain loops over layers, directions, steps and units, double sums",
                                     gru_sequence_naive);
  register_kernel<GruSequenceBackwardKernel>(
      "gru_sequence.backward", DeviceType::cpu, kName, 0,
      "reference: backpropagation through time in plain loops, double sums", gru_sequence_backward_naive);
}

}  // namespace minidl
