// cuda/batchnorm_cudnn.cu — "cudnn": batch normalisation through cuDNN (keys "batch_norm",
// "batch_norm.inference", "batch_norm.backward"; float32; not batch_norm_relu). The contract of the keys is
// in cuda/batchnorm_common.cuh. Built only with cuDNN (MINIDL_WITH_CUDNN).
#ifdef MINIDL_WITH_CUDNN
#include <cstdint>

#include "core/dispatch.h"
#include "cuda/batchnorm_common.cuh"
#include "cuda/cuda_common.h"
#include "cuda/kernel_helpers.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

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

}  // namespace

void register_batchnorm_cudnn_cuda() {
  register_kernel(keys::batch_norm, DeviceType::cuda, "cudnn", Priority::tuned,
                  "cudnnBatchNormalizationForwardTraining, SPATIAL, no running stats (f32)",
                  batch_norm_cudnn);
  register_kernel(keys::batch_norm_inference, DeviceType::cuda, "cudnn", Priority::tuned,
                  "cudnnBatchNormalizationForwardInference, SPATIAL (f32)",
                  batch_norm_inference_cudnn);
  register_kernel(keys::batch_norm_backward, DeviceType::cuda, "cudnn", Priority::tuned,
                  "cudnnBatchNormalizationBackward, SPATIAL, saved statistics (f32)",
                  batch_norm_backward_cudnn);
}

}  // namespace minidl
#endif  // MINIDL_WITH_CUDNN
