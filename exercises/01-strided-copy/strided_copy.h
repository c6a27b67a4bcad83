// exercises/01-strided-copy/strided_copy.h — what exercise 1's file (strided_copy.cpp) defines, for the
// checker (check.cpp). Chapter: docs/course/01-tensors.md.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace minidl {

// The offset, in elements from element (0, ..., 0), of the element at row-major position `linear` of a
// tensor with this shape and these strides.
int64_t element_offset(const Shape& shape, const Shape& strides, int64_t linear);

// Registers the exercise's copy kernel as "student" for key "copy" on the CPU.
void register_student_copy();

}  // namespace minidl
