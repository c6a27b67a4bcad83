// cuda/batchnorm.cu — batch normalisation on the GPU: keys "batch_norm" (training), "batch_norm.inference",
// "batch_norm.backward". Our own kernels ("v1_two_pass", float32 and float64) and cuDNN peers ("cudnn",
// float32).
//
// x is [N, C, S] contiguous (S = H*W, or 1 for [N, C]); per channel c over its M = N*S values
// (ops/kernel_signatures.h):
//   training   mean_c = sum x / M,  var_c = sum (x - mean_c)^2 / M (biased),  invstd_c = 1/sqrt(var_c + eps)
//              y = (x - mean_c) * invstd_c * gamma_c + beta_c;  writes save_mean, save_invstd
//   inference  y = (x - mean_c) / sqrt(var_c + eps) * gamma_c + beta_c   with the given mean, var
//   backward   xhat = (x - mean_c) * invstd_c,  grad_gamma_c = sum grad_y * xhat,  grad_beta_c = sum grad_y,
//              grad_x = gamma_c * invstd_c / M * (M * grad_y - grad_beta_c - xhat * grad_gamma_c)
// Running statistics are not touched here: the op front end updates them from save_mean/save_invstd.
// Accumulation convention: outputs are overwritten (=).
#include <cmath>
#include <cstdint>

#include "core/dispatch.h"
#include "cuda/cuda_common.h"
#include "cuda/dense_common.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// ---------------------------------------------------------------- v1_two_pass
// One block per channel. Each thread sums a strided share of the channel's M values, then the block
// combines them: shuffles within each warp, one partial per warp in shared memory, and every thread
// adds the (at most 32) partials in the same order, so all threads hold the same total. Two passes
// for the variance (first the mean, then the squared deviations) avoid the cancellation of
// E[x^2] - E[x]^2. Sums are kept in double: the passes are memory-bound, so this costs no time and
// keeps float32 statistics accurate for large M. One block per channel leaves most of the GPU idle
// when C is small; a later version can split each channel over several blocks.
constexpr int kReduceBlock = 512;
constexpr int kElementwiseBlock = 256;

__device__ __forceinline__ double warp_sum(double v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// The sum of v over the block, returned to every thread. All threads of the block must call it.
__device__ double block_sum(double v) {
  __shared__ double partial[32];
  v = warp_sum(v);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();  // an earlier call's readers are done with `partial`
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  double total = 0;
  const int warps = (blockDim.x + 31) / 32;
  for (int i = 0; i < warps; ++i) total += partial[i];
  return total;
}

// Element i (0 <= i < N*S) of channel c lives at (i / S) * C * S + c * S + i % S.
__device__ __forceinline__ int64_t channel_offset(int64_t i, int64_t c, int64_t C, int64_t S) {
  const int64_t n = i / S;
  return (n * C + c) * S + (i - n * S);
}

template <class T>
__global__ void __launch_bounds__(kReduceBlock) batch_norm_forward_kernel(
    const T* __restrict__ x, const T* __restrict__ gamma, const T* __restrict__ beta, double eps, T* __restrict__ y,
    T* __restrict__ save_mean, T* __restrict__ save_invstd, int64_t N, int64_t C, int64_t S) {
  const int64_t c = blockIdx.x, M = N * S;
  double sum = 0;
  for (int64_t i = threadIdx.x; i < M; i += blockDim.x) sum += static_cast<double>(x[channel_offset(i, c, C, S)]);
  const double mean = block_sum(sum) / static_cast<double>(M);
  double sq = 0;
  for (int64_t i = threadIdx.x; i < M; i += blockDim.x) {
    const double d = static_cast<double>(x[channel_offset(i, c, C, S)]) - mean;
    sq += d * d;
  }
  const double var = block_sum(sq) / static_cast<double>(M);
  const double invstd = 1.0 / std::sqrt(var + eps);
  if (threadIdx.x == 0) {
    save_mean[c] = static_cast<T>(mean);
    save_invstd[c] = static_cast<T>(invstd);
  }
  const T m = static_cast<T>(mean), scale = static_cast<T>(invstd) * gamma[c], shift = beta[c];
  for (int64_t i = threadIdx.x; i < M; i += blockDim.x) {
    const int64_t off = channel_offset(i, c, C, S);
    y[off] = (x[off] - m) * scale + shift;
  }
}

template <class T>
__global__ void batch_norm_inference_kernel(const T* __restrict__ x, const T* __restrict__ gamma,
                                            const T* __restrict__ beta, const T* __restrict__ mean,
                                            const T* __restrict__ var, double eps, T* __restrict__ y, int64_t total,
                                            int64_t C, int64_t S) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = (i / S) % C;
    const T invstd = T(1) / std::sqrt(var[c] + static_cast<T>(eps));
    y[i] = (x[i] - mean[c]) * invstd * gamma[c] + beta[c];
  }
}

