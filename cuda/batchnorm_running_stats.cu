// cuda/batchnorm_running_stats.cu — "per_channel": batch norm's running statistics, updated in place
// after a training call, one thread per channel. Accumulation convention: running_mean and running_var
// are read and rewritten (the key's in-place contract, ops/kernel_signatures.h).
//
// From the training call's save_mean, save_invstd over its M values per channel:
//   var_c          = 1 / save_invstd_c^2 - eps                           (the biased batch variance)
//   running_mean_c = (1 - momentum) * running_mean_c + momentum * save_mean_c
//   running_var_c  = (1 - momentum) * running_var_c  + momentum * var_c * M / (M - 1)
// The arithmetic is in double, as the CPU reference's (cpu/norm_naive.cpp). Either running tensor may be
// absent (a null pointer here). One launch for both tensors, where the same update written as
// elementwise ops is eleven launches per batch-norm layer.
#include "cuda/device_utils.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

using cuda::global_thread_count;
using cuda::global_thread_index;
using cuda::kBlock;

template <class T>
__global__ void running_stats_kernel(const T* __restrict__ save_mean, const T* __restrict__ save_invstd,
                                     int64_t channels, double momentum, double eps, double unbias, T* running_mean,
                                     T* running_var) {
  for (int64_t c = global_thread_index(); c < channels; c += global_thread_count()) {
    if (running_mean)
      running_mean[c] = static_cast<T>((1 - momentum) * static_cast<double>(running_mean[c]) +
                                       momentum * static_cast<double>(save_mean[c]));
    if (running_var) {
      const double invstd = save_invstd[c];
      const double var = 1.0 / (invstd * invstd) - eps;
      running_var[c] = static_cast<T>((1 - momentum) * static_cast<double>(running_var[c]) + momentum * var * unbias);
    }
  }
}

bool running_stats_per_channel(const Tensor& save_mean, const Tensor& save_invstd, double momentum, double eps,
                               int64_t count, Tensor& running_mean, Tensor& running_var) {
  const int64_t channels = save_mean.numel();
  if (channels == 0) return true;
  const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
  cudaStream_t s = cuda::launch_stream(save_mean);
  return MINIDL_FLOAT_TYPES(save_mean.dtype(), {
    running_stats_kernel<T><<<cuda::grid_for(channels, kBlock), kBlock, 0, s>>>(
        save_mean.data<T>(), save_invstd.data<T>(), channels, momentum, eps, unbias,
        running_mean.defined() ? running_mean.data<T>() : nullptr,
        running_var.defined() ? running_var.data<T>() : nullptr);
    MINIDL_LAUNCH_CHECK();
  });
}

}  // namespace

void register_batchnorm_running_stats_cuda() {
  register_kernel(keys::batch_norm_running_stats, DeviceType::cuda, "per_channel", Priority::portable,
                  "one thread per channel, both running tensors in one launch (f32, f64)",
                  running_stats_per_channel);
}

}  // namespace minidl
