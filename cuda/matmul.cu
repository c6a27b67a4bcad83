// cuda/matmul.cu — key "matmul" on the GPU: batched, row-major, with transpose flags
// (ops/kernel_signatures.h):
//
//     out[i] = op(a[i]) op(b[i]),   op(a) = trans_a ? a^T : a  [M, K],   op(b) = trans_b ? b^T : b  [K, N]
//
// Versions side by side, slowest to fastest, each a step of the classic CUDA GEMM lesson:
//   v1_naive             one thread per output element (float32, float64)
//   v2_smem_tiled        32 x 32 tiles staged in shared memory (float32, float64)
//   v3_register_blocked  8 x 8 outputs per thread from shared tiles (float32; cuda/gemm_tiled.cuh)
//   cublas               cuBLAS strided-batched GEMM (float32, float64)
// The ladder goes on in cuda/matmul_v4_warptiled.cu ... matmul_tf32_wgmma.cu (docs/gemm-ladder.md).
// Accumulation convention: out is overwritten (=).
#include <algorithm>
#include <cstdint>

#include "core/dispatch.h"
#include "cuda/bf16_choice.h"
#include "cuda/cuda_common.h"
#include "cuda/dense_common.h"
#include "cuda/gemm_tiled.cuh"
#include "cuda/sgemm_common.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// Sizes of one call, read from the [B, ra, ca] x [B, rb, cb] -> [B, M, N] tensors.
struct MatmulDims {
  int64_t batch, M, N, K;
  int64_t lda, ldb;  // row lengths of the stored a and b (ca and cb)
};

MatmulDims matmul_dims(const Tensor& a, const Tensor& b, const Tensor& out, bool trans_a) {
  MatmulDims d;
  d.batch = out.size(0);
  d.M = out.size(1);
  d.N = out.size(2);
  d.K = trans_a ? a.size(1) : a.size(2);
  d.lda = a.size(2);
  d.ldb = b.size(2);
  return d;
}

// op(X)(r, c) of a row-major matrix with row length ld.
template <bool TRANS, class T>
__device__ __forceinline__ T op_at(const T* x, int64_t ld, int64_t r, int64_t c) {
  return TRANS ? x[c * ld + r] : x[r * ld + c];
}

// ---------------------------------------------------------------- v1_naive
// One thread per output element: a dot product of length K read straight from global memory.
// Threads along x take consecutive columns n so the writes (and the reads of b when not transposed)
// are coalesced. Each element of a and b is read M or N times from memory: bound by memory traffic.
// [doc:v1_naive] quoted by docs/course/06-gemm-ladder.md
template <class T, bool TA, bool TB>
__global__ void matmul_naive_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out,
                                    MatmulDims d) {
  const int64_t n = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t m = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  if (m >= d.M || n >= d.N) return;
  for (int64_t bi = blockIdx.z; bi < d.batch; bi += gridDim.z) {
    const T* ab = a + bi * d.M * d.K;
    const T* bb = b + bi * d.K * d.N;
    T acc = 0;
    for (int64_t k = 0; k < d.K; ++k) acc += op_at<TA>(ab, d.lda, m, k) * op_at<TB>(bb, d.ldb, k, n);
    out[(bi * d.M + m) * d.N + n] = acc;
  }
}
// [/doc:v1_naive]

template <class T, bool TA, bool TB>
void launch_naive(const Tensor& a, const Tensor& b, Tensor& out, const MatmulDims& d, cudaStream_t s) {
  const dim3 block(32, 8);
  const dim3 grid(static_cast<unsigned>((d.N + 31) / 32), static_cast<unsigned>((d.M + 7) / 8),
                  static_cast<unsigned>(std::min<int64_t>(d.batch, 65535)));
  matmul_naive_kernel<T, TA, TB><<<grid, block, 0, s>>>(a.data<T>(), b.data<T>(), out.data<T>(), d);
  MINIDL_LAUNCH_CHECK();
}

// ---------------------------------------------------------------- v2_smem_tiled
// What changes: a 32 x 32 block of threads computes a 32 x 32 tile of out, walking K in steps of 32.
// Each step the block copies a 32 x 32 tile of op(a) and of op(b) into shared memory (coalesced:
// consecutive threads read consecutive addresses whichever way the operand is stored), then every
// thread reads its row and column from shared memory. Why faster: each element loaded from global
// memory is used 32 times, so global traffic drops 32-fold; the limit becomes shared-memory bandwidth
// (2 shared loads per FMA), which v3 attacks. Rows are padded to 33 so transposed stores and column
// reads do not hit one bank.
constexpr int kTile = 32;

