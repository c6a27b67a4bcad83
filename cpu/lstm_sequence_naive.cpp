// cpu/lstm_sequence_naive.cpp — reference kernels of the sequence-level LSTM ("lstm_sequence",
// "lstm_sequence.backward"): plain loops over layers, directions, steps, rows and units, every sum and
// every formula in double. Equations, parameter order and layouts are in ops/kernel_signatures.h; the
// walk over layers and directions, the products with the weights and the reserve's layout are shared
// with the GRU's reference (cpu/rnn_sequence_naive.h). Accumulation convention: as there.
//
// What a step saves per unit (S = 5): (i, f, g, o, c_t). The cell state c_prev of a step is read back
// from the step before's saved c (0 at the first visited step), as h_prev is from the layer's output.
#include <cmath>
#include <vector>

#include "cpu/rnn_sequence_naive.h"

namespace minidl {

namespace {

using rnn_naive::Dims;
using rnn_naive::Direction;

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

struct LstmCell {
  static constexpr int64_t kGates = 4, kSaved = 5;

  // The saved values of row n at time t, and the previous step's c (nullptr for the first visited step).
  template <class T>
  static T* saved_at(const Dims& s, const Direction<T>& p, int64_t t, int64_t n) {
    return p.saved + (t * s.N + n) * 5 * s.H;
  }
  template <class T>
  static const T* c_prev(const Dims& s, const Direction<T>& p, int64_t k, int64_t t, int64_t n) {
    return k > 0 ? saved_at(s, p, Dims::prev_time(p.reverse, t), n) + 4 * s.H : nullptr;
  }

  template <class T>
  static void forward(const Dims& s, const Direction<T>& p) {
    const int64_t H = s.H;
    for (int64_t k = 0; k < s.T; ++k) {
      const int64_t t = s.step_time(p.reverse, k);
      for (int64_t n = 0; n < s.N; ++n) {
        const T* h_prev = p.h_prev(s, k, t, n);
        const T* c_before = c_prev(s, p, k, t, n);
        const T* x_row = p.in + (t * s.N + n) * p.in_f;
        T* saved = saved_at(s, p, t, n);
        for (int64_t j = 0; j < H; ++j) {
          double gi[4], gh[4];
          rnn_naive::preactivations(s, p, x_row, h_prev, j, gi, gh);
          const double i = sigmoid(gi[0] + gh[0]);
          const double f = sigmoid(gi[1] + gh[1]);
          const double g = std::tanh(gi[2] + gh[2]);
          const double o = sigmoid(gi[3] + gh[3]);
          const double c = f * (c_before ? static_cast<double>(c_before[j]) : 0.0) + i * g;
          p.out[(t * s.N + n) * s.out_features() + p.d * H + j] = static_cast<T>(o * std::tanh(c));
          const double values[5] = {i, f, g, o, c};
          for (int v = 0; v < 5; ++v) saved[v * H + j] = static_cast<T>(values[v]);
        }
      }
    }
  }

  // d_out [T, N, H * dirs] is dL/d(layer output) from above; adds dL/d(layer input) into d_in and the
  // weight gradients into grads.
  template <class T>
  static void backward(const Dims& s, const Direction<T>& p, const std::vector<double>& d_out,
                       std::vector<double>& d_in, rnn_naive::Gradients& grads) {
    const int64_t H = s.H;
    std::vector<double> dh(s.N * H, 0.0), dc(s.N * H, 0.0);  // dL/dh_t and dL/dc_t from the step visited after t
    std::vector<double> dh_prev(s.N * H), dc_prev(s.N * H);
    std::vector<double> dgates(4 * H);  // the gradient at the pre-activations: of gi and of gh alike
    for (int64_t k = s.T - 1; k >= 0; --k) {
      const int64_t t = s.step_time(p.reverse, k);
      for (int64_t n = 0; n < s.N; ++n) {
        const T* h_prev = p.h_prev(s, k, t, n);
        const T* c_before = c_prev(s, p, k, t, n);
        const T* saved = saved_at(s, p, t, n);
        for (int64_t j = 0; j < H; ++j) {
          const double i = saved[j], f = saved[H + j], g = saved[2 * H + j], o = saved[3 * H + j];
          const double tanh_c = std::tanh(static_cast<double>(saved[4 * H + j]));
          const double c_before_j = c_before ? static_cast<double>(c_before[j]) : 0.0;
          const double d_h = d_out[(t * s.N + n) * s.out_features() + p.d * H + j] + dh[n * H + j];
          // h = o tanh(c);  c = f c_prev + i g;  i, f, o = sigmoid(.), g = tanh(.)
          const double d_c = dc[n * H + j] + d_h * o * (1.0 - tanh_c * tanh_c);
          dgates[j] = d_c * g * i * (1.0 - i);
          dgates[H + j] = d_c * c_before_j * f * (1.0 - f);
          dgates[2 * H + j] = d_c * i * (1.0 - g * g);
          dgates[3 * H + j] = d_h * tanh_c * o * (1.0 - o);
          dc_prev[n * H + j] = d_c * f;
          dh_prev[n * H + j] = 0.0;  // h_prev reaches h only through gh: accumulate_step adds dgates W_hh
        }
        rnn_naive::accumulate_step(s, p, dgates.data(), dgates.data(), p.in + (t * s.N + n) * p.in_f, h_prev,
                                   d_in.data() + (t * s.N + n) * p.in_f, dh_prev.data() + n * H, grads);
      }
      dh.swap(dh_prev);
      dc.swap(dc_prev);
    }
  }
};

}  // namespace

void register_lstm_sequence_naive_cpu() {
  register_kernel(keys::lstm_sequence, DeviceType::cpu, rnn_naive::kName, Priority::reference,
                  "reference: plain loops over layers, directions, steps and units, double sums",
                  rnn_naive::sequence_forward<LstmCell>);
  register_kernel(
      keys::lstm_sequence_backward, DeviceType::cpu, rnn_naive::kName, Priority::reference,
      "reference: backpropagation through time in plain loops, double sums", rnn_naive::sequence_backward<LstmCell>);
}

}  // namespace minidl
