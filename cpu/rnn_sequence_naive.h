// cpu/rnn_sequence_naive.h — what the reference kernels of the sequence-level RNN ops share
// (cpu/gru_sequence_naive.cpp, cpu/lstm_sequence_naive.cpp): the sizes, the order in which a direction
// visits the steps, the reserve's layout, the walk over layers and directions (forward, and backward
// through time), and each step's products with the weights. Plain loops; every sum in double.
// Accumulation convention: outputs (y, grad_x, grad_params) are overwritten (=); the weight gradients
// are summed over steps (+=) in double buffers, then written once.
//
// A cell (the GRU's or the LSTM's step) is a struct with
//   kGates  gate blocks per weight (G: 3 or 4)          kSaved  values per unit a step saves (S)
//   forward<T>(dims, dir)                   one direction of one layer: writes dir.out and dir.saved
//   backward<T>(dims, dir, d_out, d_in, g)  its backpropagation through time
// and sequence_forward<Cell> / sequence_backward<Cell> below are the kernels.
//
// The reserve (kernel "naive", x's dtype, one flat vector), what the backward needs:
//   saved   per layer k and direction d, [T, N, S*H]: the cell's S values per unit at step t (for the GRU
//           what gru_cell saves); block (k * dirs + d) of T*N*S*H values, first
//   outputs layer k's output [T, N, H * dirs] for k = 0 .. L-2 (the input of layer k+1; the last layer's
//           output is y, which the backward gets), after the saved values
// A step's h_prev is read back from the layer's output at the previous step.
#pragma once
#include <vector>

