// exercises/02-gradient-formulas/gradients.cpp — EXERCISE 2, no scaffolding: the gradients of softplus and hypot.
// Read first: docs/course/02-autograd.md. Check your work: `make exercise N=2`.
//
// Contract:
//   each lambda returns, given g = dL/d(out), the gradient of each input, written with ops (ops/ops.h) so it
//   runs on any device, each of its input's shape (an input that was broadcast gets g's contributions summed
//   over the broadcast dimensions).
//   SoftplusBackward: {dL/dx} for softplus(x) = log(1 + exp(x)).
//   HypotBackward: {dL/da, dL/db} for hypot(a, b) = sqrt(a^2 + b^2), a and b broadcast.
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
      (void)g;
      (void)y;
      return InputGradients{zeros_like(a), zeros_like(b)};
    });
  return out;
}

}  // namespace minidl
