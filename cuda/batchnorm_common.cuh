// cuda/batchnorm_common.cuh — what the batch normalisation kernels of cuda/batchnorm_v1_two_pass.cu,
// batchnorm_v2_split.cu and batchnorm_cudnn.cu share: the contract of their keys ("batch_norm" (training),
// "batch_norm.inference", "batch_norm.backward", and the fused batch norm + ReLU, "batch_norm_relu" and
// "batch_norm_relu.backward"), the block-wide sum, the [N, C, S] indexing and the ReLU mask.
//
// x is [N, C, S] contiguous (S = H*W, or 1 for [N, C]); per channel c over its M = N*S values
// (ops/kernel_signatures.h):
//   training   mean_c = sum x / M,  var_c = sum (x - mean_c)^2 / M (biased),  invstd_c = 1/sqrt(var_c + eps)
//              y = (x - mean_c) * invstd_c * gamma_c + beta_c;  writes save_mean, save_invstd
//   inference  y = (x - mean_c) / sqrt(var_c + eps) * gamma_c + beta_c   with the given mean, var
//   backward   xhat = (x - mean_c) * invstd_c,  grad_gamma_c = sum grad_y * xhat,  grad_beta_c = sum grad_y,
//              grad_x = gamma_c * invstd_c / M * (M * grad_y - grad_beta_c - xhat * grad_gamma_c)
//   batch_norm_relu           training's y, then y = relu(y) = y > 0 ? y : 0 as it is written
//   batch_norm_relu.backward  backward with grad_y read as grad_y * [y > 0] everywhere (sums and grad_x),
//                             y the forward's output (y > 0 exactly where the normalised value was > 0)
// The ReLU is a template parameter (Relu) of the training kernels: false for batch_norm, true for
// batch_norm_relu, the same code otherwise (the CPU kernels, cpu/norm_*.cpp, do the same).
// Running statistics are not touched here: the op front end updates them from save_mean/save_invstd
// (key "batch_norm.running_stats", cuda/batchnorm_running_stats.cu).
// Included only by .cu files; what it defines is private to each (an unnamed namespace).
#pragma once
#include <cmath>
#include <cstdint>

#include "core/dispatch.h"
#include "cuda/cuda_common.h"
#include "cuda/kernel_helpers.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

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

// batch_norm_relu's ReLU as y is written: relu(v) = v > 0 ? v : 0 when Relu, v itself otherwise.
template <bool Relu, class T>
__device__ __forceinline__ T relu_if(T v) {
  if constexpr (Relu) return v > T(0) ? v : T(0);
  return v;
}

// The gradient a backward kernel reads at `off`: grad_y[off] for batch_norm; grad_y[off] * [y[off] > 0]
// for batch_norm_relu, y its forward's output (y is not read, and may be null, when !Relu). Both values
// are loaded before the select, so the compiler has no reason for a branch around a load.
template <bool Relu, class T, class Index>
__device__ __forceinline__ T masked_grad(const T* __restrict__ gy, const T* __restrict__ y, Index off) {
  if constexpr (Relu) {
    const T g = gy[off], out = y[off];
    return out > T(0) ? g : T(0);
  }
  return gy[off];
}

// [N, C, S] of the x of a call.
struct BnDims {
  int64_t N, C, S;
};
inline BnDims bn_dims(const Tensor& x) { return {x.size(0), x.size(1), x.size(2)}; }

inline bool is_f32_or_f64(const Tensor& t) { return t.dtype() == DType::float32 || t.dtype() == DType::float64; }

}  // namespace

}  // namespace minidl
