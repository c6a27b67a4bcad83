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

int64_t pool_output_size(const char* op, const char* axis, int64_t in, int kernel, int stride, int pad,
                         const Tensor& x) {
  MINIDL_CHECK(kernel > 0 && stride > 0, op, ": the window and stride must be positive, got window ", kernel,
               " and stride ", stride, " along ", axis);
  MINIDL_CHECK(pad >= 0 && 2 * pad <= kernel, op, ": padding ", pad, " along ", axis,
               " must be between 0 and half the window (", kernel, ")");
  const int64_t padded = in + 2 * static_cast<int64_t>(pad);
  MINIDL_CHECK(kernel <= padded, op, ": the window (", kernel, ") is larger than the padded input along ", axis, " (",
               padded, ") for input ", shape_str(x.shape()));
  return (padded - kernel) / stride + 1;
}

// Checks x and the parameters, returns an uninitialised output of the pooled shape.
Tensor pooled_output(const char* op, const Tensor& x, const Pool2dParams& p) {
  check_floating(op, x);
  check_dim(op, x, 4, "[N, C, H, W]");
  const int64_t oh = pool_output_size(op, "height", x.shape()[2], p.kernel_h, p.stride_h, p.pad_h, x);
  const int64_t ow = pool_output_size(op, "width", x.shape()[3], p.kernel_w, p.stride_w, p.pad_w, x);
  return empty({x.shape()[0], x.shape()[1], oh, ow}, x.options());
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
  dispatch<Pool2dKernel>("max_pool2d", x.device(), xc, y, p);
  if (needs_grad({x}))
    attach_grad_fn(y, "MaxPool2dBackward", {x}, [xc, yc = y.detach(), p](const Tensor& g) {
      Tensor grad_x = empty(xc.shape(), xc.options());
      dispatch<MaxPool2dBackwardKernel>("max_pool2d.backward", xc.device(), xc, yc, g.contiguous(), grad_x, p);
      return grads{grad_x};
    });
  return y;
}

Tensor avg_pool2d(const Tensor& x, const Pool2dParams& p) {
  Tensor y = pooled_output("avg_pool2d", x, p);
  dispatch<Pool2dKernel>("avg_pool2d", x.device(), x.detach().contiguous(), y, p);
  if (needs_grad({x}))
    attach_grad_fn(y, "AvgPool2dBackward", {x}, [x_shape = x.shape(), p](const Tensor& g) {
      Tensor grad_x = empty(x_shape, g.options());
      dispatch<AvgPool2dBackwardKernel>("avg_pool2d.backward", g.device(), g.contiguous(), grad_x, p);
      return grads{grad_x};
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
