// ops/pool.cpp — max_pool2d and avg_pool2d on the kernel keys "max_pool2d", "max_pool2d.backward",
// "avg_pool2d", "avg_pool2d.backward" (exact rules in ops/kernel_signatures.h).
//   x [N, C, H, W] -> y [N, C, OH, OW],  OH = (H + 2*ph - KH) / sh + 1  (likewise OW)
//   max: y = max over the window (padding never wins)
//        dx: each window's g goes to the first position (row-major in the window) where x equals y;
//            positions that win several overlapping windows sum their gradients
//   avg: y = sum over the window / (KH*KW)  (padding counts as zeros and is included in the count)
//        dx[pos] = sum over the windows containing pos of g / (KH*KW)
// Padding is at most half the window (as in PyTorch), so every window holds at least one real element.
#include "core/dispatch.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

namespace {

// Checks x and the parameters, returns an uninitialised output of the pooled shape.
Tensor pooled_output(const char* op, const Tensor& x, const Pool2dParams& p) {
  check_floating(op, x);
  check_dim(op, x, 4, "[N, C, H, W]");
  // Sizes, window and stride of at least 1, padding within half the window (ops/op_checks.h).
  return empty(pool2d_output_shape(op, x.shape(), p), x.options());
}

Pool2dParams square(int kernel, int stride, int padding) {
  Pool2dParams p;
  p.kernel_h = p.kernel_w = kernel;
  p.stride_h = p.stride_w = stride == -1 ? kernel : stride;
  p.pad_h = p.pad_w = padding;
  return p;
}

}  // namespace

Tensor max_pool2d(const Tensor& x, const Pool2dParams& p) {
  Tensor y = pooled_output("max_pool2d", x, p);
  const Tensor xc = x.detach().contiguous();
  dispatch(keys::max_pool2d, x.device(), xc, y, p);
  if (needs_grad({x}))
    attach_grad_fn(y, "MaxPool2dBackward", {x}, [xc, yc = y.detach(), p](const Tensor& g) {
      Tensor grad_x = empty(xc.shape(), xc.options());
      dispatch(keys::max_pool2d_backward, xc.device(), xc, yc, g.contiguous(), grad_x, p);
      return InputGradients{grad_x};
    });
  return y;
}

Tensor avg_pool2d(const Tensor& x, const Pool2dParams& p) {
  Tensor y = pooled_output("avg_pool2d", x, p);
  dispatch(keys::avg_pool2d, x.device(), x.detach().contiguous(), y, p);
  if (needs_grad({x}))
    attach_grad_fn(y, "AvgPool2dBackward", {x}, [x_shape = x.shape(), p](const Tensor& g) {
      Tensor grad_x = empty(x_shape, g.options());
      dispatch(keys::avg_pool2d_backward, g.device(), g.contiguous(), grad_x, p);
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
