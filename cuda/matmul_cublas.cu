// cuda/matmul_cublas.cu — key "matmul" on the GPU, cublas: cuBLAS strided-batched GEMM (float32,
// float64; TF32 or BF16 tensor cores on request)
// Batched, row-major, with transpose flags (ops/kernel_signatures.h):
//
//     out[i] = op(a[i]) op(b[i]),   op(a) = trans_a ? a^T : a  [M, K],   op(b) = trans_b ? b^T : b  [K, N]
//
// Rungs of the GEMM ladder (docs/gemm-ladder.md): cuda/matmul_v1_naive.cu, matmul_v2_smem_tiled.cu,
// matmul_v3_register_blocked.cu, then cuda/matmul_v4_warptiled.cu ... matmul_tf32_wgmma.cu; the vendor
// kernel is cuda/matmul_cublas.cu. Accumulation convention: out is overwritten (=).
#include <cstdint>

#include "core/dispatch.h"
#include "cuda/bf16_choice.h"
#include "cuda/cuda_common.h"
#include "cuda/kernel_helpers.h"
#include "cuda/matmul_dims.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

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

void register_matmul_cublas_cuda() {
  register_kernel(keys::matmul, DeviceType::cuda, "cublas", Priority::preferred,
                  "cuBLAS S/DgemmStridedBatched; exact FP32 by default, TF32 tensor cores under --precision tf32 "
                  "(or MINIDL_TF32=1), BF16 tensor cores (GemmEx, operands cast) under --precision bf16",
                  matmul_cublas);
}

}  // namespace minidl
