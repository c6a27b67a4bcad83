// exercises/10-fused-elementwise/sigmoid_backward.cpp — EXERCISE 10: fuse three elementwise kernels into one.
// Read first: docs/course/10-performance.md. Check your work: `make exercise N=10`.
//
// The backward of y = sigmoid(x) is grad_x = g * y * (1 - y). ops/elementwise.cpp writes it with ops,
//   mul(g, sub(y, mul(y, y)))
// which is three kernels: y*y, then y - y^2, then g * (...). Each reads its inputs from memory and writes its
// output to memory: for n elements, 3 + 3 + 3 = 9n floats move (36n bytes), for 3n flops. An elementwise
// kernel does so little arithmetic per byte that memory traffic is all that decides its time (chapter 10,
// the roofline). One kernel that computes the whole formula reads g and y once and writes grad_x once: 3n
// floats (12n bytes). Before you run the checker, write down the speed-up you expect (the README asks).
// That fused kernel is yours, under a new key "sigmoid_backward" with the BinaryKernel signature
// (ops/kernel_signatures.h; relu's backward is done the same way, key "relu_backward"): a = g, b = y.
#include "exercises/10-fused-elementwise/sigmoid_backward.h"

#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// out[i] = g[i] * y[i] * (1 - y[i]) for contiguous g, y and out of n elements.
template <class T>
void sigmoid_backward_loop(const T* g, const T* y, T* out, int64_t n) {
  // EXERCISE: one loop, one pass.
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
