// cpu/elementwise_vectorized.cpp — elementwise kernels for speed: tight loops the compiler vectorises, split
// across threads with OpenMP when the tensor is large enough to pay for waking them.
//
// Layout handling: dimensions that all tensors walk alike are merged first (coalesce_dims), then the
// output (contiguous) is seen as [rows, cols] with cols = the last merged dimension. For each row the
// inputs' start offsets are computed once (cpu/strided.h), then the inner loop walks the row with each
// input's own stride (1 for packed data, 0 for a broadcast; both special-cased so they vectorise). When
// every input is packed and unbroadcast the whole tensor is one flat loop.
// Accumulation convention: outputs are overwritten (=).
#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/elementwise_functors.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// Below this many elements a single thread is faster than waking the pool.
constexpr int64_t kParallelThreshold = 1 << 15;

// A tensor's layout after merging dims with the output's: per-row start offsets and the inner stride.
struct RowLayout {
  Shape shape;
  std::vector<Shape> strides;  // one list per input
  int64_t cols = 1, rows = 0;
};

RowLayout row_layout(const Tensor& out, std::vector<const Tensor*> inputs) {
  RowLayout L;
  L.shape = out.shape();
  Shape out_strides = contiguous_strides(L.shape);
  for (const Tensor* t : inputs) L.strides.push_back(t->strides());
  std::vector<Shape*> all{&out_strides};
  for (Shape& s : L.strides) all.push_back(&s);
  coalesce_dims(L.shape, all);
  L.cols = L.shape.empty() ? 1 : L.shape.back();
  L.rows = L.cols == 0 ? 0 : out.numel() / L.cols;
  return L;
}

template <class F, class T>
void unary_loop(const Tensor& x, Tensor& out, F f) {
  const T* px = x.data<T>();
  T* po = out.data<T>();
  const int64_t n = out.numel();
  // [doc:omp_loop] quoted by docs/course/04-cpu-kernels.md
  if (x.is_contiguous()) {
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
    for (int64_t i = 0; i < n; ++i) po[i] = f(px[i]);
    return;
  }
  // [/doc:omp_loop]
  const RowLayout L = row_layout(out, {&x});
  const int64_t cols = L.cols, sx = L.strides[0].empty() ? 1 : L.strides[0].back();
  const StridedIndex xi(L.shape, L.strides[0]);
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
  for (int64_t r = 0; r < L.rows; ++r) {
    const T* row = px + xi.offset(r * cols);
    T* orow = po + r * cols;
    for (int64_t j = 0; j < cols; ++j) orow[j] = f(row[j * sx]);
  }
}

template <class F>
bool unary_vectorized(const Tensor& x, Tensor& out) {
  return MINIDL_FLOAT_TYPES(out.dtype(), { unary_loop<F, T>(x, out, F()); });
}

template <class F>
bool unary_scalar_vectorized(const Tensor& x, double s, Tensor& out) {
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
  const RowLayout L = row_layout(out, {&a, &b});
  const int64_t cols = L.cols;
  const int64_t sa = L.strides[0].empty() ? 1 : L.strides[0].back();
  const int64_t sb = L.strides[1].empty() ? 1 : L.strides[1].back();
  const StridedIndex ai(L.shape, L.strides[0]), bi(L.shape, L.strides[1]);
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
  for (int64_t r = 0; r < L.rows; ++r) {
    const T* ra = pa + ai.offset(r * cols);
    const T* rb = pb + bi.offset(r * cols);
    T* ro = po + r * cols;
    if (sa == 1 && sb == 0) {  // a row plus one broadcast value (bias over a plane)
      const T vb = rb[0];
      for (int64_t j = 0; j < cols; ++j) ro[j] = f(ra[j], vb);
    } else if (sa == 1 && sb == 1) {
      for (int64_t j = 0; j < cols; ++j) ro[j] = f(ra[j], rb[j]);
    } else {
      for (int64_t j = 0; j < cols; ++j) ro[j] = f(ra[j * sa], rb[j * sb]);
    }
  }
}

template <class F>
bool binary_vectorized(const Tensor& a, const Tensor& b, Tensor& out) {
  return MINIDL_FLOAT_TYPES(out.dtype(), { binary_loop<F, T>(a, b, out); });
}

}  // namespace

void register_elementwise_vectorized_cpu() {
  const char* d = "vectorisable loops, OpenMP threads above 32k elements, strided inputs row by row";
  const char* name = "vectorized";
  register_kernel(keys::neg, DeviceType::cpu, name, Priority::portable, d, unary_vectorized<fn::Neg>);
  register_kernel(keys::exp, DeviceType::cpu, name, Priority::portable, d, unary_vectorized<fn::Exp>);
  register_kernel(keys::log, DeviceType::cpu, name, Priority::portable, d, unary_vectorized<fn::Log>);
  register_kernel(keys::sqrt, DeviceType::cpu, name, Priority::portable, d, unary_vectorized<fn::Sqrt>);
  register_kernel(keys::relu, DeviceType::cpu, name, Priority::portable, d, unary_vectorized<fn::Relu>);
  register_kernel(keys::sigmoid, DeviceType::cpu, name, Priority::portable, d, unary_vectorized<fn::Sigmoid>);
  register_kernel(keys::tanh, DeviceType::cpu, name, Priority::portable, d, unary_vectorized<fn::Tanh>);
  register_kernel(keys::add_scalar, DeviceType::cpu, name, Priority::portable, d, unary_scalar_vectorized<fn::AddScalar>);
  register_kernel(keys::mul_scalar, DeviceType::cpu, name, Priority::portable, d, unary_scalar_vectorized<fn::MulScalar>);
  register_kernel(keys::pow_scalar, DeviceType::cpu, name, Priority::portable, d, unary_scalar_vectorized<fn::PowScalar>);
  register_kernel(keys::add, DeviceType::cpu, name, Priority::portable, d, binary_vectorized<fn::Add>);
  register_kernel(keys::sub, DeviceType::cpu, name, Priority::portable, d, binary_vectorized<fn::Sub>);
  register_kernel(keys::mul, DeviceType::cpu, name, Priority::portable, d, binary_vectorized<fn::Mul>);
  register_kernel(keys::div, DeviceType::cpu, name, Priority::portable, d, binary_vectorized<fn::Div>);
  register_kernel(keys::relu_backward, DeviceType::cpu, name, Priority::portable, d, binary_vectorized<fn::ReluBackward>);
}

}  // namespace minidl
