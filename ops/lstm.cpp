// ops/lstm.cpp — lstm_cell: one fused LSTM time step on the kernel keys "lstm_cell" and "lstm_cell.backward".
//
//   i = sigmoid(gi_i + gh_i),  f = sigmoid(gi_f + gh_f),  g = tanh(gi_g + gh_g),  o = sigmoid(gi_o + gh_o)
//   c' = f * c + i * g,  h' = o * tanh(c')
// gi, gh [N, 4H] (gates i, f, g, o), c [N, H] -> (h', c') stacked as [2, N, H]: one output, because an op
// has one output and one gradient function here (core/autograd.h); the layer reads h' and c' as views.
// The forward kernel also writes (i, f, g, o, tanh c') [N, 5H], which the backward kernel turns into
// grad_gates [N, 4H], the gradient of gi and of gh alike (they enter only as gi + gh), and grad_c [N, H]
// (formulas in ops/kernel_signatures.h). The path from h, through gh = h W_hh^T + b_hh, is linear()'s
// gradient: the LSTM layer (nn/lstm.cpp) computes gh with it.
#include "core/dispatch.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

Tensor lstm_cell(const Tensor& gi, const Tensor& gh, const Tensor& c) {
  check_floating("lstm_cell", gi);
  check_floating("lstm_cell", gh);
  check_floating("lstm_cell", c);
  check_same_device("lstm_cell", {gi, gh, c});
  check_same_dtype("lstm_cell", {gi, gh, c});
  check_dim("lstm_cell", c, 2, "[N, H] for the cell state");
  check_sizes("lstm_cell", c.shape(), "the cell state");  // no empty batch, no hidden size 0
  const int64_t N = c.shape()[0], H = c.shape()[1];
  for (const Tensor* t : {&gi, &gh})
    MINIDL_CHECK(t->dim() == 2 && t->shape()[0] == N && t->shape()[1] == 4 * H, "lstm_cell: gi ",
                 shape_str(gi.shape()), " and gh ", shape_str(gh.shape()), " must both be [N, 4H] = [", N, ", ",
                 4 * H, "] for the cell state c ", shape_str(c.shape()));

  const Tensor gi_c = gi.detach().contiguous(), gh_c = gh.detach().contiguous(), c_c = c.detach().contiguous();
  Tensor hc_new = empty({2, N, H}, c.options());
  Tensor h_new = hc_new.select(0, 0), c_new = hc_new.select(0, 1);  // contiguous halves
  Tensor gates = empty({N, 5 * H}, c.options());
  dispatch(keys::lstm_cell, c.device(), gi_c, gh_c, c_c, h_new, c_new, gates);
  if (needs_grad({gi, gh, c}))
    attach_grad_fn(hc_new, "LstmCellBackward", {gi, gh, c}, [c_c, gates](const Tensor& g) {
      const Tensor g_c = g.contiguous();
      Tensor grad_gates = empty({c_c.shape()[0], 4 * c_c.shape()[1]}, c_c.options());
      Tensor grad_c = empty(c_c.shape(), c_c.options());
      dispatch(keys::lstm_cell_backward, c_c.device(), g_c.select(0, 0), g_c.select(0, 1), c_c,
               gates, grad_gates, grad_c);
      // One tensor for gi and gh: autograd never writes a gradient in place, so they may share it.
      return InputGradients{grad_gates, grad_gates, grad_c};
    });
  return hc_new;
}

}  // namespace minidl
