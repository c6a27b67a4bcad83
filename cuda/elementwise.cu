// cuda/elementwise.cu — every elementwise op on the GPU, in two versions side by side. The math comes
// from ops/elementwise_functors.h, shared with the CPU kernels. Accumulation convention: outputs are
// overwritten (=). out is contiguous (the front end allocates it); inputs may have any strides.
//
//   v1_strided     One thread per output element (grid-stride beyond the grid cap). Each input element
//                  is found through its StridedDesc, so any strides work, stride-0 broadcasts included.
//                  float32 and float64. The index math (a div/mod per dim and input, 32-bit when the
//                  tensor has fewer than 2^31 elements) is the price.
//   v2_vectorized  Contiguous float32 inputs only (declines the rest). Each thread moves 16 bytes per
//                  access (float4 loads and stores): a quarter of the memory instructions of v1 and no
//                  index math, which is what a memory-bound op needs to approach DRAM bandwidth. A
//                  scalar tail handles n % 4 elements. Pointers must be 16-byte aligned (a view at an
//                  odd offset declines and falls back to v1).
#include "cuda/device_utils.cuh"
#include "ops/elementwise_functors.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

using cuda::global_thread_count;
using cuda::global_thread_index;
using cuda::kBlock;
using cuda::StridedDesc;
using cuda::strided_offset;

// A unary-with-scalar functor seen as a unary one: x -> F(x, s).
template <class F, class T>
struct BindScalar {
  T s;
  __host__ __device__ T operator()(T x) const { return F()(x, s); }
};

// ---------------------------------------------------------------- v1_strided

// [doc:grid_stride] quoted by docs/course/05-cuda-kernels.md
template <class T, class Index, class F>
__global__ void unary_strided_kernel(StridedDesc xd, const T* x, T* out, int64_t n, F f) {
  for (int64_t i = global_thread_index(); i < n; i += global_thread_count())
    out[i] = f(x[strided_offset(xd, static_cast<Index>(i))]);
}
// [/doc:grid_stride]

template <class T, class Index, class F>
__global__ void binary_strided_kernel(StridedDesc ad, const T* a, StridedDesc bd, const T* b, T* out, int64_t n) {
  const F f;
  for (int64_t i = global_thread_index(); i < n; i += global_thread_count())
    out[i] = f(a[strided_offset(ad, static_cast<Index>(i))], b[strided_offset(bd, static_cast<Index>(i))]);
}

template <class T, class F>
void launch_unary_strided(const Tensor& x, const StridedDesc& xd, Tensor& out, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cudaStream_t s = cuda::launch_stream(out);
  const unsigned int grid = cuda::grid_for(n, kBlock);
  if (cuda::fits_32bit(n))
    unary_strided_kernel<T, uint32_t, F><<<grid, kBlock, 0, s>>>(xd, x.data<T>(), out.data<T>(), n, f);
  else
    unary_strided_kernel<T, int64_t, F><<<grid, kBlock, 0, s>>>(xd, x.data<T>(), out.data<T>(), n, f);
  MINIDL_LAUNCH_CHECK();
}

template <class F>
bool unary_v1(const Tensor& x, Tensor& out) {
  StridedDesc xd;
  if (!cuda::make_strided_desc(x, xd)) return false;
  return MINIDL_FLOAT_TYPES(out.dtype(), { launch_unary_strided<T>(x, xd, out, F()); });
}

template <class F>
bool unary_scalar_v1(const Tensor& x, double scalar, Tensor& out) {
  StridedDesc xd;
  if (!cuda::make_strided_desc(x, xd)) return false;
  return MINIDL_FLOAT_TYPES(out.dtype(), {
    launch_unary_strided<T>(x, xd, out, BindScalar<F, T>{static_cast<T>(scalar)});
  });
}

template <class F>
bool binary_v1(const Tensor& a, const Tensor& b, Tensor& out) {
  StridedDesc ad, bd;
  if (!cuda::make_strided_desc(a, ad) || !cuda::make_strided_desc(b, bd)) return false;
  const int64_t n = out.numel();
  return MINIDL_FLOAT_TYPES(out.dtype(), {
    if (n > 0) {
      cudaStream_t s = cuda::launch_stream(out);
      const unsigned int grid = cuda::grid_for(n, kBlock);
      if (cuda::fits_32bit(n))
        binary_strided_kernel<T, uint32_t, F><<<grid, kBlock, 0, s>>>(ad, a.data<T>(), bd, b.data<T>(), out.data<T>(), n);
      else
        binary_strided_kernel<T, int64_t, F><<<grid, kBlock, 0, s>>>(ad, a.data<T>(), bd, b.data<T>(), out.data<T>(), n);
      MINIDL_LAUNCH_CHECK();
    }
  });
}

