#include "ops/op_checks.h"

namespace minidl {

void check_floating(const char* op, const Tensor& t) {
  MINIDL_CHECK(t.defined(), op, ": got an undefined tensor");
  MINIDL_CHECK(is_floating(t.dtype()), op, ": needs a float32 or float64 tensor, got ", dtype_name(t.dtype()),
               " of shape ", shape_str(t.shape()));
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

}  // namespace minidl
