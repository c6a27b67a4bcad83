// ops/memory_format.cpp — to_memory_format (ops/memory_format.h): a copy into the other memory format.
//   y[n, c, h, w] = x[n, c, h, w]          dx = g
// Only the strides differ between x and y, so the gradient is the output's gradient itself.
#include "ops/memory_format.h"

#include "core/autograd.h"

namespace minidl {

Tensor to_memory_format(const Tensor& x, MemoryFormat format) {
  Tensor out = copy_in_format(x.detach(), format);
  if (out.shares_storage_with(x) && out.strides() == x.strides() && out.offset() == x.offset()) return x;
  if (needs_grad({x}))
    attach_grad_fn(out, "ToMemoryFormatBackward", {x}, [](const Tensor& g) { return InputGradients{g}; });
  return out;
}

}  // namespace minidl
