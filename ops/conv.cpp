// ops/conv.cpp — conv2d: 2-D cross-correlation with optional bias, on the kernel keys "conv2d",
// "conv2d.backward_input" and "conv2d.backward_weight" (math and layouts in ops/kernel_signatures.h).
//   x [N, C, H, W], w [O, C, KH, KW], bias [O]  ->  y [N, O, OH, OW],  OH = (H + 2*ph - KH) / sh + 1
//   y = conv(x, w) + bias[o]
// Gradients (one fused node), with g = dL/dy:
//   dx = conv2d.backward_input(g, w)     dw = conv2d.backward_weight(x, g)     dbias[o] = sum_{n,p,q} g[n,o,p,q]
// Stages whose input needs no gradient are skipped (the first layer never computes dx).
#include "core/dispatch.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

namespace {

// The output size along one axis, with the checks that make it positive.
int64_t conv_output_size(const char* axis, int64_t in, int64_t kernel, int stride, int pad, const Tensor& x,
                         const Tensor& w) {
  const int64_t padded = in + 2 * static_cast<int64_t>(pad);
  MINIDL_CHECK(kernel <= padded, "conv2d: the kernel ", shape_str(w.shape()), " is larger than the padded input along ",
               axis, " (", kernel, " > ", padded, " = ", in, " + 2*", pad, ") for input ", shape_str(x.shape()));
  return (padded - kernel) / stride + 1;
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p) {
  check_floating("conv2d", x);
  check_floating("conv2d", w);
  check_same_device("conv2d", {x, w, bias});
  check_same_dtype("conv2d", {x, w, bias});
  check_dim("conv2d", x, 4, "[N, C, H, W] for the input");
  check_dim("conv2d", w, 4, "[O, C, KH, KW] for the weight");
  MINIDL_CHECK(p.stride_h > 0 && p.stride_w > 0, "conv2d: strides must be positive, got ", p.stride_h, "x", p.stride_w);
  MINIDL_CHECK(p.pad_h >= 0 && p.pad_w >= 0, "conv2d: padding must be non-negative, got ", p.pad_h, "x", p.pad_w);
  const int64_t n = x.shape()[0], c = x.shape()[1], o = w.shape()[0];
  MINIDL_CHECK(w.shape()[1] == c, "conv2d: the input ", shape_str(x.shape()), " has ", c, " channels but the weight ",
               shape_str(w.shape()), " expects ", w.shape()[1]);
  if (bias.defined()) {
    check_floating("conv2d", bias);
    MINIDL_CHECK(bias.dim() == 1 && bias.shape()[0] == o, "conv2d: bias of shape ", shape_str(bias.shape()),
                 " does not match the weight ", shape_str(w.shape()), " (expected [", o, "])");
  }
  const int64_t oh = conv_output_size("height", x.shape()[2], w.shape()[2], p.stride_h, p.pad_h, x, w);
  const int64_t ow = conv_output_size("width", x.shape()[3], w.shape()[3], p.stride_w, p.pad_w, x, w);

  const Tensor xc = x.detach().contiguous(), wc = w.detach().contiguous();
  Tensor y = empty({n, o, oh, ow}, x.options());
  dispatch<Conv2dKernel>("conv2d", x.device(), xc, wc, y, p);
  // The bias broadcast over [N, O, OH*OW] rather than [N, O, OH, OW]: the same sum, in far fewer and
  // longer rows for the elementwise kernels.
  if (bias.defined()) y = add(y.view({n, o, oh * ow}), bias.detach().view({1, o, 1})).view({n, o, oh, ow});

  if (needs_grad({x, w, bias})) {
    const bool need_x = x.requires_grad(), need_w = w.requires_grad();
    const bool need_b = bias.defined() && bias.requires_grad();
    // x is saved only when dw needs it, w only when dx does.
    attach_grad_fn(
        y, "Conv2dBackward", {x, w, bias},
        [saved_x = need_w ? xc : Tensor(), saved_w = need_x ? wc : Tensor(), x_shape = x.shape(), w_shape = w.shape(),
         p, need_x, need_w, need_b](const Tensor& g) {
          const Tensor gc = g.contiguous();
          Tensor grad_x, grad_w, grad_b;
          if (need_x) {
            grad_x = empty(x_shape, gc.options());
            dispatch<Conv2dBackwardInputKernel>("conv2d.backward_input", gc.device(), gc, saved_w, grad_x, p);
          }
          if (need_w) {
            grad_w = empty(w_shape, gc.options());
            dispatch<Conv2dBackwardWeightKernel>("conv2d.backward_weight", gc.device(), saved_x, gc, grad_w, p);
          }
          if (need_b) {
            // Each (n, o) plane summed first (contiguous rows), then the planes over n.
            const Shape& s = gc.shape();
            grad_b = sum(sum(gc.view({s[0], s[1], s[2] * s[3]}), {2}), {0});
          }
          return grads{grad_x, grad_w, grad_b};
        });
  }
  return y;
}

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, int stride, int padding) {
  Conv2dParams p;
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = padding;
  return conv2d(x, w, bias, p);
}

}  // namespace minidl