template <class T>
__global__ void __launch_bounds__(kReduceBlock) batch_norm_backward_kernel(
    const T* __restrict__ x, const T* __restrict__ gy, const T* __restrict__ gamma, const T* __restrict__ save_mean,
    const T* __restrict__ save_invstd, T* __restrict__ gx, T* __restrict__ grad_gamma, T* __restrict__ grad_beta,
    int64_t N, int64_t C, int64_t S) {
  const int64_t c = blockIdx.x, M = N * S;
  const double mean = save_mean[c], invstd = save_invstd[c];
  double sum_gy = 0, sum_gy_xhat = 0;
  for (int64_t i = threadIdx.x; i < M; i += blockDim.x) {
    const int64_t off = channel_offset(i, c, C, S);
    const double g = gy[off];
    sum_gy += g;
    sum_gy_xhat += g * (static_cast<double>(x[off]) - mean) * invstd;
  }
  const double gb = block_sum(sum_gy);
  const double gg = block_sum(sum_gy_xhat);
  if (threadIdx.x == 0) {
    grad_gamma[c] = static_cast<T>(gg);
    grad_beta[c] = static_cast<T>(gb);
  }
  // grad_x = k * (M * gy - gb - xhat * gg), k = gamma * invstd / M
  const double k = static_cast<double>(gamma[c]) * invstd / static_cast<double>(M);
  for (int64_t i = threadIdx.x; i < M; i += blockDim.x) {
    const int64_t off = channel_offset(i, c, C, S);
    const double xhat = (static_cast<double>(x[off]) - mean) * invstd;
    gx[off] = static_cast<T>(k * (static_cast<double>(M) * static_cast<double>(gy[off]) - gb - xhat * gg));
  }
}

// [N, C, S] of the x of a call.
struct BnDims {
  int64_t N, C, S;
};
BnDims bn_dims(const Tensor& x) { return {x.size(0), x.size(1), x.size(2)}; }

bool is_f32_or_f64(const Tensor& t) { return t.dtype() == DType::float32 || t.dtype() == DType::float64; }

template <class T>
void launch_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y, Tensor& save_mean,
                    Tensor& save_invstd, const BnDims& d, cudaStream_t s) {
  batch_norm_forward_kernel<T><<<static_cast<unsigned>(d.C), kReduceBlock, 0, s>>>(
      x.data<T>(), gamma.data<T>(), beta.data<T>(), eps, y.data<T>(), save_mean.data<T>(), save_invstd.data<T>(), d.N,
      d.C, d.S);
  MINIDL_LAUNCH_CHECK();
}

bool batch_norm_v1(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y, Tensor& save_mean,
                   Tensor& save_invstd) {
  if (!is_f32_or_f64(x)) return false;
  const BnDims d = bn_dims(x);
  if (d.C > INT32_MAX) return false;  // one block per channel
  const int device = x.device().index;
  cuda::set_device(device);
  if (d.C == 0) return true;
  if (d.N * d.S == 0) return false;  // statistics of no values: leave it to the reference's definition
  if (x.dtype() == DType::float32)
    launch_forward<float>(x, gamma, beta, eps, y, save_mean, save_invstd, d, cuda::stream(device));
  else
    launch_forward<double>(x, gamma, beta, eps, y, save_mean, save_invstd, d, cuda::stream(device));
  return true;
}

