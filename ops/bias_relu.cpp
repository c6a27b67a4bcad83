// ops/bias_relu.cpp — bias_relu: the bias add and ReLU after a linear or convolution layer, fused.
//
//   y [d_0, ..., d_{k-1}], bias [C] with C = d_dim, seen as [outer, C, inner]:
//     out = relu(y + bias)      outer = d_0 ... d_{dim-1},   inner = d_{dim+1} ... d_{k-1}
//   grad_y = g * [out > 0]      grad_bias[c] = sum over (o, i) of grad_y[o, c, i]
//
// Unfused, the same layer costs four passes over the output: add (read y, write z), relu (read z, write
// out), relu_backward (read g and z, write grad) and a sum over the rows of that gradient. Fused it is
// two: "bias_relu" reads y once and writes out, and "bias_relu.backward" reads g and out once, writing
// grad_y and adding up grad_bias on the way. The mask comes from out instead of z: relu(z) > 0 exactly
// where z > 0, so nothing else needs to be kept.
//
// A channels-last y [N, C, H, W] with dim 1 (core/memory_format.h) is rows [N*H*W, C] in memory: the
// kernels get it as [outer = N*H*W, C, inner = 1], in place, and the output comes back channels-last.
#include "core/dispatch.h"
#include "core/memory_format.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

Tensor bias_relu(const Tensor& y, const Tensor& bias, int dim) {
  check_floating("bias_relu", y);
  check_floating("bias_relu", bias);
  check_same_device("bias_relu", {y, bias});
  check_same_dtype("bias_relu", {y, bias});
  MINIDL_CHECK(y.dim() >= 1, "bias_relu: the input needs at least one dimension, got a scalar");
  const int d = normalize_dim("bias_relu", dim, y.dim());
  const Shape& s = y.shape();
  const int64_t channels = s[static_cast<size_t>(d)];
  MINIDL_CHECK(bias.dim() == 1 && bias.shape()[0] == channels, "bias_relu: bias of shape ", shape_str(bias.shape()),
               " does not match dimension ", d, " of the input ", shape_str(s), " (expected [", channels, "])");
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < d; ++i) outer *= s[static_cast<size_t>(i)];
  for (int i = d + 1; i < y.dim(); ++i) inner *= s[static_cast<size_t>(i)];

  const bool nhwc = d == 1 && suggest_memory_format(y) == MemoryFormat::channels_last;
  if (nhwc) outer *= inner, inner = 1;
  // The kernels' [outer, C, inner] view of a tensor of y's shape, and back to y's shape and format.
  auto as_rows = [nhwc, outer, channels, inner](const Tensor& t) {
    return (nhwc ? nhwc_view(t) : t).contiguous().view({outer, channels, inner});
  };
  auto as_y = [nhwc, s](const Tensor& t3) { return nhwc ? nchw_view(t3.view({s[0], s[2], s[3], s[1]})) : t3.view(s); };
  const Tensor y3 = as_rows(y.detach());
  const Tensor b = bias.detach().contiguous();
  Tensor out3 = empty({outer, channels, inner}, y.options());
  dispatch(keys::bias_relu, y.device(), y3, b, out3);
  Tensor out = as_y(out3);

  if (needs_grad({y, bias})) {
    attach_grad_fn(out, "BiasReluBackward", {y, bias}, [saved_out = out3.detach(), as_rows, as_y](const Tensor& g) {
      const Tensor g3 = as_rows(g);
      Tensor grad_y = empty(saved_out.shape(), g3.options());
      Tensor grad_bias = empty({saved_out.shape()[1]}, g3.options());
      dispatch(keys::bias_relu_backward, g3.device(), g3, saved_out, grad_y, grad_bias);
      return InputGradients{as_y(grad_y), grad_bias};
    });
  }
  return out;
}

}  // namespace minidl
