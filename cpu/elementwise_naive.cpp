// cpu/elementwise_naive.cpp — reference kernels for every elementwise op: one element at a time through
// the strides (cpu/strided.h). Accumulation convention: outputs are overwritten (=).
#include "cpu/register.h"
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
  register_kernel<UnaryKernel>("neg", DeviceType::cpu, "naive", 0, d, unary_naive<fn::Neg>);
  register_kernel<UnaryKernel>("exp", DeviceType::cpu, "naive", 0, d, unary_naive<fn::Exp>);
  register_kernel<UnaryKernel>("log", DeviceType::cpu, "naive", 0, d, unary_naive<fn::Log>);
  register_kernel<UnaryKernel>("sqrt", DeviceType::cpu, "naive", 0, d, unary_naive<fn::Sqrt>);
  register_kernel<UnaryKernel>("relu", DeviceType::cpu, "naive", 0, d, unary_naive<fn::Relu>);
  register_kernel<UnaryKernel>("sigmoid", DeviceType::cpu, "naive", 0, d, unary_naive<fn::Sigmoid>);
  register_kernel<UnaryKernel>("tanh", DeviceType::cpu, "naive", 0, d, unary_naive<fn::Tanh>);
  register_kernel<UnaryScalarKernel>("add_scalar", DeviceType::cpu, "naive", 0, d, unary_scalar_naive<fn::AddScalar>);
  register_kernel<UnaryScalarKernel>("mul_scalar", DeviceType::cpu, "naive", 0, d, unary_scalar_naive<fn::MulScalar>);
  register_kernel<UnaryScalarKernel>("pow_scalar", DeviceType::cpu, "naive", 0, d, unary_scalar_naive<fn::PowScalar>);
  register_kernel<BinaryKernel>("add", DeviceType::cpu, "naive", 0, d, binary_naive<fn::Add>);
  register_kernel<BinaryKernel>("sub", DeviceType::cpu, "naive", 0, d, binary_naive<fn::Sub>);
  register_kernel<BinaryKernel>("mul", DeviceType::cpu, "naive", 0, d, binary_naive<fn::Mul>);
  register_kernel<BinaryKernel>("div", DeviceType::cpu, "naive", 0, d, binary_naive<fn::Div>);
  register_kernel<BinaryKernel>("relu_backward", DeviceType::cpu, "naive", 0, d, binary_naive<fn::ReluBackward>);
}

}  // namespace minidl