bool batch_norm_inference_v1(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                             const Tensor& var, double eps, Tensor& y) {
  if (!is_f32_or_f64(x)) return false;
  const BnDims d = bn_dims(x);
  const int device = x.device().index;
  cuda::set_device(device);
  const int64_t total = x.numel();
  if (total == 0) return true;
  const cudaStream_t s = cuda::stream(device);
  const unsigned grid = cuda::grid_for(total, kElementwiseBlock);
  if (x.dtype() == DType::float32)
    batch_norm_inference_kernel<float><<<grid, kElementwiseBlock, 0, s>>>(
        x.data<float>(), gamma.data<float>(), beta.data<float>(), mean.data<float>(), var.data<float>(), eps,
        y.data<float>(), total, d.C, d.S);
  else
    batch_norm_inference_kernel<double><<<grid, kElementwiseBlock, 0, s>>>(
        x.data<double>(), gamma.data<double>(), beta.data<double>(), mean.data<double>(), var.data<double>(), eps,
        y.data<double>(), total, d.C, d.S);
  MINIDL_LAUNCH_CHECK();
  return true;
}

template <class T>
void launch_backward(const Tensor& x, const Tensor& gy, const Tensor& gamma, const Tensor& save_mean,
                     const Tensor& save_invstd, Tensor& gx, Tensor& grad_gamma, Tensor& grad_beta, const BnDims& d,
                     cudaStream_t s) {
  batch_norm_backward_kernel<T><<<static_cast<unsigned>(d.C), kReduceBlock, 0, s>>>(
      x.data<T>(), gy.data<T>(), gamma.data<T>(), save_mean.data<T>(), save_invstd.data<T>(), gx.data<T>(),
      grad_gamma.data<T>(), grad_beta.data<T>(), d.N, d.C, d.S);
  MINIDL_LAUNCH_CHECK();
}

bool batch_norm_backward_v1(const Tensor& x, const Tensor& grad_y, const Tensor& gamma, const Tensor& save_mean,
                            const Tensor& save_invstd, Tensor& grad_x, Tensor& grad_gamma, Tensor& grad_beta) {
  if (!is_f32_or_f64(x)) return false;
  const BnDims d = bn_dims(x);
  if (d.C > INT32_MAX) return false;
  const int device = x.device().index;
  cuda::set_device(device);
  if (d.C == 0) return true;
  if (d.N * d.S == 0) return false;
  if (x.dtype() == DType::float32)
    launch_backward<float>(x, grad_y, gamma, save_mean, save_invstd, grad_x, grad_gamma, grad_beta, d,
                           cuda::stream(device));
  else
    launch_backward<double>(x, grad_y, gamma, save_mean, save_invstd, grad_x, grad_gamma, grad_beta, d,
                            cuda::stream(device));
  return true;
}

#ifdef MINIDL_WITH_CUDNN
// ---------------------------------------------------------------- cudnn
// CUDNN_BATCHNORM_SPATIAL (statistics per channel over N, H, W) with x [N, C, S] described as NCHW
// [N, C, S, 1]; gamma, beta and the statistics use the derived [1, C, 1, 1] descriptor. Training
// passes no running-statistics buffers (NULL, factor 0): the front end updates them itself from
// save_mean / save_invstd, which cuDNN computes exactly as we define them (biased variance, and
// 1/sqrt(var + eps)). The backward pass is given save_mean / save_invstd, so it does not recompute
// them; cuDNN still wants an epsilon, which it does not use then (the signature carries none).
// cuDNN requires eps >= CUDNN_BN_MIN_EPSILON; smaller values decline.
using cuda::CudnnTensorDesc;

struct BnCall {
  CudnnTensorDesc x_desc;
  CudnnTensorDesc param_desc;  // [1, C, 1, 1]
  explicit BnCall(const BnDims& d) : x_desc(int(d.N), int(d.C), int(d.S), 1) {
    MINIDL_CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(param_desc.get(), x_desc.get(), CUDNN_BATCHNORM_SPATIAL));
  }
};

bool cudnn_accepts(const Tensor& x) {
  if (x.dtype() != DType::float32 || x.numel() == 0 || !cuda::fits_int(x.numel())) return false;
  for (int64_t s : x.shape())
    if (!cuda::fits_int(s)) return false;
  return true;
}

