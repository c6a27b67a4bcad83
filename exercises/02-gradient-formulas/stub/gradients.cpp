// exercises/02-gradient-formulas/gradients.cpp — EXERCISE 2: write the backward formulas of two ops.
// Read first: docs/course/02-autograd.md. Check your work: `make exercise N=2`.
//
// Each op below computes its forward value with existing ops under a NoGradGuard, so autograd records
// nothing for those inner ops; then, when an input needs a gradient, it attaches ONE node to the output
// with attach_grad_fn (core/autograd.h), whose lambda maps g = dL/d(out) to the gradient of each input.
// That is how every op of ops/*.cpp is written (ops/elementwise.cpp: the formulas of mul, div, tanh...).
// The lambda must be written with ops (mul, div, sigmoid, sum_to, ...: ops/ops.h), so it runs on any
// device; it captures the tensors it needs, detached.
#include "exercises/02-gradient-formulas/gradients.h"

#include "ops/ops.h"

namespace minidl {

// softplus(x) = log(1 + exp(x)): a smooth relu.
Tensor student_softplus(const Tensor& x) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = log(add_scalar(exp(x), 1.0));
  }
  if (needs_grad({x}))
    attach_grad_fn(out, "SoftplusBackward", {x}, [x = x.detach()](const Tensor& g) {
      // EXERCISE 2a: return {dL/dx}, given g = dL/d(out), same shape as x.
      //   d softplus(x) / dx = exp(x) / (1 + exp(x)), which is sigmoid(x).
      (void)g;
      return InputGradients{zeros_like(x)};
    });
  return out;
}

// hypot(a, b) = sqrt(a^2 + b^2), with a and b broadcast to a common shape (NumPy rules: a [3, 4] with a
// [4] gives a [3, 4]; the [4] is used for every row).
Tensor student_hypot(const Tensor& a, const Tensor& b) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = sqrt(add(mul(a, a), mul(b, b)));
  }
  if (needs_grad({a, b}))
    attach_grad_fn(out, "HypotBackward", {a, b}, [a = a.detach(), b = b.detach(), y = out.detach()](const Tensor& g) {
      // EXERCISE 2b: return {dL/da, dL/db}, given g = dL/d(out) (out's shape).
      //   d hypot / da = a / hypot(a, b),   d hypot / db = b / hypot(a, b)   (y is hypot(a, b))
      //   Each gradient must have its input's shape: where an input was broadcast, its gradient is the sum
      //   of g's contributions over the broadcast dimensions. sum_to(t, shape) does that sum (ops/ops.h).
      (void)g;
      (void)y;
      return InputGradients{zeros_like(a), zeros_like(b)};
    });
  return out;
}

}  // namespace minidl
