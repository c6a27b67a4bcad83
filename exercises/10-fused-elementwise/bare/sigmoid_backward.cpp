// exercises/10-fused-elementwise/sigmoid_backward.cpp — EXERCISE 10, no scaffolding: fuse three elementwise kernels into one.
// Read first: docs/course/10-performance.md. Check your work: `make exercise N=10`.
//
// Contract:
//   sigmoid_backward_loop(g, y, out, n): out[i] = g[i] * y[i] * (1 - y[i]) for i in [0, n), contiguous
//   arrays, in one pass over memory (the backward of y = sigmoid(x)).
#include "exercises/10-fused-elementwise/sigmoid_backward.h"

#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// out[i] = g[i] * y[i] * (1 - y[i]) for contiguous g, y and out of n elements.
template <class T>
void sigmoid_backward_loop(const T* g, const T* y, T* out, int64_t n) {
  (void)g;
  (void)y;
  (void)out;
  (void)n;
}

// float32 and float64; declines inputs that are not contiguous (broadcast views): the checker's op falls
// back to the three unfused kernels then.
bool sigmoid_backward_student(const Tensor& g, const Tensor& y, Tensor& out) {
  if (!g.is_contiguous() || !y.is_contiguous()) return false;
  return MINIDL_FLOAT_TYPES(out.dtype(), { sigmoid_backward_loop<T>(g.data<T>(), y.data<T>(), out.data<T>(), out.numel()); });
}

}  // namespace

void register_student_sigmoid_backward() {
  register_kernel<BinaryKernel>("sigmoid_backward", DeviceType::cpu, "student", 0,
                                "exercise 10: g * y * (1 - y) in one pass", sigmoid_backward_student);
}

}  // namespace minidl
