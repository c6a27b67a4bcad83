// ops/compare.cpp — the comparison ops eq, ne, gt, ge, lt, le: out = (a OP b) ? 1 : 0.
//
// They exist for evaluation code (accuracy = mean(eq(argmax(logits, 1), labels))), so they follow
// NumPy's broadcasting like add, and they have no gradient: the result is piecewise constant, its
// derivative 0 almost everywhere, and an output that required grad would only invite a silent zero.
// minidl has no bool dtype, so the result holds 1 and 0 in a floating dtype: the inputs' own when
// they are floating, float64 when they are integers (int64 class indices compare exactly below 2^53).
// The math is in ops/elementwise_functors.h (fn::Eq ...), shared with the CPU and CUDA kernels.
#include "core/dispatch.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

namespace {

// Integer tensors are compared as float64; floating ones as they are. Detached: no history.
Tensor comparable(const Tensor& t) {
  return is_floating(t.dtype()) ? t.detach() : t.to(DType::float64);
}

Tensor compare(const KernelKey<BinaryKernel>& key, const Tensor& a_in, const Tensor& b_in) {
  const char* name = key.name();
  check_same_device(name, {a_in, b_in});
  Tensor a = comparable(a_in), b = comparable(b_in);
  // Mixed precisions (float32 against float64, or against an integer made float64) meet in float64.
  if (a.dtype() != b.dtype()) {
    a = a.to(DType::float64);
    b = b.to(DType::float64);
  }
  check_floating(name, a);
  const Shape shape = broadcast_shapes(name, a.shape(), b.shape());
  Tensor out = empty(shape, TensorOptions(a.dtype(), a.device()));
  const Tensor ea = a.shape() == shape ? a : a.expand(shape);
  const Tensor eb = b.shape() == shape ? b : b.expand(shape);
  dispatch(key, a.device(), ea, eb, out);
  return out;
}

// The scalar as a 0-dim tensor of x's comparison dtype, on x's device (broadcast by compare).
Tensor scalar_like(const Tensor& x, double s) {
  const DType dt = is_floating(x.dtype()) ? x.dtype() : DType::float64;
  return full({}, s, TensorOptions(dt, x.device()));
}

}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) { return compare(keys::eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare(keys::ne, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare(keys::gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare(keys::ge, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare(keys::lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return compare(keys::le, a, b); }

Tensor eq(const Tensor& a, double s) { return compare(keys::eq, a, scalar_like(a, s)); }
Tensor ne(const Tensor& a, double s) { return compare(keys::ne, a, scalar_like(a, s)); }
Tensor gt(const Tensor& a, double s) { return compare(keys::gt, a, scalar_like(a, s)); }
Tensor ge(const Tensor& a, double s) { return compare(keys::ge, a, scalar_like(a, s)); }
Tensor lt(const Tensor& a, double s) { return compare(keys::lt, a, scalar_like(a, s)); }
Tensor le(const Tensor& a, double s) { return compare(keys::le, a, scalar_like(a, s)); }

}  // namespace minidl