template <class T, bool TA, bool TB>
__global__ void matmul_smem_tiled_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out,
                                         MatmulDims d) {
  __shared__ T As[kTile][kTile + 1];  // As[m][k] = op(a)(m0 + m, k0 + k)
  __shared__ T Bs[kTile][kTile + 1];  // Bs[k][n] = op(b)(k0 + k, n0 + n)
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kTile, n0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int64_t m = m0 + ty, n = n0 + tx;

  for (int64_t bi = blockIdx.z; bi < d.batch; bi += gridDim.z) {
    const T* ab = a + bi * d.M * d.K;
    const T* bb = b + bi * d.K * d.N;
    T acc = 0;
    for (int64_t k0 = 0; k0 < d.K; k0 += kTile) {
      if (!TA) {  // a stored [M, K]: threads along x read along k
        const int64_t r = m0 + ty, c = k0 + tx;
        As[ty][tx] = (r < d.M && c < d.K) ? ab[r * d.lda + c] : T(0);
      } else {  // a stored [K, M]: threads along x read along m
        const int64_t r = k0 + ty, c = m0 + tx;
        As[tx][ty] = (r < d.K && c < d.M) ? ab[r * d.lda + c] : T(0);
      }
      if (!TB) {  // b stored [K, N]: threads along x read along n
        const int64_t r = k0 + ty, c = n0 + tx;
        Bs[ty][tx] = (r < d.K && c < d.N) ? bb[r * d.ldb + c] : T(0);
      } else {  // b stored [N, K]: threads along x read along k
        const int64_t r = n0 + ty, c = k0 + tx;
        Bs[tx][ty] = (r < d.N && c < d.K) ? bb[r * d.ldb + c] : T(0);
      }
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kTile; ++k) acc += As[ty][k] * Bs[k][tx];
      __syncthreads();
    }
    if (m < d.M && n < d.N) out[(bi * d.M + m) * d.N + n] = acc;
  }
}

template <class T, bool TA, bool TB>
void launch_smem_tiled(const Tensor& a, const Tensor& b, Tensor& out, const MatmulDims& d, cudaStream_t s) {
  const dim3 block(kTile, kTile);
  const dim3 grid(static_cast<unsigned>((d.N + kTile - 1) / kTile), static_cast<unsigned>((d.M + kTile - 1) / kTile),
                  static_cast<unsigned>(std::min<int64_t>(d.batch, 65535)));
  matmul_smem_tiled_kernel<T, TA, TB><<<grid, block, 0, s>>>(a.data<T>(), b.data<T>(), out.data<T>(), d);
  MINIDL_LAUNCH_CHECK();
}

// Calls LAUNCH<T, trans_a, trans_b> for the call's dtype and flags.
template <template <class, bool, bool> class Launch>
bool launch_typed(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b, int64_t max_grid_y) {
  const MatmulDims d = matmul_dims(a, b, out, trans_a);
  if (d.M > max_grid_y) return false;  // more row tiles than gridDim.y allows
  const cudaStream_t s = cuda::stream(out.device().index);
  if (out.dtype() == DType::float32) {
    if (!trans_a && !trans_b) Launch<float, false, false>::run(a, b, out, d, s);
    if (trans_a && !trans_b) Launch<float, true, false>::run(a, b, out, d, s);
    if (!trans_a && trans_b) Launch<float, false, true>::run(a, b, out, d, s);
    if (trans_a && trans_b) Launch<float, true, true>::run(a, b, out, d, s);
    return true;
  }
  if (out.dtype() == DType::float64) {
    if (!trans_a && !trans_b) Launch<double, false, false>::run(a, b, out, d, s);
    if (trans_a && !trans_b) Launch<double, true, false>::run(a, b, out, d, s);
    if (!trans_a && trans_b) Launch<double, false, true>::run(a, b, out, d, s);
    if (trans_a && trans_b) Launch<double, true, true>::run(a, b, out, d, s);
    return true;
  }
  return false;
}

