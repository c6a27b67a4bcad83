// ops/conv_bias_relu.cpp — conv2d_bias_relu: a convolution with its bias add and ReLU in one forward call;
// conv2d_bias_relu_max_pool2d: the same followed by max pooling, with one backward for the three.
//
//   x [N, C, H, W], w [O, C, KH, KW], bias [O]:   y = relu(conv(x, w) + bias[o])
//   with g = dL/dy and z the pre-activation:      dL/dz = g * [y > 0]      dbias[o] = sum_{n,p,q} dL/dz[n,o,p,q]
//                                                 dx, dw = conv2d's backward stages applied to dL/dz
//
// Why a fused key. After a convolution, conv2d then bias_relu (ops/bias_relu.cpp) is two launches and two
// passes over y: the convolution writes it, bias_relu reads it back and writes it again. cuDNN's graph API
// can add the bias and apply the ReLU in the convolution's epilogue, as each output tile leaves the
// registers (cuda/conv_bias_relu_cudnn_graph.cu). What it saved on an H100: docs/results/README.md,
// "Issue 26, round 9".
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
//
// Then max pooling: out = max_pool2d(y). Unfused, the pool's backward scatters each window's g to the
// window's maximum (a full-size tensor, zero elsewhere) and bias_relu.backward reads that and y again to
// apply the mask. But y >= 0, and where the window's maximum sits, y equals out; so the mask there is
// [out > 0], known on the pooled grid:
//
//   g' = g * [out > 0],   dbias[o] = sum_{n,p,q} g'[n,o,p,q]   (pooled grid: a quarter of y's for 2x2 windows)
//   dL/dz = max_pool2d's backward applied to g'                (scattered to the same maxima, the same values)
//
// The same dL/dz as unfused, and the same bias gradient up to the order of its sum, with two full-size
// passes fewer (bias_relu.backward's read of the scattered gradient and of y, on the full grid; measured
// in docs/results/README.md, "Issue 26, round 9"). Overlapping windows sum their g' at a shared maximum,
// as they sum g unfused: the mask is the same for each.
#include "core/dispatch.h"
#include "core/memory_format.h"
#include "ops/conv_stages.h"
#include "ops/op_checks.h"
#include "ops/ops.h"
#include "ops/pool_stages.h"

