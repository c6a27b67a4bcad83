// exercises/01-strided-copy/solution/strided_copy.cpp — the reference solution of exercise 1 (strided copy).
// Read first: docs/course/01-tensors.md. Check your work: `make exercise N=1`.
//
// A tensor is a view of memory (core/tensor.h):
//   element (i0, ..., ik) lives at   data<T>() + i0*strides[0] + ... + ik*strides[k]
// where data<T>() already points at element (0, ..., 0): the view's offset is applied for you.
// A transpose, a permute, a slice or an expand only changes shape, strides and offset; copying such a
// view into another tensor (which may itself be a view) is what `contiguous()` and `copy_` do, through
// the kernel key "copy" (ops/kernel_signatures.h: dst = src, same shape and dtype, both any strides).
//
// You write two functions below, where it says EXERCISE; the rest is given.
#include "exercises/01-strided-copy/strided_copy.h"

#include "core/dispatch.h"
#include "ops/kernel_signatures.h"

namespace minidl {

// EXERCISE 1a: the offset of the element at row-major position `linear`.
//   Row-major order: the last dimension varies fastest. For shape [2, 3] the positions 0 .. 5 are the
//   indices (0,0) (0,1) (0,2) (1,0) (1,1) (1,2). Split `linear` into those digits (a mixed-radix number:
//   take `linear % shape[d]`, then divide by shape[d], from the last dimension to the first), and return
//   sum_d index[d] * strides[d].
//   Example: the transpose of a contiguous [2, 3] tensor has shape [3, 2] and strides [1, 3]; its
//   position 1 is the index (0, 1), at offset 0*1 + 1*3 = 3.
//   A tensor of no dimensions (a scalar) has one element, at offset 0.
int64_t element_offset(const Shape& shape, const Shape& strides, int64_t linear) {
  int64_t offset = 0;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    const int64_t index = linear % shape[d];
    linear /= shape[d];
    offset += index * strides[d];
  }
  return offset;
}

namespace {

// EXERCISE 1b: dst = src, element by element, for tensors of any strides (either may be a view).
// For every position i in [0, n), copy the element at src's offset of i to dst's offset of i; the two
// offsets differ whenever the strides do. Use element_offset.
template <class T>
void copy_elements(const Tensor& src, Tensor& dst) {
  const T* from = src.data<T>();  // element (0, ..., 0) of src
  T* to = dst.data<T>();          // element (0, ..., 0) of dst
  const int64_t n = src.numel();
  for (int64_t i = 0; i < n; ++i)
    to[element_offset(dst.shape(), dst.strides(), i)] = from[element_offset(src.shape(), src.strides(), i)];
}

// The kernel: serves float32 and float64, declines the integer dtypes (returns false: the dispatcher
// then tries the next kernel, the naive one, which handles them).
bool copy_student(const Tensor& src, Tensor& dst) {
  switch (src.dtype()) {
    case DType::float32: copy_elements<float>(src, dst); return true;
    case DType::float64: copy_elements<double>(src, dst); return true;
    default: return false;
  }
}

}  // namespace

// Priority -10: below every other copy kernel, so it serves only when selected (the checker selects it,
// or calls it directly); a wrong copy kernel as the default would break every tensor operation.
void register_student_copy() {
  register_kernel(keys::copy, DeviceType::cpu, "student", Priority::reference - 10, "exercise 1: element by element through the strides",
                  copy_student);
}

}  // namespace minidl
