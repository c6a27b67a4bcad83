// cuda/bias_relu.cu — the fused bias + ReLU on the GPU: keys "bias_relu" and "bias_relu.backward", one
// kernel name for both, "v1_fused" (float32 and float64; other dtypes decline). The op is ops/bias_relu.cpp,
// the reference cpu/bias_relu_naive.cpp. y, out, g and grad_y are [outer, C, inner] contiguous, bias and
// grad_bias [C] (ops/kernel_signatures.h):
//   forward   out[o, c, i]    = relu(y[o, c, i] + bias[c])                  relu(z) = z > 0 ? z : 0
//   backward  grad_y[o, c, i] = out[o, c, i] > 0 ? g[o, c, i] : 0
//             grad_bias[c]    = sum_{o, i} grad_y[o, c, i]                  (accumulated in double)
//
// Forward: one thread per element, grid-stride; the channel of flat index k is (k / inner) % C.
// Backward: one pass over g and out writes grad_y and adds it up per channel, then a tiny second launch.
// No atomics: the same inputs give the same bits on every run.
//   1. partial sums: each channel's M = outer * inner values are cut into G chunks, and block (channel
//      group, chunk g) writes grad_y over its chunk while adding it up: each thread in double, then the
//      block's threads in a shared-memory tree (half of the sums added to the other half, until one is
//      left), into partial[c][g]. G gives about 4 blocks per multiprocessor: a conv layer has a few dozen
//      channels of up to millions of values, and one block per channel would leave most of the GPU idle
//      (but no block sums fewer than 2048 values, or the partials would cost more than they save).
//   2. finalize: one thread per channel adds its G partials in order and writes grad_bias[c].
// The two layouts of cpu/bias_relu_omp.cpp differ only in which threads of a block share a channel
// (kChannels, a template parameter; the kernel is correct with either, the choice is for coalescing):
//   inner > 1 (after a convolution, [N, C, H*W]): a block is 1 channel x 256 threads; consecutive threads
//     read consecutive values of a plane, and the tree adds up the 256 sums.
//   inner == 1 (after a linear layer, [rows, C]): a channel is a column, C values apart. A block is 32
//     channels x 8 threads each: a warp reads 32 neighbouring columns of one row, and the tree adds up the
//     8 sums of each column.
// The sums are in double, as the reference's, so a float32 grad_bias differs from it only by the order of
// the additions. G depends on the GPU's multiprocessor count: another GPU may differ in the last bit.
// Accumulation convention: every output is overwritten (=).
#include <algorithm>
#include <cstdint>

#include "cuda/device_utils.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

using cuda::global_thread_count;
using cuda::global_thread_index;
using cuda::kBlock;

// ---------------------------------------------------------------- forward

// Index is uint32_t when every index fits 32 bits (a 64-bit division costs several times more), int64_t
// otherwise (cuda::with_index_type).
template <class T, class Index>
__global__ void bias_relu_forward_kernel(const T* __restrict__ y, const T* __restrict__ bias, T* __restrict__ out,
                                         Index total, Index channels, Index inner) {
  for (Index k = blockIdx.x * static_cast<Index>(blockDim.x) + threadIdx.x; k < total;
       k += static_cast<Index>(gridDim.x) * blockDim.x) {
    const T z = y[k] + bias[(k / inner) % channels];
    out[k] = z > T(0) ? z : T(0);
  }
}

template <class T>
void launch_forward(const Tensor& y, const Tensor& bias, Tensor& out, cudaStream_t s) {
  const int64_t total = y.numel(), channels = y.shape()[1], inner = y.shape()[2];
  if (total == 0) return;
  const unsigned grid = cuda::grid_for(total, kBlock);
  cuda::with_index_type(total, [&](auto index) {
    using Index = decltype(index);
    bias_relu_forward_kernel<T, Index><<<grid, kBlock, 0, s>>>(y.data<T>(), bias.data<T>(), out.data<T>(),
                                                               static_cast<Index>(total),
                                                               static_cast<Index>(channels), static_cast<Index>(inner));
  });
  MINIDL_LAUNCH_CHECK();
}

bool bias_relu_v1(const Tensor& y, const Tensor& bias, Tensor& out) {
  const cudaStream_t s = cuda::launch_stream(y);
  return MINIDL_FLOAT_TYPES(y.dtype(), { launch_forward<T>(y, bias, out, s); });
}

// ---------------------------------------------------------------- backward

constexpr int64_t kMinChunk = 2048;  // values per block at least (step 1 of the header)

// Step 1. The block's threads: kChannels channels (threadIdx.x) x kLanes threads along each channel's
// values (threadIdx.y). Block (blockIdx.x, blockIdx.y) covers channels blockIdx.x * kChannels ... and
// values [blockIdx.y * chunk, + chunk) of each, value m of channel c being element (m / inner, c, m % inner).
template <class T, class Index, int kChannels>
__global__ void __launch_bounds__(kBlock) bias_relu_backward_partials(const T* __restrict__ g,
                                                                      const T* __restrict__ out,
                                                                      T* __restrict__ grad_y,
                                                                      double* __restrict__ partial, Index channels,
                                                                      Index inner, Index M, Index chunk) {
  constexpr int kLanes = kBlock / kChannels;
  const Index c = static_cast<Index>(blockIdx.x) * kChannels + threadIdx.x;
  const Index begin = static_cast<Index>(blockIdx.y) * chunk;
  const Index end = M - begin < chunk ? M : begin + chunk;  // begin < M (backward_plan)
  double sum = 0;
  if (c < channels) {
    for (Index m = begin + threadIdx.y; m < end; m += kLanes) {
      const Index o = m / inner, i = m - o * inner;
      const Index k = (o * channels + c) * inner + i;
      const T gk = g[k], outk = out[k];  // both loaded before the select (cpu/bias_relu_omp.cpp's note)
      const T gy = outk > T(0) ? gk : T(0);
      grad_y[k] = gy;
      sum += static_cast<double>(gy);
    }
  }
  // The tree: sums[lane][channel]; at each step the first half of the lanes adds in the second half's sums.
  // Every thread reaches every barrier (the channels past C add zeros).
  __shared__ double sums[kLanes][kChannels];
  sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  for (int half = kLanes / 2; half > 0; half /= 2) {
    if (threadIdx.y < half) sums[threadIdx.y][threadIdx.x] += sums[threadIdx.y + half][threadIdx.x];
    __syncthreads();
  }
  if (threadIdx.y == 0 && c < channels)
    partial[static_cast<int64_t>(c) * gridDim.y + blockIdx.y] = sums[0][threadIdx.x];
}