template <class T, bool TA, bool TB>
struct NaiveLaunch {
  static void run(const Tensor& a, const Tensor& b, Tensor& out, const MatmulDims& d, cudaStream_t s) {
    launch_naive<T, TA, TB>(a, b, out, d, s);
  }
};
template <class T, bool TA, bool TB>
struct SmemTiledLaunch {
  static void run(const Tensor& a, const Tensor& b, Tensor& out, const MatmulDims& d, cudaStream_t s) {
    launch_smem_tiled<T, TA, TB>(a, b, out, d, s);
  }
};

bool matmul_v1_naive(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  cuda::set_device(out.device().index);
  if (out.numel() == 0) return is_floating(out.dtype());
  return launch_typed<NaiveLaunch>(a, b, out, trans_a, trans_b, 65535LL * 8);
}

bool matmul_v2_smem_tiled(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  cuda::set_device(out.device().index);
  if (out.numel() == 0) return is_floating(out.dtype());
  return launch_typed<SmemTiledLaunch>(a, b, out, trans_a, trans_b, 65535LL * kTile);
}

// ---------------------------------------------------------------- v3_register_blocked
// What changes: each thread computes an 8 x 8 tile of out in registers from 128 x 128 (or 64 x 64)
// block tiles, reading shared memory as float4 (see cuda/gemm_tiled.cuh). Why faster: 16 shared loads
// feed 64 FMAs (v2: 2 loads per FMA), and wide global loads; it runs near the FP32 FFMA peak's
// practical fraction instead of being bound by shared-memory bandwidth.
bool matmul_v3_register_blocked(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  if (out.dtype() != DType::float32) return false;
  cuda::set_device(out.device().index);
  if (out.numel() == 0) return true;
  return cuda::gemm_register_blocked(cuda::matmul_gemm_batch(a, b, out, trans_a, trans_b), out.device().index);
}

// ---------------------------------------------------------------- cublas
// cuBLAS is column-major. A row-major [R, C] matrix is the column-major [C, R] matrix (its transpose)
// with the same leading dimension, so we ask cuBLAS for out^T = op(b)^T op(a)^T: "A" is our b and "B"
// is our a, dimensions (N, M, K), and each operand keeps its own transpose flag and row length.
// TF32: CUBLAS_DEFAULT_MATH keeps float32 exact; --precision tf32 (MINIDL_TF32=1) selects
// CUBLAS_TF32_TENSOR_OP_MATH.
// The mode is set on the shared handle before every call, so other users of the handle see it too.
// BF16 (--precision bf16, float32 operands only): two paths, and the faster serves each shape
// (cuda/bf16_choice.h: timed once per shape). The bf16 path casts both operands to bfloat16 (two cast
// kernels, contiguous copies of the same [batch, rows, cols] layout) and cublasGemmStridedBatchedEx
// multiplies them on BF16 tensor cores, summing in float32 (CUBLAS_COMPUTE_32F) and writing float32 out:
//   out = op(bf16(a)) op(bf16(b)),  every product exact in float32, the sums rounded as float32.
// The tf32 path is the float32 call with TF32 math. The casts are the price of keeping float32 tensors
// everywhere else (core/precision.h); they cost more than BF16 saves on small products (the captcha
// classifier's [1536, 512] x [512, 37]), and less on large ones (4096^3: 488 against 347 TFLOP/s).
bool matmul_cublas_bf16(const Tensor& a, const Tensor& b, Tensor& out, const MatmulDims& d, bool trans_a,
                        bool trans_b) {
  const int device = out.device().index;
  const Tensor a16 = a.to(DType::bfloat16), b16 = b.to(DType::bfloat16);
  cublasHandle_t h = cuda::cublas_handle(device);
  MINIDL_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
  const float one = 1.0f, zero = 0.0f;
  MINIDL_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(d.N),
      static_cast<int>(d.M), static_cast<int>(d.K), &one, b16.raw_data(), CUDA_R_16BF, static_cast<int>(d.ldb),
      d.K * d.N, a16.raw_data(), CUDA_R_16BF, static_cast<int>(d.lda), d.M * d.K, &zero, out.raw_data(), CUDA_R_32F,
      static_cast<int>(d.N), d.M * d.N, static_cast<int>(d.batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  return true;
}

bool matmul_cublas_float(const Tensor& a, const Tensor& b, Tensor& out, const MatmulDims& d, bool trans_a,
                         bool trans_b, cublasMath_t math);

bool matmul_cublas(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  if (!is_floating(out.dtype())) return false;
  const int device = out.device().index;
  cuda::set_device(device);
  if (out.numel() == 0) return true;
  const MatmulDims d = matmul_dims(a, b, out, trans_a);
  if (!cuda::fits_int(d.M) || !cuda::fits_int(d.N) || !cuda::fits_int(d.K) || !cuda::fits_int(d.batch)) return false;
  if (d.K == 0) {  // an empty sum: out = 0 (cuBLAS would not touch out with k = 0 on every version)
    MINIDL_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0, out.numel() * dtype_size(out.dtype()), cuda::stream(device)));
    return true;
  }
  if (out.dtype() == DType::float32 && cuda::bf16_enabled())
    return cuda::run_faster_of(
        {3, d.batch, d.M, d.N, d.K, trans_a, trans_b}, device,  // 3: matmul (cuda/bf16_choice.h)
        [=] { return str_cat("matmul ", d.batch, "x", d.M, "x", d.N, "x", d.K, trans_a ? ",ta" : "", trans_b ? ",tb" : ""); },
        [&] { return matmul_cublas_bf16(a, b, out, d, trans_a, trans_b); },
        [&] { return matmul_cublas_float(a, b, out, d, trans_a, trans_b, CUBLAS_TF32_TENSOR_OP_MATH); });
  return matmul_cublas_float(a, b, out, d, trans_a, trans_b,
                             cuda::tf32_enabled() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
}

