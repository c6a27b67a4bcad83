// cpu/elementwise_naive.cpp — reference kernels for every elementwise op: one element at a time through
// the strides (cpu/strided.h). Accumulation convention: outputs are overwritten (=).
#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/elementwise_functors.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

template <class F>
bool unary_naive(const Tensor& x, Tensor& out) {
  const int64_t n = out.numel();
  const StridedIndex xi(x);
  return MINIDL_FLOAT_TYPES(out.dtype(), {
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for (int64_t i = 0; i < n; ++i) po[i] = F()(px[xi.offset(i)]);
  });
}

template <class F>
bool unary_scalar_naive(const Tensor& x, double s, Tensor& out) {
  const int64_t n = out.numel();
  const StridedIndex xi(x);
  return MINIDL_FLOAT_TYPES(out.dtype(), {
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for (int64_t i = 0; i < n; ++i) po[i] = F()(px[xi.offset(i)], static_cast<T>(s));
  });
}

template <class F>
bool binary_naive(const Tensor& a, const Tensor& b, Tensor& out) {
  const int64_t n = out.numel();
  const StridedIndex ai(a), bi(b);
  return MINIDL_FLOAT_TYPES(out.dtype(), {
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();
    for (int64_t i = 0; i < n; ++i) po[i] = F()(pa[ai.offset(i)], pb[bi.offset(i)]);
  });
}

}  // namespace

void register_elementwise_naive_cpu() {
  const char* d = "reference: one element at a time through the strides";
  register_kernel(keys::neg, DeviceType::cpu, "naive", Priority::reference, d, unary_naive<fn::Neg>);
  register_kernel(keys::exp, DeviceType::cpu, "naive", Priority::reference, d, unary_naive<fn::Exp>);
  register_kernel(keys::log, DeviceType::cpu, "naive", Priority::reference, d, unary_naive<fn::Log>);
  register_kernel(keys::sqrt, DeviceType::cpu, "naive", Priority::reference, d, unary_naive<fn::Sqrt>);
  register_kernel(keys::relu, DeviceType::cpu, "naive", Priority::reference, d, unary_naive<fn::Relu>);
  register_kernel(keys::sigmoid, DeviceType::cpu, "naive", Priority::reference, d, unary_naive<fn::Sigmoid>);
  register_kernel(keys::tanh, DeviceType::cpu, "naive", Priority::reference, d, unary_naive<fn::Tanh>);
  register_kernel(keys::add_scalar, DeviceType::cpu, "naive", Priority::reference, d, unary_scalar_naive<fn::AddScalar>);
  register_kernel(keys::mul_scalar, DeviceType::cpu, "naive", Priority::reference, d, unary_scalar_naive<fn::MulScalar>);
  register_kernel(keys::pow_scalar, DeviceType::cpu, "naive", Priority::reference, d, unary_scalar_naive<fn::PowScalar>);
  register_kernel(keys::add, DeviceType::cpu, "naive", Priority::reference, d, binary_naive<fn::Add>);
  register_kernel(keys::sub, DeviceType::cpu, "naive", Priority::reference, d, binary_naive<fn::Sub>);
  register_kernel(keys::mul, DeviceType::cpu, "naive", Priority::reference, d, binary_naive<fn::Mul>);
  register_kernel(keys::div, DeviceType::cpu, "naive", Priority::reference, d, binary_naive<fn::Div>);
  register_kernel(keys::relu_backward, DeviceType::cpu, "naive", Priority::reference, d, binary_naive<fn::ReluBackward>);
  register_kernel(keys::eq, DeviceType::cpu, "naive", Priority::reference, d, binary_naive<fn::Eq>);
  register_kernel(keys::ne, DeviceType::cpu, "naive", Priority::reference, d, binary_naive<fn::Ne>);
  register_kernel(keys::gt, DeviceType::cpu, "naive", Priority::reference, d, binary_naive<fn::Gt>);
  register_kernel(keys::ge, DeviceType::cpu, "naive", Priority::reference, d, binary_naive<fn::Ge>);
  register_kernel(keys::lt, DeviceType::cpu, "naive", Priority::reference, d, binary_naive<fn::Lt>);
  register_kernel(keys::le, DeviceType::cpu, "naive", Priority::reference, d, binary_naive<fn::Le>);
}

}  // namespace minidl