// ---------------------------------------------------------------- v2_vectorized

template <class F>
__global__ void unary_vec4_kernel(const float* x, float* out, int64_t n, F f) {
  const int64_t n4 = n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* o4 = reinterpret_cast<float4*>(out);
  for (int64_t i = global_thread_index(); i < n4; i += global_thread_count()) {
    float4 v = x4[i];
    v.x = f(v.x);
    v.y = f(v.y);
    v.z = f(v.z);
    v.w = f(v.w);
    o4[i] = v;
  }
  const int64_t tail = n4 * 4 + global_thread_index();  // the last n % 4 elements, one per thread
  if (tail < n) out[tail] = f(x[tail]);
}

template <class F>
__global__ void binary_vec4_kernel(const float* a, const float* b, float* out, int64_t n) {
  const F f;
  const int64_t n4 = n / 4;
  const float4* a4 = reinterpret_cast<const float4*>(a);
  const float4* b4 = reinterpret_cast<const float4*>(b);
  float4* o4 = reinterpret_cast<float4*>(out);
  for (int64_t i = global_thread_index(); i < n4; i += global_thread_count()) {
    const float4 va = a4[i], vb = b4[i];
    float4 r;
    r.x = f(va.x, vb.x);
    r.y = f(va.y, vb.y);
    r.z = f(va.z, vb.z);
    r.w = f(va.w, vb.w);
    o4[i] = r;
  }
  const int64_t tail = n4 * 4 + global_thread_index();
  if (tail < n) out[tail] = f(a[tail], b[tail]);
}

bool aligned16(const Tensor& t) { return reinterpret_cast<uintptr_t>(t.raw_data()) % 16 == 0; }

// What v2 accepts: float32, every tensor contiguous and 16-byte aligned.
bool vectorizable(std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors)
    if (t->dtype() != DType::float32 || !t->is_contiguous() || !aligned16(*t)) return false;
  return true;
}

// One thread per float4; the grid covers all of them up to the cap.
unsigned int vec4_grid(int64_t n) { return cuda::grid_for((n + 3) / 4, kBlock); }

template <class F>
void launch_unary_vec4(const Tensor& x, Tensor& out, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cudaStream_t s = cuda::launch_stream(out);
  unary_vec4_kernel<F><<<vec4_grid(n), kBlock, 0, s>>>(x.data<float>(), out.data<float>(), n, f);
  MINIDL_LAUNCH_CHECK();
}

template <class F>
bool unary_v2(const Tensor& x, Tensor& out) {
  if (!vectorizable({&x, &out})) return false;
  launch_unary_vec4(x, out, F());
  return true;
}

template <class F>
bool unary_scalar_v2(const Tensor& x, double scalar, Tensor& out) {
  if (!vectorizable({&x, &out})) return false;
  launch_unary_vec4(x, out, BindScalar<F, float>{static_cast<float>(scalar)});
  return true;
}

template <class F>
bool binary_v2(const Tensor& a, const Tensor& b, Tensor& out) {
  if (!vectorizable({&a, &b, &out})) return false;
  const int64_t n = out.numel();
  if (n == 0) return true;
  cudaStream_t s = cuda::launch_stream(out);
  binary_vec4_kernel<F><<<vec4_grid(n), kBlock, 0, s>>>(a.data<float>(), b.data<float>(), out.data<float>(), n);
  MINIDL_LAUNCH_CHECK();
  return true;
}

}  // namespace

