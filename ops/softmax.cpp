// ops/softmax.cpp — softmax and log_softmax over any dim.
//
// Layout: the softmax dim is moved last and the tensor packed to [rows, cols] (cols = the size of that
// dim), so the kernels (ops/kernel_signatures.h) only ever normalise the rows of a matrix; the result is
// moved back to x's layout. With dim already last this costs nothing (a view).
//
//   softmax:      y = exp(x - m) / sum_c exp(x - m),  m = max_c x     grad_x = y * (g - sum_c(g * y))
//   log_softmax:  y = x - m - log(sum_c exp(x - m))                    grad_x = g - exp(y) * sum_c(g)
// Both gradients need only y, so the packed output (not x) is saved; a dedicated backward kernel
// computes each (keys "softmax.backward", "log_softmax.backward").
#include "core/dispatch.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

namespace {

// How x's dims are moved so that the softmax dim is last, and back.
struct RowLayout {
  bool dim_is_last = true;         // no permutation needed
  std::vector<int> perm, inverse;  // to "dim last" and back
  Shape permuted;                  // x's shape after perm
  int64_t rows = 1, cols = 1;
};

RowLayout row_layout(const char* op, const Tensor& x, int dim) {
  const int n = x.dim();
  const int d = normalize_dim(op, dim, n);
  RowLayout L;
  L.dim_is_last = d == n - 1;
  for (int i = 0; i < n; ++i)
    if (i != d) L.perm.push_back(i);
  L.perm.push_back(d);
  L.inverse.resize(n);
  for (int i = 0; i < n; ++i) L.inverse[L.perm[i]] = i;
  for (int i : L.perm) L.permuted.push_back(x.shape()[i]);
  for (int i = 0; i < n; ++i)
    if (i != d) L.rows *= x.shape()[i];
  L.cols = x.shape()[d];
  return L;
}

// t (x's layout) as packed [rows, cols] rows, without history.
Tensor to_rows(const Tensor& t, const RowLayout& L) {
  const Tensor moved = L.dim_is_last ? t.detach() : t.detach().permute(L.perm);
  return moved.contiguous().view({L.rows, L.cols});
}

// Packed [rows, cols] back to x's layout (contiguous).
Tensor from_rows(const Tensor& rows, const RowLayout& L) {
  const Tensor moved = rows.view(L.permuted);
  return L.dim_is_last ? moved : moved.permute(L.inverse).contiguous();
}

Tensor softmax_family(const KernelKey<SoftmaxKernel>& key, const KernelKey<SoftmaxBackwardKernel>& backward_key,
                      const char* node_name, const Tensor& x, int dim) {
  check_floating(key.name(), x);
  const RowLayout L = row_layout(key.name(), x, dim);
  Tensor y_rows = empty({L.rows, L.cols}, x.options());
  dispatch(key, x.device(), to_rows(x, L), y_rows);
  Tensor out = from_rows(y_rows, L);
  if (needs_grad({x}))
    attach_grad_fn(out, node_name, {x}, [y_rows, L, &backward_key](const Tensor& g) {
      Tensor grad_rows = empty(y_rows.shape(), y_rows.options());
      dispatch(backward_key, g.device(), y_rows, to_rows(g, L), grad_rows);
      return InputGradients{from_rows(grad_rows, L)};
    });
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, int dim) {
  return softmax_family(keys::softmax, keys::softmax_backward, "SoftmaxBackward", x, dim);
}

Tensor log_softmax(const Tensor& x, int dim) {
  return softmax_family(keys::log_softmax, keys::log_softmax_backward, "LogSoftmaxBackward", x, dim);
}

}  // namespace minidl
