// ops/cast.cpp — cast (ops/ops.h): a tensor's values in another floating dtype, recorded by autograd.
//   y = round_dtype(x)          dx = round_dtype_of_x(g)
// Rounding is not differentiable in the strict sense; as in every mixed-precision framework its gradient is
// taken as the identity's, and only the gradient's dtype changes: g (in y's dtype) is cast to x's. This is
// how a float32 parameter feeds a bfloat16 convolution and still gets a float32 gradient (ops/conv.cpp).
// The output keeps x's memory format (a channels-last x gives a channels-last y), so a cast between two
// channels-last layers is one pass over the tensor and no transpose.
#include "core/autograd.h"
#include "core/memory_format.h"
#include "ops/ops.h"

namespace minidl {

namespace {

bool castable(DType t) { return is_floating(t) || t == DType::bfloat16; }

Tensor cast_in_format(const Tensor& x, DType dtype) {
  Tensor out = empty_in_format(x.shape(), TensorOptions(dtype, x.device()), suggest_memory_format(x));
  copy_(out, x);
  return out;
}

}  // namespace

Tensor cast(const Tensor& x, DType dtype) {
  MINIDL_CHECK(x.defined(), "cast: got an undefined tensor");
  MINIDL_CHECK(castable(x.dtype()) && castable(dtype), "cast: casts between float32, float64 and bfloat16, not ",
               dtype_name(x.dtype()), " to ", dtype_name(dtype));
  if (x.dtype() == dtype) return x;
  Tensor out = cast_in_format(x.detach(), dtype);
  if (needs_grad({x})) {
    const DType from = x.dtype();
    attach_grad_fn(out, "CastBackward", {x}, [from](const Tensor& g) { return InputGradients{cast_in_format(g, from)}; });
  }
  return out;
}

}  // namespace minidl