void register_elementwise_cuda() {
  const DeviceType gpu = DeviceType::cuda;
  const char* v1 = "v1_strided";
  const char* d1 = "one thread per element, inputs through their strides (any layout, broadcasts); f32/f64";
  register_kernel(keys::neg, gpu, v1, Priority::portable, d1, unary_v1<fn::Neg>);
  register_kernel(keys::exp, gpu, v1, Priority::portable, d1, unary_v1<fn::Exp>);
  register_kernel(keys::log, gpu, v1, Priority::portable, d1, unary_v1<fn::Log>);
  register_kernel(keys::sqrt, gpu, v1, Priority::portable, d1, unary_v1<fn::Sqrt>);
  register_kernel(keys::relu, gpu, v1, Priority::portable, d1, unary_v1<fn::Relu>);
  register_kernel(keys::sigmoid, gpu, v1, Priority::portable, d1, unary_v1<fn::Sigmoid>);
  register_kernel(keys::tanh, gpu, v1, Priority::portable, d1, unary_v1<fn::Tanh>);
  register_kernel(keys::add_scalar, gpu, v1, Priority::portable, d1, unary_scalar_v1<fn::AddScalar>);
  register_kernel(keys::mul_scalar, gpu, v1, Priority::portable, d1, unary_scalar_v1<fn::MulScalar>);
  register_kernel(keys::pow_scalar, gpu, v1, Priority::portable, d1, unary_scalar_v1<fn::PowScalar>);
  register_kernel(keys::add, gpu, v1, Priority::portable, d1, binary_v1<fn::Add>);
  register_kernel(keys::sub, gpu, v1, Priority::portable, d1, binary_v1<fn::Sub>);
  register_kernel(keys::mul, gpu, v1, Priority::portable, d1, binary_v1<fn::Mul>);
  register_kernel(keys::div, gpu, v1, Priority::portable, d1, binary_v1<fn::Div>);
  register_kernel(keys::relu_backward, gpu, v1, Priority::portable, d1, binary_v1<fn::ReluBackward>);
  register_kernel(keys::eq, gpu, v1, Priority::portable, d1, binary_v1<fn::Eq>);
  register_kernel(keys::ne, gpu, v1, Priority::portable, d1, binary_v1<fn::Ne>);
  register_kernel(keys::gt, gpu, v1, Priority::portable, d1, binary_v1<fn::Gt>);
  register_kernel(keys::ge, gpu, v1, Priority::portable, d1, binary_v1<fn::Ge>);
  register_kernel(keys::lt, gpu, v1, Priority::portable, d1, binary_v1<fn::Lt>);
  register_kernel(keys::le, gpu, v1, Priority::portable, d1, binary_v1<fn::Le>);

  const char* v2 = "v2_vectorized";
  const char* d2 = "float4 loads/stores, grid-stride, scalar tail; contiguous 16-byte aligned float32 only";
  register_kernel(keys::neg, gpu, v2, Priority::tuned, d2, unary_v2<fn::Neg>);
  register_kernel(keys::exp, gpu, v2, Priority::tuned, d2, unary_v2<fn::Exp>);
  register_kernel(keys::log, gpu, v2, Priority::tuned, d2, unary_v2<fn::Log>);
  register_kernel(keys::sqrt, gpu, v2, Priority::tuned, d2, unary_v2<fn::Sqrt>);
  register_kernel(keys::relu, gpu, v2, Priority::tuned, d2, unary_v2<fn::Relu>);
  register_kernel(keys::sigmoid, gpu, v2, Priority::tuned, d2, unary_v2<fn::Sigmoid>);
  register_kernel(keys::tanh, gpu, v2, Priority::tuned, d2, unary_v2<fn::Tanh>);
  register_kernel(keys::add_scalar, gpu, v2, Priority::tuned, d2, unary_scalar_v2<fn::AddScalar>);
  register_kernel(keys::mul_scalar, gpu, v2, Priority::tuned, d2, unary_scalar_v2<fn::MulScalar>);
  register_kernel(keys::pow_scalar, gpu, v2, Priority::tuned, d2, unary_scalar_v2<fn::PowScalar>);
  register_kernel(keys::add, gpu, v2, Priority::tuned, d2, binary_v2<fn::Add>);
  register_kernel(keys::sub, gpu, v2, Priority::tuned, d2, binary_v2<fn::Sub>);
  register_kernel(keys::mul, gpu, v2, Priority::tuned, d2, binary_v2<fn::Mul>);
  register_kernel(keys::div, gpu, v2, Priority::tuned, d2, binary_v2<fn::Div>);
  register_kernel(keys::relu_backward, gpu, v2, Priority::tuned, d2, binary_v2<fn::ReluBackward>);
  register_kernel(keys::eq, gpu, v2, Priority::tuned, d2, binary_v2<fn::Eq>);
  register_kernel(keys::ne, gpu, v2, Priority::tuned, d2, binary_v2<fn::Ne>);
  register_kernel(keys::gt, gpu, v2, Priority::tuned, d2, binary_v2<fn::Gt>);
  register_kernel(keys::ge, gpu, v2, Priority::tuned, d2, binary_v2<fn::Ge>);
  register_kernel(keys::lt, gpu, v2, Priority::tuned, d2, binary_v2<fn::Lt>);
  register_kernel(keys::le, gpu, v2, Priority::tuned, d2, binary_v2<fn::Le>);
}

}  // namespace minidl
