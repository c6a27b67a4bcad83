// ops/pool.cpp — max_pool2d and avg_pool2d on the kernel keys "max_pool2d", "max_pool2d.backward",
// "avg_pool2d", "avg_pool2d.backward" (exact rules in ops/kernel_signatures.h).
//   x [N, C, H, W] -> y [N, C, OH, OW],  OH = (H + 2*ph - KH) / sh + 1  (likewise OW)
//   max: y = max over the window (padding never wins)
//        dx: each window's g goes to the first position (row-major in the window) where x equals y;
//            positions that win several overlapping windows sum their gradients
//   avg: y = sum over the window / (KH*KW)  (padding counts as zeros and is included in the count)
//        dx[pos] = sum over the windows containing pos of g / (KH*KW)
// Padding is at most half the window (as in PyTorch), so every window holds at least one real element.
//
// Memory format (core/memory_format.h): a channels-last x gives a channels-last y, computed by a kernel
// declared to serve channels-last tensors (cuDNN's NHWC descriptors) where the device has one; elsewhere
// the stage runs on NCHW copies and its output is copied back (the "copy" rows of MINIDL_PROFILE).
//
// bfloat16 activations (ops/bfloat16_widening.h): a bfloat16 x gives a bfloat16 y; a stage no kernel serves in
// bfloat16 runs on float32 copies (ops/bfloat16_widening.h). Max and average are exact on the widened
// values, so only the average's division rounds.
#include <utility>

#include "core/dispatch.h"
#include "core/memory_format.h"
#include "ops/bfloat16_widening.h"
#include "ops/op_checks.h"
#include "ops/ops.h"
#include "ops/pool_stages.h"

namespace minidl {

namespace {

// Checks x and the parameters, returns an uninitialised output of the pooled shape in x's format.
Tensor pooled_output(const char* op, const Tensor& x, const Pool2dParams& p) {
  check_floating_or_bfloat16(op, x);
  check_dim(op, x, 4, "[N, C, H, W]");
  // Sizes, window and stride of at least 1, padding within half the window (ops/op_checks.h).
  return empty_in_format(pool2d_output_shape(op, x.shape(), p), x.options(), suggest_memory_format(x));
}

bool is_nhwc(const Tensor& t) { return suggest_memory_format(t) == MemoryFormat::channels_last; }

Pool2dParams square(int kernel, int stride, int padding) {
  Pool2dParams p;
  p.kernel_h = p.kernel_w = kernel;
  p.stride_h = p.stride_w = stride == -1 ? kernel : stride;
  p.pad_h = p.pad_w = padding;
  return p;
}

// Runs a forward key on x into y (y in x's format): channels-last kernels first for a channels-last x,
// else on NCHW copies, y written back. Returns x and y as the kernel read and wrote them.
std::pair<Tensor, Tensor> pool_forward(const KernelKey<Pool2dKernel>& key, const Tensor& x, Tensor& y,
                                       const Pool2dParams& p) {
  if (is_nhwc(x) && dispatch_channels_last(key, x.device(), x, y, p)) return {x, y};
  const Tensor xc = x.contiguous();
  Tensor yc = y.is_contiguous() ? y : empty(y.shape(), y.options());
  dispatch_widening_bf16(key, x.device(), xc, yc, p);
  if (!yc.shares_storage_with(y)) copy_(y, yc);
  return {xc, yc};
}

}  // namespace

std::pair<Tensor, Tensor> max_pool2d_forward_stage(const Tensor& x, Tensor& y, const Pool2dParams& p) {
  return pool_forward(keys::max_pool2d, x, y, p);
}

Tensor max_pool2d_input_grad_stage(const Tensor& x, const Tensor& y, const Tensor& g, const Pool2dParams& p) {
  if (is_nhwc(x) && is_nhwc(y)) {
    Tensor grad_x = empty_channels_last(x.shape(), g.options());
    const Tensor gk = copy_in_format(g, MemoryFormat::channels_last);
    if (dispatch_channels_last(keys::max_pool2d_backward, x.device(), x, y, gk, grad_x, p)) return grad_x;
  }
  Tensor grad_x = empty(x.shape(), x.options());
  dispatch_widening_bf16(keys::max_pool2d_backward, x.device(), x.contiguous(), y.contiguous(), g.contiguous(),
                         grad_x, p);
  return grad_x;
}

Tensor max_pool2d(const Tensor& x, const Pool2dParams& p) {
  Tensor y = pooled_output("max_pool2d", x, p);
  const std::pair<Tensor, Tensor> read_written = max_pool2d_forward_stage(x.detach(), y, p);
  if (needs_grad({x}))
    attach_grad_fn(y, "MaxPool2dBackward", {x},
                   [xk = read_written.first, yk = read_written.second.detach(), p](const Tensor& g) {
                     return InputGradients{max_pool2d_input_grad_stage(xk, yk, g, p)};
                   });
  return y;
}

Tensor avg_pool2d(const Tensor& x, const Pool2dParams& p) {
  Tensor y = pooled_output("avg_pool2d", x, p);
  const bool nhwc = is_nhwc(x);
  pool_forward(keys::avg_pool2d, x.detach(), y, p);
  if (needs_grad({x}))
    attach_grad_fn(y, "AvgPool2dBackward", {x}, [x_shape = x.shape(), nhwc, p](const Tensor& g) {
      if (nhwc) {
        Tensor grad_x = empty_channels_last(x_shape, g.options());
        const Tensor gk = copy_in_format(g, MemoryFormat::channels_last);
        if (dispatch_channels_last(keys::avg_pool2d_backward, g.device(), gk, grad_x, p)) return InputGradients{grad_x};
      }
      Tensor grad_x = empty(x_shape, g.options());
      dispatch_widening_bf16(keys::avg_pool2d_backward, g.device(), g.contiguous(), grad_x, p);
      return InputGradients{grad_x};
    });
  return y;
}

Tensor max_pool2d(const Tensor& x, int kernel, int stride, int padding) {
  return max_pool2d(x, square(kernel, stride, padding));
}

Tensor avg_pool2d(const Tensor& x, int kernel, int stride, int padding) {
  return avg_pool2d(x, square(kernel, stride, padding));
}

}  // namespace minidl
