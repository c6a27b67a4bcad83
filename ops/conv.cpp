// ops/conv.cpp — conv2d: 2-D cross-correlation with optional bias, on the kernel keys "conv2d",
// "conv2d.backward_input" and "conv2d.backward_weight" (math and layouts in ops/kernel_signatures.h).
//   x [N, C, H, W], w [O, C, KH, KW], bias [O]  ->  y [N, O, OH, OW],  OH = (H + 2*ph - KH) / sh + 1
//   y = conv(x, w) + bias[o]
// Gradients (one fused node), with g = dL/dy:
//   dx = conv2d.backward_input(g, w)     dw = conv2d.backward_weight(x, g)     dbias[o] = sum_{n,p,q} g[n,o,p,q]
// Stages whose input needs no gradient are skipped (the first layer never computes dx).
//
// Memory format (core/memory_format.h): a channels-last x gives a channels-last y. Its stages go to the
// kernels declared to serve channels-last activations (cuDNN's NHWC descriptors); where a device has
// none, or they decline, the stage runs on NCHW copies and its output is copied back (the "copy" rows of
// MINIDL_PROFILE show it). The weight and its gradient are always [O, C, KH, KW] contiguous.
//
// bfloat16 activations (ops/bfloat16_widening.h): a bfloat16 x gives a bfloat16 y. A float32
// weight is cast to bfloat16 for the call by the op cast (so its gradient comes back float32, rounded once
// through bfloat16 as under PyTorch's autocast), and a bias is added in float32 to the widened output. A
// stage no kernel serves in bfloat16 runs on float32 copies (ops/bfloat16_widening.h).
#include "core/dispatch.h"
#include "core/memory_format.h"
#include "ops/bfloat16_widening.h"
#include "ops/conv_stages.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

Tensor conv2d_forward_stage(Tensor& x, const Tensor& w, const Shape& y_shape, const Conv2dParams& p, bool nhwc) {
  Tensor y = empty_in_format(y_shape, x.options(), nhwc ? MemoryFormat::channels_last : MemoryFormat::contiguous);
  if (!nhwc || !dispatch_channels_last(keys::conv2d, x.device(), x, w, y, p)) {
    x = x.contiguous();
    Tensor yk = nhwc ? empty(y_shape, x.options()) : y;
    dispatch_widening_bf16(keys::conv2d, x.device(), x, w, yk, p);
    if (nhwc) copy_(y, yk);
  }
  return y;
}

Tensor conv2d_input_grad_stage(const Tensor& g, const Tensor& w, const Shape& x_shape, const Conv2dParams& p,
                               bool nhwc) {
  Tensor grad_x = empty_in_format(x_shape, g.options(), nhwc ? MemoryFormat::channels_last : MemoryFormat::contiguous);
  if (!nhwc || !dispatch_channels_last(keys::conv2d_backward_input, g.device(), g, w, grad_x, p)) {
    grad_x = empty(x_shape, g.options());
    dispatch_widening_bf16(keys::conv2d_backward_input, g.device(), g.contiguous(), w, grad_x, p);
  }
  return grad_x;
}

Tensor conv2d_weight_grad_stage(const Tensor& x, const Tensor& g, const Shape& w_shape, const Conv2dParams& p,
                                bool nhwc) {
  Tensor grad_w = empty(w_shape, g.options());
  if (!nhwc || !dispatch_channels_last(keys::conv2d_backward_weight, g.device(), x, g, grad_w, p))
    dispatch_widening_bf16(keys::conv2d_backward_weight, g.device(), x.contiguous(), g.contiguous(), grad_w, p);
  return grad_w;
}

