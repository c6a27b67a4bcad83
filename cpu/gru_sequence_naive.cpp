// cpu/gru_sequence_naive.cpp — reference kernels of the sequence-level GRU ("gru_sequence",
// "gru_sequence.backward"): plain loops over layers, directions, steps, rows and units, every sum and
// every formula in double. Equations, parameter order and layouts are in ops/kernel_signatures.h; the
// walk over layers and directions, the products with the weights and the reserve's layout are shared
// with the LSTM's reference (cpu/rnn_sequence_naive.h). Accumulation convention: as there.
//
// What a step saves per unit (S = 4): (r, z, n, gh_n), as gru_cell saves them.
#include <cmath>
#include <vector>

#include "cpu/rnn_sequence_naive.h"

namespace minidl {

namespace {

using rnn_naive::Dims;
using rnn_naive::Direction;

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

struct GruCell {
  static constexpr int64_t kGates = 3, kSaved = 4;

  template <class T>
  static void forward(const Dims& s, const Direction<T>& p) {
    const int64_t H = s.H;
    for (int64_t k = 0; k < s.T; ++k) {
      const int64_t t = s.step_time(p.reverse, k);
      for (int64_t n = 0; n < s.N; ++n) {
        const T* h_prev = p.h_prev(s, k, t, n);
        const T* x_row = p.in + (t * s.N + n) * p.in_f;
        T* saved = p.saved + (t * s.N + n) * 4 * H;
        for (int64_t j = 0; j < H; ++j) {
          double gi[3], gh[3];
          rnn_naive::preactivations(s, p, x_row, h_prev, j, gi, gh);
          const double r = sigmoid(gi[0] + gh[0]);
          const double z = sigmoid(gi[1] + gh[1]);
          const double c = std::tanh(gi[2] + r * gh[2]);  // the candidate state n
          const double prev = h_prev ? static_cast<double>(h_prev[j]) : 0.0;
          p.out[(t * s.N + n) * s.out_features() + p.d * H + j] = static_cast<T>((1.0 - z) * c + z * prev);
          saved[j] = static_cast<T>(r);
          saved[H + j] = static_cast<T>(z);
          saved[2 * H + j] = static_cast<T>(c);
          saved[3 * H + j] = static_cast<T>(gh[2]);
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
    std::vector<double> dh(s.N * H, 0.0);  // dL/dh_t from the step visited after t
    std::vector<double> dh_prev(s.N * H);
    std::vector<double> dgi(3 * H), dgh(3 * H);
    for (int64_t k = s.T - 1; k >= 0; --k) {
      const int64_t t = s.step_time(p.reverse, k);
      for (int64_t n = 0; n < s.N; ++n) {
        const T* h_prev = p.h_prev(s, k, t, n);
        const T* saved = p.saved + (t * s.N + n) * 4 * H;
        for (int64_t j = 0; j < H; ++j) {
          const double r = saved[j], z = saved[H + j], c = saved[2 * H + j], gh_n = saved[3 * H + j];
          const double g = d_out[(t * s.N + n) * s.out_features() + p.d * H + j] + dh[n * H + j];
          const double prev = h_prev ? static_cast<double>(h_prev[j]) : 0.0;
          // h = (1 - z) c + z prev;  c = tanh(a), a = gi_n + r gh_n;  r, z = sigmoid(.)
          const double d_a = g * (1.0 - z) * (1.0 - c * c);
          const double d_z = g * (prev - c) * z * (1.0 - z);
          const double d_r = d_a * gh_n * r * (1.0 - r);
          dgi[j] = d_r, dgi[H + j] = d_z, dgi[2 * H + j] = d_a;
          dgh[j] = d_r, dgh[H + j] = d_z, dgh[2 * H + j] = d_a * r;
          dh_prev[n * H + j] = g * z;
        }
        rnn_naive::accumulate_step(s, p, dgi.data(), dgh.data(), p.in + (t * s.N + n) * p.in_f, h_prev,
                                   d_in.data() + (t * s.N + n) * p.in_f, dh_prev.data() + n * H, grads);
      }
      dh.swap(dh_prev);
    }
  }
};

}  // namespace

void register_gru_sequence_naive_cpu() {
  register_kernel(keys::gru_sequence, DeviceType::cpu, rnn_naive::kName, Priority::reference,
                  "reference: plain loops over layers, directions, steps and units, double sums",
                  rnn_naive::sequence_forward<GruCell>);
  register_kernel(
      keys::gru_sequence_backward, DeviceType::cpu, rnn_naive::kName, Priority::reference,
      "reference: backpropagation through time in plain loops, double sums", rnn_naive::sequence_backward<GruCell>);
}

}  // namespace minidl
