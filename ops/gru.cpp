// ops/gru.cpp — gru_cell: one fused GRU time step on the kernel keys "gru_cell" and "gru_cell.backward".
//
//   r = sigmoid(gi_r + gh_r),  z = sigmoid(gi_z + gh_z),  n = tanh(gi_n + r * gh_n)
//   h' = (1 - z) * n + z * h
// gi, gh [N, 3H] (gates r, z, n), h [N, H] -> h' [N, H]. The forward kernel also writes the activated
// gates (r, z, n, gh_n) [N, 4H], which the backward kernel turns into grad_gi, grad_gh [N, 3H] and the
// direct part of grad_h [N, H] (formulas in ops/kernel_signatures.h). The other path from h, through
// gh = h W_hh^T + b_hh, is linear()'s gradient: the GRU layer (nn/gru.cpp) computes gh with it.
#include "core/dispatch.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

Tensor gru_cell(const Tensor& gi, const Tensor& gh, const Tensor& h) {
  check_floating("gru_cell", gi);
  check_floating("gru_cell", gh);
  check_floating("gru_cell", h);
  check_same_device("gru_cell", {gi, gh, h});
  check_same_dtype("gru_cell", {gi, gh, h});
  check_dim("gru_cell", h, 2, "[N, H] for the hidden state");
  check_sizes("gru_cell", h.shape(), "the hidden state");  // no empty batch, no hidden size 0
  const int64_t N = h.shape()[0], H = h.shape()[1];
  for (const Tensor* t : {&gi, &gh})
    MINIDL_CHECK(t->dim() == 2 && t->shape()[0] == N && t->shape()[1] == 3 * H, "gru_cell: gi ",
                 shape_str(gi.shape()), " and gh ", shape_str(gh.shape()), " must both be [N, 3H] = [", N, ", ",
                 3 * H, "] for the hidden state h ", shape_str(h.shape()));

  const Tensor gi_c = gi.detach().contiguous(), gh_c = gh.detach().contiguous(), h_c = h.detach().contiguous();
  Tensor h_new = empty({N, H}, h.options());
  Tensor gates = empty({N, 4 * H}, h.options());
  dispatch(keys::gru_cell, h.device(), gi_c, gh_c, h_c, h_new, gates);
  if (needs_grad({gi, gh, h}))
    attach_grad_fn(h_new, "GruCellBackward", {gi, gh, h}, [h_c, gates](const Tensor& g) {
      Tensor grad_gi = empty({h_c.shape()[0], 3 * h_c.shape()[1]}, h_c.options());
      Tensor grad_gh = empty(grad_gi.shape(), h_c.options());
      Tensor grad_h = empty(h_c.shape(), h_c.options());
      dispatch(keys::gru_cell_backward, h_c.device(), g.contiguous(), h_c, gates, grad_gi, grad_gh,
               grad_h);
      return InputGradients{grad_gi, grad_gh, grad_h};
    });
  return h_new;
}

}  // namespace minidl
