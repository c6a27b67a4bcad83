// cpu/elementwise_fast.cpp — elementwise kernels for speed: tight loops the compiler vectorises, split
// across threads with OpenMP when the tensor is large enough to pay for waking them.
//
// Layout handling: the output (contiguous) is seen as [rows, cols] with cols = its last dimension. For
// each row the inputs' start offsets are computed once (cpu/strided.h), then the inner loop walks the
// last dimension with each input's own stride (1 for packed data, 0 for a broadcast). When every input
// is packed and unbroadcast the whole tensor is one flat loop.
// Accumulation convention: outputs are overwritten (=).
#include "cpu/register.h"
#include "cpu/strided.h"
#include "ops/elementwise_functors.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// Below this many elements a single thread is faster than waking the pool.
constexpr int64_t kParallelThreshold = 1 << 15;

int64_t last_dim(const Tensor& t) { return t.dim() == 0 ? 1 : t.shape().back(); }
int64_t last_stride(const Tensor& t) { return t.dim() == 0 ? 1 : t.strides().back(); }

template <class F, class T>
void unary_loop(const Tensor& x, Tensor& out, F f) {
  const T* px = x.data<T>();
  T* po = out.data<T>();
  const int64_t n = out.numel();
  if (x.is_contiguous()) {
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
    for (int64_t i = 0; i < n; ++i) po[i] = f(px[i]);
    return;
  }
  const int64_t cols = last_dim(out), rows = cols == 0 ? 0 : n / cols, sx = last_stride(x);
  const StridedIndex xi(x);
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = px + xi.offset(r * cols);
    T* orow = po + r * cols;
    for (int64_t j = 0; j < cols; ++j) orow[j] = f(row[j * sx]);
  }
}

template <class F>
bool unary_fast(const Tensor& x, Tensor& out) {
  return MINIDL_FLOAT_TYPES(out.dtype(), { unary_loop<F, T>(x, out, F()); });
}

template <class F>
bool unary_scalar_fast(const Tensor& x, double s, Tensor& out) {
  return MINIDL_FLOAT_TYPES(out.dtype(), {
    const T scalar = static_cast<T>(s);
    auto f = [scalar](T v) { return F()(v, scalar); };
    unary_loop<decltype(f), T>(x, out, f);
  });
}

template <class F, class T>
void binary_loop(const Tensor& a, const Tensor& b, Tensor& out) {
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  const int64_t n = out.numel();
  const F f;
  if (a.is_contiguous() && b.is_contiguous()) {
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    return;
  }
  const int64_t cols = last_dim(out), rows = cols == 0 ? 0 : n / cols;
  const int64_t sa = last_stride(a), sb = last_stride(b);
  const StridedIndex ai(a), bi(b);
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
  for (int64_t r = 0; r < rows; ++r) {
    const T* ra = pa + ai.offset(r * cols);
    const T* rb = pb + bi.offset(r * cols);
    T* ro = po + r * cols;
    for (int64_t j = 0; j < cols; ++j) ro[j] = f(ra[j * sa], rb[j * sb]);
  }
}

template <class F>
bool binary_fast(const Tensor& a, const Tensor& b, Tensor& out) {
  return MINIDL_FLOAT_TYPES(out.dtype(), { binary_loop<F, T>(a, b, out); });
}

}  // namespace

void register_elementwise_naive_cpu();  // cpu/elementwise_naive.cpp

void register_elementwise_kernels_cpu() {
  register_elementwise_naive_cpu();
  const char* d = "vectorisable loops, OpenMP threads above 32k elements, strided inputs row by row";
  const char* name = "vectorized";
  register_kernel<UnaryKernel>("neg", DeviceType::cpu, name, 10, d, unary_fast<fn::Neg>);
  register_kernel<UnaryKernel>("exp", DeviceType::cpu, name, 10, d, unary_fast<fn::Exp>);
  register_kernel<UnaryKernel>("log", DeviceType::cpu, name, 10, d, unary_fast<fn::Log>);
  register_kernel<UnaryKernel>("sqrt", DeviceType::cpu, name, 10, d, unary_fast<fn::Sqrt>);
  register_kernel<UnaryKernel>("relu", DeviceType::cpu, name, 10, d, unary_fast<fn::Relu>);
  register_kernel<UnaryKernel>("sigmoid", DeviceType::cpu, name, 10, d, unary_fast<fn::Sigmoid>);
  register_kernel<UnaryKernel>("tanh", DeviceType::cpu, name, 10, d, unary_fast<fn::Tanh>);
  register_kernel<UnaryScalarKernel>("add_scalar", DeviceType::cpu, name, 10, d, unary_scalar_fast<fn::AddScalar>);
  register_kernel<UnaryScalarKernel>("mul_scalar", DeviceType::cpu, name, 10, d, unary_scalar_fast<fn::MulScalar>);
  register_kernel<UnaryScalarKernel>("pow_scalar", DeviceType::cpu, name, 10, d, unary_scalar_fast<fn::PowScalar>);
  register_kernel<BinaryKernel>("add", DeviceType::cpu, name, 10, d, binary_fast<fn::Add>);
  register_kernel<BinaryKernel>("sub", DeviceType::cpu, name, 10, d, binary_fast<fn::Sub>);
  register_kernel<BinaryKernel>("mul", DeviceType::cpu, name, 10, d, binary_fast<fn::Mul>);
  register_kernel<BinaryKernel>("div", DeviceType::cpu, name, 10, d, binary_fast<fn::Div>);
  register_kernel<BinaryKernel>("relu_backward", DeviceType::cpu, name, 10, d, binary_fast<fn::ReluBackward>);
}

}  // namespace minidl
