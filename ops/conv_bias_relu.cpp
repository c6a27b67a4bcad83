// ops/conv_bias_relu.cpp — conv2d_bias_relu: a convolution with its bias add and ReLU in one forward call.
//
//   x [N, C, H, W], w [O, C, KH, KW], bias [O]:   y = relu(conv(x, w) + bias[o])
//   with g = dL/dy and z the pre-activation:      dL/dz = g * [y > 0]      dbias[o] = sum_{n,p,q} dL/dz[n,o,p,q]
//                                                 dx, dw = conv2d's backward stages applied to dL/dz
//
// Why a fused key. After a convolution, conv2d then bias_relu (ops/bias_relu.cpp) is two launches and two
// passes over y: the convolution writes it, bias_relu reads it back and writes it again. cuDNN's graph API
// can add the bias and apply the ReLU in the convolution's epilogue, as each output tile leaves the
// registers (cuda/conv_bias_relu_cudnn_graph.cu). What it saved on an H100: docs/results/README.md,
// "Issue 26, round 8".
//
// The backward is the unfused one: bias_relu.backward reads g and y once (the mask y > 0 is the mask
// z > 0) and writes dL/dz and dbias; conv2d's two stages (ops/conv_stages.h) take it from there.
//
// Which path runs. The forward offers the call to the key's kernels (dispatch_fused, core/dispatch.h):
// those above the reference level, or the reference "naive" when selected by name. When none accepts
// (a device without a fused kernel, a shape or precision its kernel declines), or when the user selected
// a conv2d kernel (--kernel conv2d=...: the fused kernel would bypass that choice), it runs conv2d and
// then bias_relu, exactly as without the fusion. Either way the values are those of
// relu(conv2d(x, w) + bias) up to the rounding of the sums.
#include "core/dispatch.h"
#include "core/memory_format.h"
#include "ops/conv_stages.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

namespace {

// Whether the user chose a kernel for conv2d's forward on `device` (the op, or its forward stage), and
// none for conv2d_bias_relu: then the unfused path keeps that choice.
bool conv2d_forward_selected(DeviceType device) {
  const KernelRegistry& registry = KernelRegistry::instance();
  return registry.selected("conv2d_bias_relu", device).empty() &&
         (!registry.selected("conv2d", device).empty() || !registry.selected("conv2d.forward", device).empty());
}

}  // namespace

Tensor conv2d_bias_relu(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p) {
  MINIDL_CHECK(bias.defined(), "conv2d_bias_relu: needs a bias (without one, use conv2d then relu)");
  check_floating("conv2d_bias_relu", x);
  check_floating("conv2d_bias_relu", w);
  check_floating("conv2d_bias_relu", bias);
  check_same_device("conv2d_bias_relu", {x, w, bias});
  check_same_dtype("conv2d_bias_relu", {x, w, bias});
  check_dim("conv2d_bias_relu", x, 4, "[N, C, H, W] for the input");
  check_dim("conv2d_bias_relu", w, 4, "[O, C, KH, KW] for the weight");
  const Shape y_shape = conv2d_output_shape(x.shape(), w.shape(), p);
  const int64_t o = y_shape[1];
  MINIDL_CHECK(bias.dim() == 1 && bias.shape()[0] == o, "conv2d_bias_relu: bias of shape ", shape_str(bias.shape()),
               " does not match the weight ", shape_str(w.shape()), " (expected [", o, "])");
  if (conv2d_forward_selected(x.device().type)) return bias_relu(conv2d(x, w, Tensor(), p), bias, 1);

  const bool nhwc = suggest_memory_format(x) == MemoryFormat::channels_last;
  const MemoryFormat format = nhwc ? MemoryFormat::channels_last : MemoryFormat::contiguous;
  const Tensor wc = w.detach().contiguous(), b = bias.detach().contiguous();
  // x as the kernel reads it (saved for the weight gradient): channels-last as given, else contiguous.
  const Tensor xk = nhwc ? x.detach() : x.detach().contiguous();
  Tensor y = empty_in_format(y_shape, x.options(), format);
  const bool fused = nhwc ? dispatch_channels_last(keys::conv2d_bias_relu, x.device(), xk, wc, b, y, p)
                          : dispatch_fused(keys::conv2d_bias_relu, x.device(), xk, wc, b, y, p);
  if (!fused) return bias_relu(conv2d(x, w, Tensor(), p), bias, 1);

  if (needs_grad({x, w, bias})) {
    const bool need_x = x.requires_grad(), need_w = w.requires_grad();
    attach_grad_fn(
        y, "Conv2dBiasReluBackward", {x, w, bias},
        [saved_y = y.detach(), saved_x = need_w ? xk : Tensor(), saved_w = need_x ? wc : Tensor(), x_shape = x.shape(),
         w_shape = w.shape(), p, nhwc, format, need_x, need_w](const Tensor& g) {
          const Shape& s = saved_y.shape();
          // bias_relu.backward's [outer, O, inner] rows: [N, O, OH*OW] in NCHW, [N*OH*OW, O, 1] channels-last.
          auto as_rows = [nhwc, &s](const Tensor& t) {
            return nhwc ? nhwc_view(t).view({s[0] * s[2] * s[3], s[1], 1}) : t.view({s[0], s[1], s[2] * s[3]});
          };
          const Tensor gk = copy_in_format(g, format);
          const Tensor y3 = as_rows(saved_y), g3 = as_rows(gk);
          Tensor grad_z3 = empty(y3.shape(), gk.options());
          Tensor grad_b = empty({s[1]}, gk.options());
          dispatch(keys::bias_relu_backward, gk.device(), g3, y3, grad_z3, grad_b);
          const Tensor grad_z = nhwc ? nchw_view(grad_z3.view({s[0], s[2], s[3], s[1]})) : grad_z3.view(s);
          Tensor grad_x, grad_w;
          if (need_x) grad_x = conv2d_input_grad_stage(grad_z, saved_w, x_shape, p, nhwc);
          if (need_w) grad_w = conv2d_weight_grad_stage(saved_x, grad_z, w_shape, p, nhwc);
          return InputGradients{grad_x, grad_w, grad_b};
        });
  }
  return y;
}

}  // namespace minidl
