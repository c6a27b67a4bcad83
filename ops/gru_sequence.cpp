// ops/gru_sequence.cpp — the sequence-level GRU op: a whole multi-layer, optionally bidirectional GRU
// (nn/gru.h's equations and parameter order) in one forward kernel and one backward kernel.
//
//   y = gru_sequence(x, params, L, bidirectional)         x [T, N, I] -> y [T, N, H * dirs]
// Per layer and direction (h_{-1} = 0; the reverse direction runs t = T-1 .. 0):
//   r = sigmoid(W_ir in_t + b_ir + W_hr h + b_hr),  z = sigmoid(W_iz in_t + b_iz + W_hz h + b_hz)
//   n = tanh(W_in in_t + b_in + r * (W_hn h + b_hn)),  h_t = (1 - z) * n + z * h
// Gradient: the kernel "gru_sequence.backward" (backpropagation through time, formulas in
// ops/kernel_signatures.h) returns dL/dx and dL/d(every parameter) at once, from the forward's reserve.
//
// Why an op of its own: a library RNN (cuDNN) computes all steps, layers and directions in one call and
// keeps its intermediate values in an opaque reserve, so it cannot be a kernel of the per-step gru_cell.
// The reserve carries the name of the kernel that wrote it (GruSequenceReserve::kernel), and every
// backward kernel declines a reserve that is not its own: the backward always runs the forward's partner.
#include "core/dispatch.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

namespace {

// Checks the parameter list against x and returns the hidden size H.
int64_t check_gru_params(const Tensor& x, const std::vector<Tensor>& params, int num_layers, bool bidirectional) {
  const int dirs = bidirectional ? 2 : 1;
  MINIDL_CHECK(num_layers >= 1, "gru_sequence: num_layers must be at least 1, got ", num_layers);
  MINIDL_CHECK(params.size() == static_cast<size_t>(4 * num_layers * dirs), "gru_sequence: expected ",
               4 * num_layers * dirs, " parameters (w_ih, w_hh, b_ih, b_hh per layer and direction) for ", num_layers,
               " layer(s)", bidirectional ? ", bidirectional" : "", ", got ", params.size());
  for (const Tensor& p : params) check_floating("gru_sequence", p);
  const int64_t H = params[1].dim() == 2 ? params[1].size(1) : 0;
  MINIDL_CHECK(H > 0, "gru_sequence: w_hh of layer 0 must be [3H, H] with H > 0, got ", shape_str(params[1].shape()));
  for (int k = 0; k < num_layers; ++k) {
    const int64_t in = k == 0 ? x.size(2) : H * dirs;
    for (int d = 0; d < dirs; ++d) {
      const size_t i = static_cast<size_t>(4 * (k * dirs + d));
      const Shape expected[4] = {{3 * H, in}, {3 * H, H}, {3 * H}, {3 * H}};
      const char* names[4] = {"w_ih", "w_hh", "b_ih", "b_hh"};
      for (int j = 0; j < 4; ++j)
        MINIDL_CHECK(params[i + j].shape() == expected[j], "gru_sequence: ", names[j], " of layer ", k,
                     d == 1 ? " (reverse)" : "", " must be ", shape_str(expected[j]), " for input ",
                     shape_str(x.shape()), " and hidden size ", H, ", got ", shape_str(params[i + j].shape()));
    }
  }
  return H;
}

}  // namespace

Tensor gru_sequence(const Tensor& x, const std::vector<Tensor>& params, int num_layers, bool bidirectional) {
  check_floating("gru_sequence", x);
  check_dim("gru_sequence", x, 3, "[T, N, input] of input sequences");
  MINIDL_CHECK(x.size(0) > 0 && x.size(1) > 0 && x.size(2) > 0, "gru_sequence: empty input ", shape_str(x.shape()));
  const int64_t H = check_gru_params(x, params, num_layers, bidirectional);
  std::vector<Tensor> all = {x};
  all.insert(all.end(), params.begin(), params.end());
  check_same_device("gru_sequence", all);
  check_same_dtype("gru_sequence", all);

  const int64_t T = x.size(0), N = x.size(1);
  const Tensor x_c = x.detach().contiguous();
  std::vector<Tensor> params_c;
  for (const Tensor& p : params) params_c.push_back(p.detach().contiguous());
  Tensor y = empty({T, N, H * (bidirectional ? 2 : 1)}, x.options());
  const bool grad = needs_grad(all);
  GruSequenceReserve reserve;
  dispatch<GruSequenceKernel>("gru_sequence", x.device(), x_c, params_c, num_layers, bidirectional, grad, y, reserve);
  if (grad)
    attach_grad_fn(y, "GruSequenceBackward", all,
                   [x_c, params_c, y_saved = y.detach(), reserve, num_layers, bidirectional](const Tensor& g) {
                     Tensor grad_x = empty(x_c.shape(), x_c.options());
                     std::vector<Tensor> grad_params;
                     for (const Tensor& p : params_c) grad_params.push_back(empty(p.shape(), p.options()));
                     dispatch<GruSequenceBackwardKernel>("gru_sequence.backward", x_c.device(), g.contiguous(), x_c,
                                                         params_c, num_layers, bidirectional, y_saved, reserve, grad_x,
                                                         grad_params);
                     grads out = {grad_x};
                     out.insert(out.end(), grad_params.begin(), grad_params.end());
                     return out;
                   });
  return y;
}

}  // namespace minidl
