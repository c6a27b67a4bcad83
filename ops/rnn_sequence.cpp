// ops/rnn_sequence.cpp — the sequence-level RNN ops: a whole multi-layer, optionally bidirectional GRU
// (gru_sequence, nn/gru.h's equations and parameter order) or LSTM (lstm_sequence, nn/lstm.h's) in one
// forward kernel and one backward kernel.
//
//   y = gru_sequence(x, params, L, bidirectional)          x [T, N, I] -> y [T, N, H * dirs]
//   y = lstm_sequence(x, params, L, bidirectional)
// Per layer and direction (zero initial states; the reverse direction runs t = T-1 .. 0), the GRU:
//   r = sigmoid(W_ir in_t + b_ir + W_hr h + b_hr),  z = sigmoid(W_iz in_t + b_iz + W_hz h + b_hz)
//   n = tanh(W_in in_t + b_in + r * (W_hn h + b_hn)),  h_t = (1 - z) * n + z * h
// the LSTM:
//   i = sigmoid(W_ii in_t + b_ii + W_hi h + b_hi),  f = sigmoid(W_if in_t + b_if + W_hf h + b_hf)
//   g = tanh(W_ig in_t + b_ig + W_hg h + b_hg),     o = sigmoid(W_io in_t + b_io + W_ho h + b_ho)
//   c_t = f * c + i * g,  h_t = o * tanh(c_t)
// Gradient: the kernel "<op>.backward" (backpropagation through time, formulas in
// ops/kernel_signatures.h) returns dL/dx and dL/d(every parameter) at once, from the forward's reserve.
//
// Why ops of their own: a library RNN (cuDNN) computes all steps, layers and directions in one call and
// keeps its intermediate values in an opaque reserve, so it cannot be a kernel of a per-step cell op.
// The reserve carries the name of the kernel that wrote it (RnnSequenceReserve::kernel), and every
// backward kernel declines a reserve that is not its own: the backward always runs the forward's partner.
// The two ops differ only in the number of gate blocks G per weight (GRU 3, LSTM 4) and their kernel keys.
#include "core/dispatch.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

namespace {

// Checks the parameter list of a stack with `gates` gate blocks against x and returns the hidden size H.
int64_t check_rnn_params(const char* op, int64_t gates, const Tensor& x, const std::vector<Tensor>& params,
                         int num_layers, bool bidirectional) {
  const int dirs = bidirectional ? 2 : 1;
  MINIDL_CHECK(num_layers >= 1, op, ": num_layers must be at least 1, got ", num_layers);
  MINIDL_CHECK(params.size() == static_cast<size_t>(4 * num_layers * dirs), op, ": expected ", 4 * num_layers * dirs,
               " parameters (w_ih, w_hh, b_ih, b_hh per layer and direction) for ", num_layers, " layer(s)",
               bidirectional ? ", bidirectional" : "", ", got ", params.size());
  for (const Tensor& p : params) check_floating(op, p);
  const int64_t H = params[1].dim() == 2 ? params[1].size(1) : 0;
  MINIDL_CHECK(H > 0, op, ": w_hh of layer 0 must be [", gates, "H, H] with H > 0, got ",
               shape_str(params[1].shape()));
  for (int k = 0; k < num_layers; ++k) {
    const int64_t in = k == 0 ? x.size(2) : H * dirs;
    for (int d = 0; d < dirs; ++d) {
      const size_t i = static_cast<size_t>(4 * (k * dirs + d));
      const Shape expected[4] = {{gates * H, in}, {gates * H, H}, {gates * H}, {gates * H}};
      const char* names[4] = {"w_ih", "w_hh", "b_ih", "b_hh"};
      for (int j = 0; j < 4; ++j)
        MINIDL_CHECK(params[i + j].shape() == expected[j], op, ": ", names[j], " of layer ", k,
                     d == 1 ? " (reverse)" : "", " must be ", shape_str(expected[j]), " for input ",
                     shape_str(x.shape()), " and hidden size ", H, ", got ", shape_str(params[i + j].shape()));
    }
  }
  return H;
}

// The op: checks, dispatch to the kernels of `key`, and the gradient (autograd node `node`) through the
// kernels of `backward_key`.
Tensor rnn_sequence(const KernelKey<RnnSequenceKernel>& key, const KernelKey<RnnSequenceBackwardKernel>& backward_key,
                    const char* node, int64_t gates, const Tensor& x,
                    const std::vector<Tensor>& params, int num_layers, bool bidirectional) {
  const char* op = key.name();
  check_floating(op, x);
  check_dim(op, x, 3, "[T, N, input] of input sequences");
  MINIDL_CHECK(x.size(0) > 0 && x.size(1) > 0 && x.size(2) > 0, op, ": empty input ", shape_str(x.shape()));
  const int64_t H = check_rnn_params(op, gates, x, params, num_layers, bidirectional);
  std::vector<Tensor> all = {x};
  all.insert(all.end(), params.begin(), params.end());
  check_same_device(op, all);
  check_same_dtype(op, all);

  const int64_t T = x.size(0), N = x.size(1);
  const Tensor x_c = x.detach().contiguous();
  std::vector<Tensor> params_c;
  for (const Tensor& p : params) params_c.push_back(p.detach().contiguous());
  Tensor y = empty({T, N, H * (bidirectional ? 2 : 1)}, x.options());
  const bool grad = needs_grad(all);
  RnnSequenceReserve reserve;
  dispatch(key, x.device(), x_c, params_c, num_layers, bidirectional, grad, y, reserve);
  if (grad) {
    attach_grad_fn(y, node, all,
                   [&backward_key, x_c, params_c, y_saved = y.detach(), reserve, num_layers,
                    bidirectional](const Tensor& g) {
                     Tensor grad_x = empty(x_c.shape(), x_c.options());
                     std::vector<Tensor> grad_params;
                     for (const Tensor& p : params_c) grad_params.push_back(empty(p.shape(), p.options()));
                     dispatch(backward_key, x_c.device(), g.contiguous(), x_c, params_c, num_layers,
                              bidirectional, y_saved, reserve, grad_x, grad_params);
                     InputGradients out = {grad_x};
                     out.insert(out.end(), grad_params.begin(), grad_params.end());
                     return out;
                   });
  }
  return y;
}

}  // namespace

Tensor gru_sequence(const Tensor& x, const std::vector<Tensor>& params, int num_layers, bool bidirectional) {
  return rnn_sequence(keys::gru_sequence, keys::gru_sequence_backward, "GruSequenceBackward", 3, x, params, num_layers, bidirectional);
}

Tensor lstm_sequence(const Tensor& x, const std::vector<Tensor>& params, int num_layers, bool bidirectional) {
  return rnn_sequence(keys::lstm_sequence, keys::lstm_sequence_backward, "LstmSequenceBackward", 4, x, params, num_layers, bidirectional);
}

}  // namespace minidl
