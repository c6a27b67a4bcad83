// ops/op_checks.cpp — the argument checks of ops/op_checks.h.
#include "ops/op_checks.h"

namespace minidl {

void check_floating(const char* op, const Tensor& t) {
  MINIDL_CHECK(t.defined(), op, ": got an undefined tensor");
  MINIDL_CHECK(is_floating(t.dtype()), op, ": needs a float32 or float64 tensor, got ", dtype_name(t.dtype()),
               " of shape ", shape_str(t.shape()));
}

void check_floating_or_bfloat16(const char* op, const Tensor& t) {
  MINIDL_CHECK(t.defined(), op, ": got an undefined tensor");
  MINIDL_CHECK(is_floating(t.dtype()) || t.dtype() == DType::bfloat16, op,
               ": needs a float32, float64 or bfloat16 tensor, got ", dtype_name(t.dtype()), " of shape ",
               shape_str(t.shape()));
}

void check_same_device(const char* op, const std::vector<Tensor>& tensors) {
  const Tensor* first = nullptr;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    if (!first) {
      first = &t;
      continue;
    }
    MINIDL_CHECK(t.device() == first->device(), op, ": tensors on different devices (", first->device().str(),
                 " and ", t.device().str(), "); move them with .to(device) first");
  }
}

void check_same_dtype(const char* op, const std::vector<Tensor>& tensors) {
  const Tensor* first = nullptr;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    if (!first) {
      first = &t;
      continue;
    }
    MINIDL_CHECK(t.dtype() == first->dtype(), op, ": dtypes differ (", dtype_name(first->dtype()), " and ",
                 dtype_name(t.dtype()), "); convert with .to(dtype) first");
  }
}

void check_dim(const char* op, const Tensor& t, int dims, const char* what) {
  MINIDL_CHECK(t.dim() == dims, op, ": expected a ", dims, "-D tensor ", what, ", got shape ",
               shape_str(t.shape()));
}

int normalize_dim(const char* op, int dim, int ndim) {
  const int d = dim < 0 ? dim + ndim : dim;
  MINIDL_CHECK(d >= 0 && d < ndim, op, ": dim ", dim, " out of range for a ", ndim, "-D tensor");
  return d;
}

int64_t check_sizes(const char* op, const Shape& shape, const char* what) {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    MINIDL_CHECK(shape[i] >= 1, op, ": ", what, " ", shape_str(shape), " has size ", shape[i], " in dim ", i,
                 "; every size must be at least 1");
    MINIDL_CHECK(n <= kMaxNumel / shape[i], op, ": ", what, " ", shape_str(shape), " has more than 2^58 (",
                 kMaxNumel, ") elements");
    n *= shape[i];
  }
  return n;
}

namespace {

// conv2d's OUT = (in + 2*pad - kernel) / stride + 1 along one axis. The int arguments are widened first:
// in + 2*pad cannot overflow an int64.
int64_t conv_output_size(const char* axis, int64_t in, int64_t kernel, int64_t stride, int64_t pad, const Shape& x,
                         const Shape& w) {
  MINIDL_CHECK(stride >= 1, "conv2d: stride ", stride, " along ", axis, " must be at least 1");
  MINIDL_CHECK(pad >= 0, "conv2d: padding ", pad, " along ", axis, " must be at least 0");
  const int64_t padded = in + 2 * pad;
  MINIDL_CHECK(kernel <= padded, "conv2d: the kernel ", shape_str(w), " is larger than the padded input along ", axis,
               " (", kernel, " > ", padded, " = ", in, " + 2*", pad, ") for input ", shape_str(x));
  return (padded - kernel) / stride + 1;
}

// Pooling's OUT along one axis; padding at most half the window, so every window holds a real element.
int64_t pool_output_size(const char* op, const char* axis, int64_t in, int64_t window, int64_t stride, int64_t pad,
                         const Shape& x) {
  MINIDL_CHECK(window >= 1, op, ": window ", window, " along ", axis, " must be at least 1");
  MINIDL_CHECK(stride >= 1, op, ": stride ", stride, " along ", axis, " must be at least 1");
  MINIDL_CHECK(pad >= 0 && 2 * pad <= window, op, ": padding ", pad, " along ", axis,
               " must be between 0 and half the window (", window, ")");
  const int64_t padded = in + 2 * pad;
  MINIDL_CHECK(window <= padded, op, ": the window (", window, ") is larger than the padded input along ", axis, " (",
               padded, ") for input ", shape_str(x));
  return (padded - window) / stride + 1;
}

}  // namespace

Shape conv2d_output_shape(const Shape& x, const Shape& w, const Conv2dParams& p) {
  MINIDL_CHECK(x.size() == 4, "conv2d: expected an input [N, C, H, W], got ", shape_str(x));
  MINIDL_CHECK(w.size() == 4, "conv2d: expected a weight [O, C, KH, KW], got ", shape_str(w));
  check_sizes("conv2d", x, "the input");
  check_sizes("conv2d", w, "the weight");
  MINIDL_CHECK(w[1] == x[1], "conv2d: the input ", shape_str(x), " has ", x[1], " channels but the weight ",
               shape_str(w), " expects ", w[1]);
  const Shape y = {x[0], w[0], conv_output_size("height", x[2], w[2], p.stride_h, p.pad_h, x, w),
                   conv_output_size("width", x[3], w[3], p.stride_w, p.pad_w, x, w)};
  check_sizes("conv2d", y, "the output");
  return y;
}

Shape pool2d_output_shape(const char* op, const Shape& x, const Pool2dParams& p) {
  MINIDL_CHECK(x.size() == 4, op, ": expected an input [N, C, H, W], got ", shape_str(x));
  check_sizes(op, x, "the input");
  return {x[0], x[1], pool_output_size(op, "height", x[2], p.kernel_h, p.stride_h, p.pad_h, x),
          pool_output_size(op, "width", x[3], p.kernel_w, p.stride_w, p.pad_w, x)};
}

}  // namespace minidl
