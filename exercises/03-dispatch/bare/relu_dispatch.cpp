// exercises/03-dispatch/relu_dispatch.cpp — EXERCISE 3, no scaffolding: a kernel in the dispatch table.
// Read first: docs/course/03-dispatch.md. Check your work: `make exercise N=3`.
//
// Contract:
//   relu_student(x, out): out = max(x, 0) for a contiguous float32 x (returns true); declines (returns
//     false) every other call: another dtype, a non-contiguous view.
//   register_student_relu(): registers relu_student as kernel "student" of key "relu" on the CPU, with a
//     priority that makes it the CPU's default for relu.
#include "exercises/03-dispatch/relu_dispatch.h"

#include "core/dispatch.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

bool relu_student(const Tensor& x, Tensor& out) {
  (void)x;
  (void)out;
  return false;
}

}  // namespace

void register_student_relu() {
  (void)relu_student;
}

}  // namespace minidl