namespace minidl {

namespace {

// Whether the user chose a kernel for conv2d's forward on `device` (the op, or its forward stage), and
// none for conv2d_bias_relu: then the unfused path keeps that choice.
bool conv2d_forward_selected(DeviceType device) {
  const KernelRegistry& registry = KernelRegistry::instance();
  return registry.selected("conv2d_bias_relu", device).empty() &&
         (!registry.selected("conv2d", device).empty() || !registry.selected("conv2d.forward", device).empty());
}

// dL/dz = g * [y > 0] and dL/dbias = the sum of dL/dz over all but the channel axis, for a 4-D y
// [N, C, H, W] stored channels-last when `nhwc`, else NCHW: bias_relu.backward on its [outer, C, inner]
// rows ([N, C, H*W] NCHW, [N*H*W, C, 1] channels-last). dL/dz comes back in y's shape and format.
std::pair<Tensor, Tensor> relu_and_bias_grads(const Tensor& g, const Tensor& y, bool nhwc) {
  const Shape& s = y.shape();
  auto as_rows = [nhwc, &s](const Tensor& t) {
    return nhwc ? nhwc_view(t).view({s[0] * s[2] * s[3], s[1], 1}) : t.view({s[0], s[1], s[2] * s[3]});
  };
  const Tensor gk = copy_in_format(g, nhwc ? MemoryFormat::channels_last : MemoryFormat::contiguous);
  const Tensor y3 = as_rows(y), g3 = as_rows(gk);
  Tensor grad_z3 = empty(y3.shape(), gk.options());
  Tensor grad_b = empty({s[1]}, gk.options());
  dispatch(keys::bias_relu_backward, gk.device(), g3, y3, grad_z3, grad_b);
  const Tensor grad_z = nhwc ? nchw_view(grad_z3.view({s[0], s[2], s[3], s[1]})) : grad_z3.view(s);
  return {grad_z, grad_b};
}

// What the convolution's backward keeps: x as its kernel read it (for dL/dw), w contiguous (for dL/dx),
// each only when that gradient is needed.
struct SavedConv {
  Tensor x, w;
  Shape x_shape, w_shape;
  Conv2dParams p;
  bool nhwc = false;
};

SavedConv save_conv(const Tensor& xk, const Tensor& wc, const Tensor& x, const Tensor& w, const Conv2dParams& p,
                    bool nhwc) {
  return SavedConv{w.requires_grad() ? xk : Tensor(), x.requires_grad() ? wc : Tensor(), x.shape(), w.shape(), p,
                   nhwc};
}

// The gradients of (x, w, bias) from dL/dz and dL/dbias: conv2d's two backward stages (ops/conv_stages.h).
InputGradients conv_grads(const SavedConv& c, const Tensor& grad_z, const Tensor& grad_b) {
  Tensor grad_x, grad_w;
  if (c.w.defined()) grad_x = conv2d_input_grad_stage(grad_z, c.w, c.x_shape, c.p, c.nhwc);
  if (c.x.defined()) grad_w = conv2d_weight_grad_stage(c.x, grad_z, c.w_shape, c.p, c.nhwc);
  return InputGradients{grad_x, grad_w, grad_b};
}

}  // namespace

Tensor conv2d_bias_relu(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p) {
  MINIDL_CHECK(bias.defined(), "conv2d_bias_relu: needs a bias (without one, use conv2d then relu)");
  const Shape y_shape = conv2d_checked_output_shape("conv2d_bias_relu", x, w, bias, p);
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

  if (needs_grad({x, w, bias}))
    attach_grad_fn(y, "Conv2dBiasReluBackward", {x, w, bias},
                   [saved_y = y.detach(), conv = save_conv(xk, wc, x, w, p, nhwc)](const Tensor& g) {
                     const std::pair<Tensor, Tensor> grads = relu_and_bias_grads(g, saved_y, conv.nhwc);
                     return conv_grads(conv, grads.first, grads.second);
                   });
  return y;
}

Tensor conv2d_bias_relu_max_pool2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p,
                                   const Pool2dParams& pool) {
  // The forward: conv2d_bias_relu (fused where a kernel serves it; it checks the arguments) and the pool,
  // both without autograd history: the one backward below covers the two.
  const Tensor y = conv2d_bias_relu(x.detach(), w.detach(), bias.detach(), p);
  Tensor out = empty_in_format(pool2d_output_shape("conv2d_bias_relu_max_pool2d", y.shape(), pool), y.options(),
                               suggest_memory_format(y));
  const std::pair<Tensor, Tensor> pool_read_written = max_pool2d_forward_stage(y, out, pool);
  if (needs_grad({x, w, bias})) {
    const bool nhwc = suggest_memory_format(x) == MemoryFormat::channels_last;
    const Tensor xk = nhwc ? x.detach() : x.detach().contiguous(), wc = w.detach().contiguous();
    attach_grad_fn(out, "Conv2dBiasReluMaxPool2dBackward", {x, w, bias},
                   [y_read = pool_read_written.first, out_written = pool_read_written.second.detach(), pool,
                    conv = save_conv(xk, wc, x, w, p, nhwc)](const Tensor& g) {
                     // Mask and bias gradient on the pooled grid, then the scatter to the window maxima.
                     const bool out_nhwc = suggest_memory_format(out_written) == MemoryFormat::channels_last;
                     const std::pair<Tensor, Tensor> pooled = relu_and_bias_grads(g, out_written, out_nhwc);
                     const Tensor grad_z = copy_in_format(
                         max_pool2d_input_grad_stage(y_read, out_written, pooled.first, pool),
                         conv.nhwc ? MemoryFormat::channels_last : MemoryFormat::contiguous);
                     return conv_grads(conv, grad_z, pooled.second);
                   });
  }
  return out;
}

}  // namespace minidl
