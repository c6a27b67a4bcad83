// exercises/02-gradient-formulas/gradients.h — what exercise 2's file (gradients.cpp) defines, for the
// checker (check.cpp). Chapter: docs/course/02-autograd.md.
#pragma once
#include "core/tensor.h"

namespace minidl {

// softplus(x) = log(1 + exp(x)), elementwise, with its own backward node "SoftplusBackward".
Tensor student_softplus(const Tensor& x);

// hypot(a, b) = sqrt(a^2 + b^2), elementwise with NumPy broadcasting, with its own node "HypotBackward".
Tensor student_hypot(const Tensor& a, const Tensor& b);

}  // namespace minidl
