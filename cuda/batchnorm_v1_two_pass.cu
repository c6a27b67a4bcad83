// cuda/batchnorm_v1_two_pass.cu — "v1_two_pass": batch normalisation on the GPU with one block per channel
// (float32 and float64; batch_norm and batch_norm_relu under the same name). The contract of the keys is in
// cuda/batchnorm_common.cuh. Running statistics are not touched here: the op front end updates them from
// save_mean/save_invstd. Accumulation convention: outputs are overwritten (=).
#include <cmath>
#include <cstdint>

#include "core/dispatch.h"
#include "cuda/batchnorm_common.cuh"
#include "cuda/cuda_common.h"
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

template <class T, bool Relu>
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
    y[off] = relu_if<Relu>((x[off] - m) * scale + shift);
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

// y: the forward's output when Relu (the mask), unused otherwise.
template <class T, bool Relu>
__global__ void __launch_bounds__(kReduceBlock) batch_norm_backward_kernel(
    const T* __restrict__ x, const T* __restrict__ y, const T* __restrict__ gy, const T* __restrict__ gamma,
    const T* __restrict__ save_mean, const T* __restrict__ save_invstd, T* __restrict__ gx, T* __restrict__ grad_gamma,
    T* __restrict__ grad_beta, int64_t N, int64_t C, int64_t S) {
  const int64_t c = blockIdx.x, M = N * S;
  const double mean = save_mean[c], invstd = save_invstd[c];
  double sum_gy = 0, sum_gy_xhat = 0;
  for (int64_t i = threadIdx.x; i < M; i += blockDim.x) {
    const int64_t off = channel_offset(i, c, C, S);
    const double g = masked_grad<Relu>(gy, y, off);
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
    const double g = masked_grad<Relu>(gy, y, off);
    gx[off] = static_cast<T>(k * (static_cast<double>(M) * g - gb - xhat * gg));
  }
}

template <class T, bool Relu>
void launch_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y, Tensor& save_mean,
                    Tensor& save_invstd, const BnDims& d, cudaStream_t s) {
  batch_norm_forward_kernel<T, Relu><<<static_cast<unsigned>(d.C), kReduceBlock, 0, s>>>(
      x.data<T>(), gamma.data<T>(), beta.data<T>(), eps, y.data<T>(), save_mean.data<T>(), save_invstd.data<T>(), d.N,
      d.C, d.S);
  MINIDL_LAUNCH_CHECK();
}

// batch_norm (Relu false) and batch_norm_relu (Relu true).
template <bool Relu>
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
    launch_forward<float, Relu>(x, gamma, beta, eps, y, save_mean, save_invstd, d, cuda::stream(device));
  else
    launch_forward<double, Relu>(x, gamma, beta, eps, y, save_mean, save_invstd, d, cuda::stream(device));
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

// y: the forward's output when Relu, an undefined tensor otherwise.
template <class T, bool Relu>
void launch_backward(const Tensor& x, const Tensor& y, const Tensor& gy, const Tensor& gamma, const Tensor& save_mean,
                     const Tensor& save_invstd, Tensor& gx, Tensor& grad_gamma, Tensor& grad_beta, const BnDims& d,
                     cudaStream_t s) {
  const T* mask = Relu ? y.data<T>() : nullptr;
  batch_norm_backward_kernel<T, Relu><<<static_cast<unsigned>(d.C), kReduceBlock, 0, s>>>(
      x.data<T>(), mask, gy.data<T>(), gamma.data<T>(), save_mean.data<T>(), save_invstd.data<T>(), gx.data<T>(),
      grad_gamma.data<T>(), grad_beta.data<T>(), d.N, d.C, d.S);
  MINIDL_LAUNCH_CHECK();
}

// The backward of batch_norm (Relu false, y undefined) or of batch_norm_relu (Relu true, y its output).
template <bool Relu>
bool backward_v1(const Tensor& x, const Tensor& y, const Tensor& grad_y, const Tensor& gamma, const Tensor& save_mean,
                 const Tensor& save_invstd, Tensor& grad_x, Tensor& grad_gamma, Tensor& grad_beta) {
  if (!is_f32_or_f64(x)) return false;
  const BnDims d = bn_dims(x);
  if (d.C > INT32_MAX) return false;
  const int device = x.device().index;
  cuda::set_device(device);
  if (d.C == 0) return true;
  if (d.N * d.S == 0) return false;
  if (x.dtype() == DType::float32)
    launch_backward<float, Relu>(x, y, grad_y, gamma, save_mean, save_invstd, grad_x, grad_gamma, grad_beta, d,
                                 cuda::stream(device));
  else
    launch_backward<double, Relu>(x, y, grad_y, gamma, save_mean, save_invstd, grad_x, grad_gamma, grad_beta, d,
                                  cuda::stream(device));
  return true;
}

bool batch_norm_backward_v1(const Tensor& x, const Tensor& grad_y, const Tensor& gamma, const Tensor& save_mean,
                            const Tensor& save_invstd, Tensor& grad_x, Tensor& grad_gamma, Tensor& grad_beta) {
  return backward_v1<false>(x, Tensor(), grad_y, gamma, save_mean, save_invstd, grad_x, grad_gamma, grad_beta);
}

bool batch_norm_relu_backward_v1(const Tensor& x, const Tensor& y, const Tensor& grad_y, const Tensor& gamma,
                                 const Tensor& save_mean, const Tensor& save_invstd, Tensor& grad_x,
                                 Tensor& grad_gamma, Tensor& grad_beta) {
  return backward_v1<true>(x, y, grad_y, gamma, save_mean, save_invstd, grad_x, grad_gamma, grad_beta);
}

}  // namespace

void register_batchnorm_v1_two_pass_cuda() {
  register_kernel(keys::batch_norm, DeviceType::cuda, "v1_two_pass", Priority::portable,
                  "one block per channel, two-pass mean/variance, warp-shuffle reductions (f32, f64)",
                  batch_norm_v1<false>);
  register_kernel(keys::batch_norm_inference, DeviceType::cuda, "v1_two_pass", Priority::portable,
                  "one thread per element with the given statistics (f32, f64)",
                  batch_norm_inference_v1);
  register_kernel(keys::batch_norm_backward, DeviceType::cuda, "v1_two_pass", Priority::portable,
                  "one block per channel: both sums in one pass, then grad_x (f32, f64)",
                  batch_norm_backward_v1);
  // batch_norm_relu: the same kernels with the ReLU (Relu = true) under the same names and priorities, so
  // --kernel batch_norm_relu=v1_two_pass selects both of its stages.
  register_kernel(keys::batch_norm_relu, DeviceType::cuda, "v1_two_pass", Priority::portable,
                  "v1_two_pass with relu(y) as y is written (f32, f64)", batch_norm_v1<true>);
  register_kernel(keys::batch_norm_relu_backward, DeviceType::cuda, "v1_two_pass", Priority::portable,
                  "v1_two_pass reading grad_y * [y > 0] (f32, f64)",
                  batch_norm_relu_backward_v1);
}

}  // namespace minidl