// The float32/float64 call, with cuBLAS math mode `math` (TF32 tensor cores or exact float32).
bool matmul_cublas_float(const Tensor& a, const Tensor& b, Tensor& out, const MatmulDims& d, bool trans_a,
                         bool trans_b, cublasMath_t math) {
  const int device = out.device().index;
  cublasHandle_t h = cuda::cublas_handle(device);
  MINIDL_CUBLAS_CHECK(cublasSetMathMode(h, math));
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int n = static_cast<int>(d.N), m = static_cast<int>(d.M), k = static_cast<int>(d.K);
  const int ldb = static_cast<int>(d.ldb), lda = static_cast<int>(d.lda), batch = static_cast<int>(d.batch);
  if (out.dtype() == DType::float32) {
    const float one = 1.0f, zero = 0.0f;
    MINIDL_CUBLAS_CHECK(cublasSgemmStridedBatched(h, op_b, op_a, n, m, k, &one, b.data<float>(), ldb, d.K * d.N,
                                                  a.data<float>(), lda, d.M * d.K, &zero, out.data<float>(), n,
                                                  d.M * d.N, batch));
  } else {
    const double one = 1.0, zero = 0.0;
    MINIDL_CUBLAS_CHECK(cublasDgemmStridedBatched(h, op_b, op_a, n, m, k, &one, b.data<double>(), ldb, d.K * d.N,
                                                  a.data<double>(), lda, d.M * d.K, &zero, out.data<double>(), n,
                                                  d.M * d.N, batch));
  }
  return true;
}

}  // namespace

void register_matmul_cuda() {
  register_kernel(keys::matmul, DeviceType::cuda, "v1_naive", Priority::reference,
                  "one thread per output element, operands read from global memory (f32, f64)",
                  matmul_v1_naive);
  register_kernel(keys::matmul, DeviceType::cuda, "v2_smem_tiled", Priority::portable,
                  "32x32 shared-memory tiles, one output per thread (f32, f64)", matmul_v2_smem_tiled);
  register_kernel(keys::matmul, DeviceType::cuda, "v3_register_blocked", Priority::tuned,
                  "128x128/64x64 block tiles, 8x8 outputs per thread in registers, float4 loads (f32)",
                  matmul_v3_register_blocked);
  register_kernel(keys::matmul, DeviceType::cuda, "cublas", Priority::preferred,
                  "cuBLAS S/DgemmStridedBatched; exact FP32 by default, TF32 tensor cores under --precision tf32 "
                  "(or MINIDL_TF32=1), BF16 tensor cores (GemmEx, operands cast) under --precision bf16",
                  matmul_cublas);
}

}  // namespace minidl