bool batch_norm_cudnn(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                      Tensor& save_mean, Tensor& save_invstd) {
  if (!cudnn_accepts(x) || eps < CUDNN_BN_MIN_EPSILON) return false;
  const int device = x.device().index;
  cuda::set_device(device);
  const BnCall call(bn_dims(x));
  const float one = 1.0f, zero = 0.0f;
  MINIDL_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
      cuda::cudnn_handle(device), CUDNN_BATCHNORM_SPATIAL, &one, &zero, call.x_desc.get(), x.raw_data(),
      call.x_desc.get(), y.raw_data(), call.param_desc.get(), gamma.raw_data(), beta.raw_data(),
      /*exponentialAverageFactor=*/0.0, /*resultRunningMean=*/nullptr, /*resultRunningVariance=*/nullptr, eps,
      save_mean.raw_data(), save_invstd.raw_data()));
  return true;
}

bool batch_norm_inference_cudnn(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                                const Tensor& var, double eps, Tensor& y) {
  if (!cudnn_accepts(x) || eps < CUDNN_BN_MIN_EPSILON) return false;
  const int device = x.device().index;
  cuda::set_device(device);
  const BnCall call(bn_dims(x));
  const float one = 1.0f, zero = 0.0f;
  MINIDL_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(
      cuda::cudnn_handle(device), CUDNN_BATCHNORM_SPATIAL, &one, &zero, call.x_desc.get(), x.raw_data(),
      call.x_desc.get(), y.raw_data(), call.param_desc.get(), gamma.raw_data(), beta.raw_data(), mean.raw_data(),
      var.raw_data(), eps));
  return true;
}

bool batch_norm_backward_cudnn(const Tensor& x, const Tensor& grad_y, const Tensor& gamma, const Tensor& save_mean,
                               const Tensor& save_invstd, Tensor& grad_x, Tensor& grad_gamma, Tensor& grad_beta) {
  if (!cudnn_accepts(x)) return false;
  const int device = x.device().index;
  cuda::set_device(device);
  const BnCall call(bn_dims(x));
  const float one = 1.0f, zero = 0.0f;
  // Not used when the saved statistics are given; any value >= CUDNN_BN_MIN_EPSILON is valid.
  const double unused_eps = 1e-5;
  MINIDL_CUDNN_CHECK(cudnnBatchNormalizationBackward(
      cuda::cudnn_handle(device), CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, call.x_desc.get(), x.raw_data(),
      call.x_desc.get(), grad_y.raw_data(), call.x_desc.get(), grad_x.raw_data(), call.param_desc.get(),
      gamma.raw_data(), grad_gamma.raw_data(), grad_beta.raw_data(), unused_eps, save_mean.raw_data(),
      save_invstd.raw_data()));
  return true;
}
#endif  // MINIDL_WITH_CUDNN

}  // namespace

void register_batchnorm_kernels_cuda() {
  register_kernel<BatchNormKernel>("batch_norm", DeviceType::cuda, "v1_two_pass", 10,
                                   "one block per channel, two-pass mean/variance, warp-shuffle reductions (f32, f64)",
                                   batch_norm_v1);
  register_kernel<BatchNormInferenceKernel>("batch_norm.inference", DeviceType::cuda, "v1_two_pass", 10,
                                            "one thread per element with the given statistics (f32, f64)",
                                            batch_norm_inference_v1);
  register_kernel<BatchNormBackwardKernel>("batch_norm.backward", DeviceType::cuda, "v1_two_pass", 10,
                                           "one block per channel: both sums in one pass, then grad_x (f32, f64)",
                                           batch_norm_backward_v1);
#ifdef MINIDL_WITH_CUDNN
  register_kernel<BatchNormKernel>("batch_norm", DeviceType::cuda, "cudnn", 20,
                                   "cudnnBatchNormalizationForwardTraining, SPATIAL, no running stats (f32)",
                                   batch_norm_cudnn);
  register_kernel<BatchNormInferenceKernel>("batch_norm.inference", DeviceType::cuda, "cudnn", 20,
                                            "cudnnBatchNormalizationForwardInference, SPATIAL (f32)",
                                            batch_norm_inference_cudnn);
  register_kernel<BatchNormBackwardKernel>("batch_norm.backward", DeviceType::cuda, "cudnn", 20,
                                           "cudnnBatchNormalizationBackward, SPATIAL, saved statistics (f32)",
                                           batch_norm_backward_cudnn);
#endif
}

}  // namespace minidl