Shape conv2d_checked_output_shape(const char* op, const Tensor& x, const Tensor& w, const Tensor& bias,
                                  const Conv2dParams& p, bool bfloat16_allowed) {
  if (bfloat16_allowed) {
    check_floating_or_bfloat16(op, x);
    check_floating_or_bfloat16(op, w);
  } else {
    check_floating(op, x);
    check_floating(op, w);
  }
  check_same_device(op, {x, w, bias});
  check_same_dtype(op, {x, w, bias});
  check_dim(op, x, 4, "[N, C, H, W] for the input");
  check_dim(op, w, 4, "[O, C, KH, KW] for the weight");
  // Sizes of at least 1, the same channels, strides of at least 1, padding of at least 0, the kernel
  // within the padded input (ops/op_checks.h).
  const Shape y_shape = conv2d_output_shape(x.shape(), w.shape(), p);
  if (bias.defined()) {
    check_floating(op, bias);
    MINIDL_CHECK(bias.dim() == 1 && bias.shape()[0] == y_shape[1], op, ": bias of shape ", shape_str(bias.shape()),
                 " does not match the weight ", shape_str(w.shape()), " (expected [", y_shape[1], "])");
  }
  return y_shape;
}

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p) {
  if (x.defined() && x.dtype() == DType::bfloat16 && w.defined() && is_floating(w.dtype())) {
    // bfloat16 activations, a float32 weight (and bias): the weight cast for the call, the bias added
    // in float32 (see the header comment).
    if (bias.defined()) {
      check_floating("conv2d", bias);
      MINIDL_CHECK(bias.dim() == 1 && w.dim() >= 1 && bias.shape()[0] == w.shape()[0], "conv2d: bias of shape ",
                   shape_str(bias.shape()), " does not match the weight ", shape_str(w.shape()));
    }
    const Tensor y = conv2d(x, cast(w, DType::bfloat16), Tensor(), p);
    if (!bias.defined()) return y;
    return cast(add(cast(y, bias.dtype()), bias.view({1, bias.numel(), 1, 1})), DType::bfloat16);
  }
  const Shape y_shape = conv2d_checked_output_shape("conv2d", x, w, bias, p, true);
  const int64_t n = y_shape[0], o = y_shape[1], oh = y_shape[2], ow = y_shape[3];

  const bool nhwc = suggest_memory_format(x) == MemoryFormat::channels_last;
  const Tensor wc = w.detach().contiguous();
  Tensor xk = x.detach();  // x as the forward kernel read it: saved for the weight gradient
  Tensor y = conv2d_forward_stage(xk, wc, y_shape, p, nhwc);
  // The bias broadcast over [N, O, OH*OW] rather than [N, O, OH, OW]: the same sum, in far fewer and
  // longer rows for the elementwise kernels (channels-last: add keeps the format, in one dense pass).
  if (bias.defined())
    y = nhwc ? add(y, bias.detach().view({1, o, 1, 1}))
             : add(y.view({n, o, oh * ow}), bias.detach().view({1, o, 1})).view({n, o, oh, ow});

  if (needs_grad({x, w, bias})) {
    const bool need_x = x.requires_grad(), need_w = w.requires_grad();
    const bool need_b = bias.defined() && bias.requires_grad();
    // x is saved only when dw needs it, w only when dx does.
    attach_grad_fn(
        y, "Conv2dBackward", {x, w, bias},
        [saved_x = need_w ? xk : Tensor(), saved_w = need_x ? wc : Tensor(), x_shape = x.shape(), w_shape = w.shape(),
         p, nhwc, need_x, need_w, need_b](const Tensor& g) {
          const Tensor gk = copy_in_format(g, nhwc ? MemoryFormat::channels_last : MemoryFormat::contiguous);
          Tensor grad_x, grad_w, grad_b;
          if (need_x) grad_x = conv2d_input_grad_stage(gk, saved_w, x_shape, p, nhwc);
          if (need_w) grad_w = conv2d_weight_grad_stage(saved_x, gk, w_shape, p, nhwc);
          if (need_b) {
            // Each (n, o) plane summed first (contiguous rows), then the planes over n; channels-last: the
            // rows [N*OH*OW, O] summed over the rows.
            const Shape& s = gk.shape();
            grad_b = nhwc ? sum(nhwc_view(gk).view({s[0] * s[2] * s[3], s[1]}), {0})
                          : sum(sum(gk.view({s[0], s[1], s[2] * s[3]}), {2}), {0});
          }
          return InputGradients{grad_x, grad_w, grad_b};
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