// Step 2. grad_bias[c] = partial[c][0] + ... + partial[c][G - 1], in that order.
template <class T>
__global__ void bias_relu_backward_finalize(const double* __restrict__ partial, T* __restrict__ grad_bias,
                                            int64_t channels, int64_t G) {
  for (int64_t c = global_thread_index(); c < channels; c += global_thread_count()) {
    double total = 0;
    for (int64_t g = 0; g < G; ++g) total += partial[c * G + g];
    grad_bias[c] = static_cast<T>(total);
  }
}

// The grid of step 1: channel groups of kChannels on x, G chunks of `chunk` values on y (at most 65535),
// with (G - 1) * chunk < M so that every block's chunk starts inside the channel. M > 0.
struct BackwardPlan {
  int64_t groups, G, chunk;
};
BackwardPlan backward_plan(int64_t channels, int64_t M, int channels_per_block, int device) {
  const int64_t groups = (channels + channels_per_block - 1) / channels_per_block;
  const int64_t target_blocks = 4 * static_cast<int64_t>(cuda::properties(device).multiProcessorCount);
  const int64_t min_values = kMinChunk / channels_per_block;  // of each channel, per block
  int64_t G = (target_blocks + groups - 1) / groups;
  G = std::min(G, (M + min_values - 1) / min_values);
  G = std::max<int64_t>(1, std::min<int64_t>(G, 65535));
  const int64_t chunk = (M + G - 1) / G;
  return {groups, (M + chunk - 1) / chunk, chunk};
}

template <class T, int kChannels>
void launch_backward(const Tensor& g, const Tensor& out, Tensor& grad_y, Tensor& grad_bias, int device) {
  const int64_t channels = g.shape()[1], inner = g.shape()[2], M = g.shape()[0] * inner;
  const cudaStream_t s = cuda::stream(device);
  const BackwardPlan plan = backward_plan(channels, M, kChannels, device);
  Tensor partial = empty({channels * plan.G}, TensorOptions(DType::float64, g.device()));
  const dim3 grid(static_cast<unsigned>(plan.groups), static_cast<unsigned>(plan.G));
  const dim3 block(kChannels, kBlock / kChannels);
  cuda::with_index_type(g.numel(), [&](auto index) {
    using Index = decltype(index);
    bias_relu_backward_partials<T, Index, kChannels><<<grid, block, 0, s>>>(
        g.data<T>(), out.data<T>(), grad_y.data<T>(), partial.data<double>(), static_cast<Index>(channels),
        static_cast<Index>(inner), static_cast<Index>(M), static_cast<Index>(plan.chunk));
  });
  MINIDL_LAUNCH_CHECK();
  bias_relu_backward_finalize<T><<<cuda::grid_for(channels, kBlock), kBlock, 0, s>>>(
      partial.data<double>(), grad_bias.data<T>(), channels, plan.G);
  MINIDL_LAUNCH_CHECK();
}

bool bias_relu_backward_v1(const Tensor& g, const Tensor& out, Tensor& grad_y, Tensor& grad_bias) {
  if (!is_floating(g.dtype())) return false;
  const int64_t outer = g.shape()[0], channels = g.shape()[1], inner = g.shape()[2];
  if (inner > 1 && channels > INT32_MAX) return false;  // one channel per block, on the grid's x axis
  const int device = g.device().index;
  const cudaStream_t s = cuda::launch_stream(g);
  if (channels == 0) return true;
  if (outer * inner == 0) {  // sums of no values: grad_bias = 0 (all-zero bits in both dtypes)
    MINIDL_CUDA_CHECK(cudaMemsetAsync(grad_bias.raw_data(), 0, channels * dtype_size(g.dtype()), s));
    return true;
  }
  return MINIDL_FLOAT_TYPES(g.dtype(), {
    if (inner == 1)
      launch_backward<T, 32>(g, out, grad_y, grad_bias, device);
    else
      launch_backward<T, 1>(g, out, grad_y, grad_bias, device);
  });
}

}  // namespace

void register_bias_relu_cuda() {
  register_kernel(keys::bias_relu, DeviceType::cuda, "v1_fused", Priority::portable,
                  "one thread per element, grid-stride (f32, f64)", bias_relu_v1);
  register_kernel(
      keys::bias_relu_backward, DeviceType::cuda, "v1_fused", Priority::portable,
      "grad_y and per-chunk bias sums in one pass (double, shared-memory tree), chunks added in order: no atomics "
      "(f32, f64)",
      bias_relu_backward_v1);
}

}  // namespace minidl