#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {
namespace rnn_naive {

constexpr const char* kName = "naive";

// Sizes shared by the forward and backward loops; G gate blocks, S saved values per unit and step.
struct Dims {
  int64_t T, N, I, H, dirs, L, G, S;
  int64_t in_features(int64_t k) const { return k == 0 ? I : H * dirs; }
  int64_t out_features() const { return H * dirs; }
  int64_t saved_block() const { return T * N * S * H; }
  int64_t output_block() const { return T * N * H * dirs; }
  int64_t reserve_numel() const { return L * dirs * saved_block() + (L - 1) * output_block(); }
  // The time step visited k-th by a direction, and the one visited before t.
  int64_t step_time(bool reverse, int64_t k) const { return reverse ? T - 1 - k : k; }
  static int64_t prev_time(bool reverse, int64_t t) { return reverse ? t + 1 : t - 1; }
};

template <class Cell>
Dims dims_of(const Tensor& x, const std::vector<Tensor>& params, int num_layers, bool bidirectional) {
  return {x.shape()[0], x.shape()[1], x.shape()[2], params[1].shape()[1], bidirectional ? 2 : 1,
          num_layers,   Cell::kGates, Cell::kSaved};
}

// One direction of one layer: its input [T, N, in_f], parameters, the layer's output [T, N, H * dirs]
// (this direction owns columns [d*H, d*H + H)) and its saved values [T, N, S*H].
template <class T>
struct Direction {
  const T* in;
  int64_t in_f;
  const T *w_ih, *w_hh, *b_ih, *b_hh;
  bool reverse;
  int64_t d;
  T* out;  // const in the backward
  T* saved;
  // h_prev of the step at time t visited k-th (nullptr for the first: h = 0), row n.
  const T* h_prev(const Dims& s, int64_t k, int64_t t, int64_t n) const {
    return k > 0 ? out + (Dims::prev_time(reverse, t) * s.N + n) * s.out_features() + d * s.H : nullptr;
  }
};

// The pre-activations of unit j: gi[g] = b_ih[r] + W_ih[r] . x_row and gh[g] = b_hh[r] + W_hh[r] . h_prev
// for the rows r = g H + j, g < G (h_prev null: gh = b_hh).
template <class T>
void preactivations(const Dims& s, const Direction<T>& p, const T* x_row, const T* h_prev, int64_t j, double* gi,
                    double* gh) {
  for (int64_t g = 0; g < s.G; ++g) {
    const int64_t row = g * s.H + j;
    double a = static_cast<double>(p.b_ih[row]), b = static_cast<double>(p.b_hh[row]);
    for (int64_t i = 0; i < p.in_f; ++i) a += static_cast<double>(p.w_ih[row * p.in_f + i]) * x_row[i];
    if (h_prev)
      for (int64_t i = 0; i < s.H; ++i) b += static_cast<double>(p.w_hh[row * s.H + i]) * h_prev[i];
    gi[g] = a;
    gh[g] = b;
  }
}

// The weight gradients of one layer and direction, in double.
struct Gradients {
  std::vector<double> w_ih, w_hh, b_ih, b_hh;
  Gradients(const Dims& s, int64_t in_f)
      : w_ih(s.G * s.H * in_f, 0.0), w_hh(s.G * s.H * s.H, 0.0), b_ih(s.G * s.H, 0.0), b_hh(s.G * s.H, 0.0) {}
};

// One step of row n, given the gradients at the pre-activations dgi, dgh [G*H]:
//   grad_b_ih += dgi,  grad_b_hh += dgh,  grad_w_ih += dgi^T x,  grad_w_hh += dgh^T h_prev
//   dx_row += dgi W_ih,  dh_prev += dgh W_hh      (h_prev null, the first step: no W_hh terms)
template <class T>
void accumulate_step(const Dims& s, const Direction<T>& p, const double* dgi, const double* dgh, const T* x_row,
                     const T* h_prev, double* dx_row, double* dh_prev, Gradients& g) {
  for (int64_t row = 0; row < s.G * s.H; ++row) {
    g.b_ih[row] += dgi[row];
    g.b_hh[row] += dgh[row];
    for (int64_t i = 0; i < p.in_f; ++i) {
      g.w_ih[row * p.in_f + i] += dgi[row] * x_row[i];
      dx_row[i] += dgi[row] * p.w_ih[row * p.in_f + i];
    }
    if (h_prev)
      for (int64_t i = 0; i < s.H; ++i) {
        g.w_hh[row * s.H + i] += dgh[row] * h_prev[i];
        dh_prev[i] += dgh[row] * p.w_hh[row * s.H + i];
      }
  }
}

template <class T>
void store(const std::vector<double>& from, Tensor& to) {
  T* p = to.data<T>();
  for (size_t i = 0; i < from.size(); ++i) p[i] = static_cast<T>(from[i]);
}

// Layer k's input and output in the reserve `res` (or x and y at the ends of the stack).
template <class T>
Direction<T> direction_of(const Dims& s, const std::vector<Tensor>& params, const T* x, T* y, T* res, int64_t k,
                          int64_t d) {
  const size_t p = static_cast<size_t>(4 * (k * s.dirs + d));
  T* outputs = res + s.L * s.dirs * s.saved_block();
  Direction<T> dir;
  dir.in = k == 0 ? x : outputs + (k - 1) * s.output_block();
  dir.in_f = s.in_features(k);
  dir.w_ih = params[p].data<T>();
  dir.w_hh = params[p + 1].data<T>();
  dir.b_ih = params[p + 2].data<T>();
  dir.b_hh = params[p + 3].data<T>();
  dir.reverse = d == 1;
  dir.d = d;
  dir.out = k == s.L - 1 ? y : outputs + k * s.output_block();
  dir.saved = res + (k * s.dirs + d) * s.saved_block();
  return dir;
}

template <class Cell, class T>
void forward_layers(const Tensor& x, const std::vector<Tensor>& params, const Dims& s, Tensor& y, Tensor& buffer) {
  for (int64_t k = 0; k < s.L; ++k)
    for (int64_t d = 0; d < s.dirs; ++d)
      Cell::template forward<T>(s, direction_of<T>(s, params, x.data<T>(), y.data<T>(), buffer.data<T>(), k, d));
}

template <class Cell, class T>
void backward_layers(const Tensor& grad_y, const Tensor& x, const std::vector<Tensor>& params, const Dims& s,
                     const Tensor& y, const Tensor& buffer, Tensor& grad_x, std::vector<Tensor>& grad_params) {
  const T* gy = grad_y.data<T>();
  std::vector<double> d_out(gy, gy + grad_y.numel());
  for (int64_t k = s.L - 1; k >= 0; --k) {
    std::vector<double> d_in(s.T * s.N * s.in_features(k), 0.0);
    for (int64_t d = 0; d < s.dirs; ++d) {
      // The backward writes nothing through these pointers; direction_of is shared with the forward.
      const Direction<T> dir = direction_of<T>(s, params, x.data<T>(), const_cast<T*>(y.data<T>()),
                                               const_cast<T*>(buffer.data<T>()), k, d);
      Gradients g(s, dir.in_f);
      Cell::template backward<T>(s, dir, d_out, d_in, g);
      const size_t p = static_cast<size_t>(4 * (k * s.dirs + d));
      store<T>(g.w_ih, grad_params[p]);
      store<T>(g.w_hh, grad_params[p + 1]);
      store<T>(g.b_ih, grad_params[p + 2]);
      store<T>(g.b_hh, grad_params[p + 3]);
    }
    d_out.swap(d_in);  // layer k's input gradient is layer k-1's output gradient
  }
  store<T>(d_out, grad_x);
}

// The kernels (RnnSequenceKernel, RnnSequenceBackwardKernel) of a cell.
template <class Cell>
bool sequence_forward(const Tensor& x, const std::vector<Tensor>& params, int num_layers, bool bidirectional,
                      bool keep_reserve, Tensor& y, RnnSequenceReserve& reserve) {
  const Dims s = dims_of<Cell>(x, params, num_layers, bidirectional);
  // The reserve holds the intermediate layers' outputs, which the forward needs anyway.
  Tensor buffer = empty({s.reserve_numel()}, x.options());
  const bool ok = MINIDL_FLOAT_TYPES(x.dtype(), { forward_layers<Cell, T>(x, params, s, y, buffer); });
  if (ok && keep_reserve) reserve = {kName, buffer};
  return ok;
}

template <class Cell>
bool sequence_backward(const Tensor& grad_y, const Tensor& x, const std::vector<Tensor>& params, int num_layers,
                       bool bidirectional, const Tensor& y, const RnnSequenceReserve& reserve, Tensor& grad_x,
                       std::vector<Tensor>& grad_params) {
  const Dims s = dims_of<Cell>(x, params, num_layers, bidirectional);
  // Only a reserve this kernel wrote, for these sizes and this dtype.
  if (reserve.kernel != kName || !reserve.data.defined() || reserve.data.dtype() != x.dtype() ||
      reserve.data.numel() != s.reserve_numel())
    return false;
  return MINIDL_FLOAT_TYPES(x.dtype(), {
    backward_layers<Cell, T>(grad_y, x, params, s, y, reserve.data, grad_x, grad_params);
  });
}

}  // namespace rnn_naive
}  // namespace minidl
