// cuda/batchnorm.cu — batch normalisation on the GPU: keys "batch_norm" (training), "batch_norm.inference",
// "batch_norm.backward", and the fused batch norm + ReLU, "batch_norm_relu" and "batch_norm_relu.backward".
// Our own kernels ("v1_two_pass": one block per channel; "v2_split": each channel over many blocks;
// float32 and float64, both for batch_norm and batch_norm_relu under the same names) and cuDNN peers
// ("cudnn", float32, batch_norm only).
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

// [N, C, S] of the x of a call.
struct BnDims {
  int64_t N, C, S;
};
BnDims bn_dims(const Tensor& x) { return {x.size(0), x.size(1), x.size(2)}; }

bool is_f32_or_f64(const Tensor& t) { return t.dtype() == DType::float32 || t.dtype() == DType::float64; }

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

// ---------------------------------------------------------------- v2_split
// v1 gives each channel one block: the first layers of a CNN have 32 or 64 channels of millions of
// values each, so 32 of the H200's 132 multiprocessors do all the work. v2 splits every channel over
// G blocks and runs three launches (the statistics must be complete before any output is written):
//   1. partial sums: block (g, c) of a [G, C] grid sums chunk g of channel c's M = N*S values into
//      partial[c][g] (in double). Forward: s1 = sum (x - K_c) and s2 = sum (x - K_c)^2 with the shift
//      K_c = x[0, c, 0]; backward: sum gy and sum gy * (x - mean_c).
//   2. finalize: one thread per channel adds its G partials in a fixed order (deterministic results)
//      and derives the statistics and the per-channel coefficients of step 3.
//   3. apply: one thread per element: y = (x - mean_c) * scale_c + beta_c with scale_c = invstd_c * gamma_c,
//      or grad_x = A_c * gy + B_c * (x - mean_c) + D_c (the v1 formula regrouped, below).
// batch_norm_relu clamps y in step 3, and its backward reads gy * [y > 0] in steps 1 and 3: one more
// tensor read in each of the two passes, in place of the separate relu_backward pass of the unfused pair.
// Inference (given mean and var) needs only the per-channel scale and the apply pass.
// Forward reads x twice and writes y once; backward reads x and gy twice and writes grad_x once.
// The variance comes from one pass: var = s2 / M - (s1 / M)^2. Without the shift this is
// E[x^2] - E[x]^2, which cancels catastrophically when |mean| >> std; around K_c (a value of the
// channel, so |K_c - mean| is a few std in practice) and in double it is accurate.
constexpr int kSplitBlock = 256;
constexpr int64_t kMinChunk = 2048;  // values per block at least: short chunks would only add partials

// Chunks per channel: enough blocks for about 4 per multiprocessor, no chunk shorter than kMinChunk.
int64_t split_chunks(int64_t C, int64_t M, int device) {
  const int64_t target_blocks = 4 * static_cast<int64_t>(cuda::properties(device).multiProcessorCount);
  int64_t G = (target_blocks + C - 1) / C;
  const int64_t by_size = (M + kMinChunk - 1) / kMinChunk;
  if (G > by_size) G = by_size;
  if (G > 65535) G = 65535;
  return G < 1 ? 1 : G;
}

// The chunk length for G blocks per channel, and G recomputed from it so that every block's chunk
// starts inside the channel ((G - 1) * chunk < M).
struct SplitPlan {
  int64_t G, chunk;
};
SplitPlan split_plan(int64_t C, int64_t M, int device) {
  const int64_t G = split_chunks(C, M, device);
  const int64_t chunk = (M + G - 1) / G;
  return {(M + chunk - 1) / chunk, chunk};
}

// Element i of channel c as in channel_offset, with 32-bit index arithmetic (the launcher checks that
// M fits): a 64-bit division costs several times more instructions than the load it addresses.
__device__ __forceinline__ int64_t channel_offset32(uint32_t i, int64_t c, int64_t C, uint32_t S) {
  const uint32_t n = i / S;
  return (static_cast<int64_t>(n) * C + c) * S + (i - n * S);
}

template <class T>
__global__ void __launch_bounds__(kSplitBlock) bn_forward_partials(const T* __restrict__ x, int64_t C, uint32_t S,
                                                                   uint32_t M, uint32_t chunk,
                                                                   double* __restrict__ partial) {
  const int64_t c = blockIdx.y, G = gridDim.x, g = blockIdx.x;
  const double K = x[c * S];  // x[0, c, 0]
  const uint32_t begin = static_cast<uint32_t>(g) * chunk;
  const uint32_t end = M - begin < chunk ? M : begin + chunk;  // begin < M (split_plan)
  double s1 = 0, s2 = 0;
  for (uint32_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const double d = static_cast<double>(x[channel_offset32(i, c, C, S)]) - K;
    s1 += d;
    s2 += d * d;
  }
  s1 = block_sum(s1);
  s2 = block_sum(s2);
  if (threadIdx.x == 0) {
    partial[(2 * c) * G + g] = s1;
    partial[(2 * c + 1) * G + g] = s2;
  }
}

template <class T>
__global__ void bn_forward_finalize(const T* __restrict__ x, const T* __restrict__ gamma,
                                    const double* __restrict__ partial, int64_t C, int64_t S, int64_t M, int64_t G,
                                    double eps, T* __restrict__ save_mean, T* __restrict__ save_invstd,
                                    T* __restrict__ scale) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  double s1 = 0, s2 = 0;
  for (int64_t g = 0; g < G; ++g) {
    s1 += partial[(2 * c) * G + g];
    s2 += partial[(2 * c + 1) * G + g];
  }
  const double shifted_mean = s1 / static_cast<double>(M);
  double var = s2 / static_cast<double>(M) - shifted_mean * shifted_mean;
  if (var < 0) var = 0;  // rounding of an (almost) constant channel
  const double mean = static_cast<double>(x[c * S]) + shifted_mean;
  const double invstd = 1.0 / sqrt(var + eps);
  save_mean[c] = static_cast<T>(mean);
  save_invstd[c] = static_cast<T>(invstd);
  scale[c] = static_cast<T>(invstd * static_cast<double>(gamma[c]));
}

// y = (x - mean_c) * scale_c + beta_c over all N*C*S elements in memory order (then relu(y) when Relu).
// Index is uint32_t when the tensor has fewer than 2^32 elements (cheaper division), else int64_t.
template <class T, class Index, bool Relu>
__global__ void bn_forward_apply(const T* __restrict__ x, const T* __restrict__ mean, const T* __restrict__ scale,
                                 const T* __restrict__ beta, T* __restrict__ y, Index total, Index C, Index S) {
  for (Index i = blockIdx.x * static_cast<Index>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<Index>(gridDim.x) * blockDim.x) {
    const Index c = (i / S) % C;
    y[i] = relu_if<Relu>((x[i] - mean[c]) * scale[c] + beta[c]);
  }
}

// y: the forward's output when Relu (the mask), unused otherwise.
template <class T, bool Relu>
__global__ void __launch_bounds__(kSplitBlock) bn_backward_partials(const T* __restrict__ x, const T* __restrict__ y,
                                                                    const T* __restrict__ gy,
                                                                    const T* __restrict__ save_mean, int64_t C,
                                                                    uint32_t S, uint32_t M, uint32_t chunk,
                                                                    double* __restrict__ partial) {
  const int64_t c = blockIdx.y, G = gridDim.x, g = blockIdx.x;
  const double mean = save_mean[c];
  const uint32_t begin = static_cast<uint32_t>(g) * chunk;
  const uint32_t end = M - begin < chunk ? M : begin + chunk;  // begin < M (split_plan)
  double sum_gy = 0, sum_gy_xc = 0;
  for (uint32_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const int64_t off = channel_offset32(i, c, C, S);
    const double g_val = masked_grad<Relu>(gy, y, off);
    sum_gy += g_val;
    sum_gy_xc += g_val * (static_cast<double>(x[off]) - mean);
  }
  sum_gy = block_sum(sum_gy);
  sum_gy_xc = block_sum(sum_gy_xc);
  if (threadIdx.x == 0) {
    partial[(2 * c) * G + g] = sum_gy;
    partial[(2 * c + 1) * G + g] = sum_gy_xc;
  }
}

// With gb = sum gy, gg = sum gy * xhat = invstd * sum gy (x - mean) and k = gamma * invstd / M, v1's
//   grad_x = k * (M * gy - gb - xhat * gg)
// regroups to grad_x = A * gy + B * (x - mean) + D with A = gamma * invstd, B = -k * gg * invstd, D = -k * gb.
template <class T>
__global__ void bn_backward_finalize(const T* __restrict__ gamma, const T* __restrict__ save_invstd,
                                     const double* __restrict__ partial, int64_t C, int64_t M, int64_t G,
                                     T* __restrict__ grad_gamma, T* __restrict__ grad_beta, T* __restrict__ coef) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  double gb = 0, sum_gy_xc = 0;
  for (int64_t g = 0; g < G; ++g) {
    gb += partial[(2 * c) * G + g];
    sum_gy_xc += partial[(2 * c + 1) * G + g];
  }
  const double invstd = save_invstd[c], gam = gamma[c];
  const double gg = sum_gy_xc * invstd;
  const double k = gam * invstd / static_cast<double>(M);
  grad_gamma[c] = static_cast<T>(gg);
  grad_beta[c] = static_cast<T>(gb);
  coef[c] = static_cast<T>(gam * invstd);           // A
  coef[C + c] = static_cast<T>(-k * gg * invstd);   // B
  coef[2 * C + c] = static_cast<T>(-k * gb);        // D
}

template <class T, class Index, bool Relu>
__global__ void bn_backward_apply(const T* __restrict__ x, const T* __restrict__ y, const T* __restrict__ gy,
                                  const T* __restrict__ mean, const T* __restrict__ coef, T* __restrict__ gx,
                                  Index total, Index C, Index S) {
  for (Index i = blockIdx.x * static_cast<Index>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<Index>(gridDim.x) * blockDim.x) {
    const Index c = (i / S) % C;
    gx[i] = coef[c] * masked_grad<Relu>(gy, y, i) + coef[C + c] * (x[i] - mean[c]) + coef[2 * C + c];
  }
}

// The split kernels index a channel's values with 32 bits and put channels on the grid's y axis.
bool split_accepts(const Tensor& x, const BnDims& d) {
  return is_f32_or_f64(x) && d.C <= 65535 && d.N * d.S > 0 && d.N * d.S <= UINT32_MAX && d.S <= UINT32_MAX;
}

template <class T, bool Relu>
void launch_forward_v2(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                       Tensor& save_mean, Tensor& save_invstd, const BnDims& d, int device) {
  const cudaStream_t s = cuda::stream(device);
  const int64_t M = d.N * d.S;
  const SplitPlan plan = split_plan(d.C, M, device);
  const int64_t G = plan.G, chunk = plan.chunk;
  Tensor partial = empty({2 * d.C * G}, TensorOptions(DType::float64, x.device()));
  Tensor scale = empty({d.C}, x.options());
  bn_forward_partials<T><<<dim3(static_cast<unsigned>(G), static_cast<unsigned>(d.C)), kSplitBlock, 0, s>>>(
      x.data<T>(), d.C, static_cast<uint32_t>(d.S), static_cast<uint32_t>(M), static_cast<uint32_t>(chunk),
      partial.data<double>());
  MINIDL_LAUNCH_CHECK();
  bn_forward_finalize<T><<<cuda::grid_for(d.C, kElementwiseBlock), kElementwiseBlock, 0, s>>>(
      x.data<T>(), gamma.data<T>(), partial.data<double>(), d.C, d.S, M, G, eps, save_mean.data<T>(),
      save_invstd.data<T>(), scale.data<T>());
  MINIDL_LAUNCH_CHECK();
  const int64_t total = x.numel();
  const unsigned grid = cuda::grid_for(total, kElementwiseBlock);
  if (total <= UINT32_MAX)
    bn_forward_apply<T, uint32_t, Relu><<<grid, kElementwiseBlock, 0, s>>>(
        x.data<T>(), save_mean.data<T>(), scale.data<T>(), beta.data<T>(), y.data<T>(), static_cast<uint32_t>(total),
        static_cast<uint32_t>(d.C), static_cast<uint32_t>(d.S));
  else
    bn_forward_apply<T, int64_t, Relu><<<grid, kElementwiseBlock, 0, s>>>(
        x.data<T>(), save_mean.data<T>(), scale.data<T>(), beta.data<T>(), y.data<T>(), total, d.C, d.S);
  MINIDL_LAUNCH_CHECK();
}

// Inference with the given statistics: the per-channel scale gamma_c / sqrt(var_c + eps) once per channel
// (in double), then the same apply pass as training: y = (x - mean_c) * scale_c + beta_c.
template <class T>
__global__ void bn_inference_scale(const T* __restrict__ gamma, const T* __restrict__ var, double eps,
                                   T* __restrict__ scale, int64_t C) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c < C) scale[c] = static_cast<T>(static_cast<double>(gamma[c]) / sqrt(static_cast<double>(var[c]) + eps));
}

template <class T>
void launch_inference_v2(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                         const Tensor& var, double eps, Tensor& y, const BnDims& d, int device) {
  const cudaStream_t s = cuda::stream(device);
  Tensor scale = empty({d.C}, x.options());
  bn_inference_scale<T><<<cuda::grid_for(d.C, kElementwiseBlock), kElementwiseBlock, 0, s>>>(
      gamma.data<T>(), var.data<T>(), eps, scale.data<T>(), d.C);
  MINIDL_LAUNCH_CHECK();
  const int64_t total = x.numel();
  const unsigned grid = cuda::grid_for(total, kElementwiseBlock);
  if (total <= UINT32_MAX)
    bn_forward_apply<T, uint32_t, false><<<grid, kElementwiseBlock, 0, s>>>(
        x.data<T>(), mean.data<T>(), scale.data<T>(), beta.data<T>(), y.data<T>(), static_cast<uint32_t>(total),
        static_cast<uint32_t>(d.C), static_cast<uint32_t>(d.S));
  else
    bn_forward_apply<T, int64_t, false><<<grid, kElementwiseBlock, 0, s>>>(
        x.data<T>(), mean.data<T>(), scale.data<T>(), beta.data<T>(), y.data<T>(), total, d.C, d.S);
  MINIDL_LAUNCH_CHECK();
}

bool batch_norm_inference_v2(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                             const Tensor& var, double eps, Tensor& y) {
  if (!is_f32_or_f64(x)) return false;
  const BnDims d = bn_dims(x);
  const int device = x.device().index;
  cuda::set_device(device);
  if (x.numel() == 0) return true;
  if (x.dtype() == DType::float32)
    launch_inference_v2<float>(x, gamma, beta, mean, var, eps, y, d, device);
  else
    launch_inference_v2<double>(x, gamma, beta, mean, var, eps, y, d, device);
  return true;
}

// batch_norm (Relu false) and batch_norm_relu (Relu true).
template <bool Relu>
bool batch_norm_v2(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y, Tensor& save_mean,
                   Tensor& save_invstd) {
  const BnDims d = bn_dims(x);
  if (!split_accepts(x, d)) return false;
  const int device = x.device().index;
  cuda::set_device(device);
  if (x.dtype() == DType::float32)
    launch_forward_v2<float, Relu>(x, gamma, beta, eps, y, save_mean, save_invstd, d, device);
  else
    launch_forward_v2<double, Relu>(x, gamma, beta, eps, y, save_mean, save_invstd, d, device);
  return true;
}

// y: the forward's output when Relu, an undefined tensor otherwise.
template <class T, bool Relu>
void launch_backward_v2(const Tensor& x, const Tensor& y, const Tensor& gy, const Tensor& gamma,
                        const Tensor& save_mean, const Tensor& save_invstd, Tensor& gx, Tensor& grad_gamma,
                        Tensor& grad_beta, const BnDims& d, int device) {
  const T* mask = Relu ? y.data<T>() : nullptr;
  const cudaStream_t s = cuda::stream(device);
  const int64_t M = d.N * d.S;
  const SplitPlan plan = split_plan(d.C, M, device);
  const int64_t G = plan.G, chunk = plan.chunk;
  Tensor partial = empty({2 * d.C * G}, TensorOptions(DType::float64, x.device()));
  Tensor coef = empty({3 * d.C}, x.options());
  bn_backward_partials<T, Relu><<<dim3(static_cast<unsigned>(G), static_cast<unsigned>(d.C)), kSplitBlock, 0, s>>>(
      x.data<T>(), mask, gy.data<T>(), save_mean.data<T>(), d.C, static_cast<uint32_t>(d.S), static_cast<uint32_t>(M),
      static_cast<uint32_t>(chunk), partial.data<double>());
  MINIDL_LAUNCH_CHECK();
  bn_backward_finalize<T><<<cuda::grid_for(d.C, kElementwiseBlock), kElementwiseBlock, 0, s>>>(
      gamma.data<T>(), save_invstd.data<T>(), partial.data<double>(), d.C, M, G, grad_gamma.data<T>(),
      grad_beta.data<T>(), coef.data<T>());
  MINIDL_LAUNCH_CHECK();
  const int64_t total = x.numel();
  const unsigned grid = cuda::grid_for(total, kElementwiseBlock);
  if (total <= UINT32_MAX)
    bn_backward_apply<T, uint32_t, Relu><<<grid, kElementwiseBlock, 0, s>>>(
        x.data<T>(), mask, gy.data<T>(), save_mean.data<T>(), coef.data<T>(), gx.data<T>(),
        static_cast<uint32_t>(total), static_cast<uint32_t>(d.C), static_cast<uint32_t>(d.S));
  else
    bn_backward_apply<T, int64_t, Relu><<<grid, kElementwiseBlock, 0, s>>>(
        x.data<T>(), mask, gy.data<T>(), save_mean.data<T>(), coef.data<T>(), gx.data<T>(), total, d.C, d.S);
  MINIDL_LAUNCH_CHECK();
}

// The backward of batch_norm (Relu false, y undefined) or of batch_norm_relu (Relu true, y its output).
template <bool Relu>
bool backward_v2(const Tensor& x, const Tensor& y, const Tensor& grad_y, const Tensor& gamma, const Tensor& save_mean,
                 const Tensor& save_invstd, Tensor& grad_x, Tensor& grad_gamma, Tensor& grad_beta) {
  const BnDims d = bn_dims(x);
  if (!split_accepts(x, d)) return false;
  const int device = x.device().index;
  cuda::set_device(device);
  if (x.dtype() == DType::float32)
    launch_backward_v2<float, Relu>(x, y, grad_y, gamma, save_mean, save_invstd, grad_x, grad_gamma, grad_beta, d,
                                    device);
  else
    launch_backward_v2<double, Relu>(x, y, grad_y, gamma, save_mean, save_invstd, grad_x, grad_gamma, grad_beta, d,
                                     device);
  return true;
}

bool batch_norm_backward_v2(const Tensor& x, const Tensor& grad_y, const Tensor& gamma, const Tensor& save_mean,
                            const Tensor& save_invstd, Tensor& grad_x, Tensor& grad_gamma, Tensor& grad_beta) {
  return backward_v2<false>(x, Tensor(), grad_y, gamma, save_mean, save_invstd, grad_x, grad_gamma, grad_beta);
}

bool batch_norm_relu_backward_v2(const Tensor& x, const Tensor& y, const Tensor& grad_y, const Tensor& gamma,
                                 const Tensor& save_mean, const Tensor& save_invstd, Tensor& grad_x,
                                 Tensor& grad_gamma, Tensor& grad_beta) {
  return backward_v2<true>(x, y, grad_y, gamma, save_mean, save_invstd, grad_x, grad_gamma, grad_beta);
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

void register_batchnorm_cuda() {
  register_kernel(keys::batch_norm, DeviceType::cuda, "v1_two_pass", Priority::portable,
                  "one block per channel, two-pass mean/variance, warp-shuffle reductions (f32, f64)",
                  batch_norm_v1<false>);
  register_kernel(keys::batch_norm_inference, DeviceType::cuda, "v1_two_pass", Priority::portable,
                  "one thread per element with the given statistics (f32, f64)",
                  batch_norm_inference_v1);
  register_kernel(keys::batch_norm_backward, DeviceType::cuda, "v1_two_pass", Priority::portable,
                  "one block per channel: both sums in one pass, then grad_x (f32, f64)",
                  batch_norm_backward_v1);
  register_kernel(keys::batch_norm, DeviceType::cuda, "v2_split", Priority::preferred,
                  "each channel split over many blocks: partial sums, finalize, apply (f32, f64)",
                  batch_norm_v2<false>);
  register_kernel(keys::batch_norm_inference, DeviceType::cuda, "v2_split", Priority::preferred,
                  "per-channel scale once, then one apply pass (f32, f64)",
                  batch_norm_inference_v2);
  register_kernel(keys::batch_norm_backward, DeviceType::cuda, "v2_split", Priority::preferred,
                  "each channel split over many blocks: partial sums, finalize, apply "
                  "(f32, f64)",
                  batch_norm_backward_v2);
  // batch_norm_relu: the same kernels with the ReLU (Relu = true) under the same names and priorities, so
  // --kernel batch_norm_relu=v1_two_pass selects both of its stages, and v2_split is the default.
  register_kernel(keys::batch_norm_relu, DeviceType::cuda, "v1_two_pass", Priority::portable,
                  "v1_two_pass with relu(y) as y is written (f32, f64)", batch_norm_v1<true>);
  register_kernel(keys::batch_norm_relu_backward, DeviceType::cuda, "v1_two_pass", Priority::portable,
                  "v1_two_pass reading grad_y * [y > 0] (f32, f64)",
                  batch_norm_relu_backward_v1);
  register_kernel(keys::batch_norm_relu, DeviceType::cuda, "v2_split", Priority::preferred,
                  "v2_split with relu(y) in the apply pass (f32, f64)", batch_norm_v2<true>);
  register_kernel(keys::batch_norm_relu_backward, DeviceType::cuda, "v2_split", Priority::preferred,
                  "v2_split reading grad_y * [y > 0] in the partial sums and the apply "
                  "pass (f32, f64)",
                  batch_norm_relu_backward_v2);
#ifdef MINIDL_WITH_CUDNN
  register_kernel(keys::batch_norm, DeviceType::cuda, "cudnn", Priority::tuned,
                  "cudnnBatchNormalizationForwardTraining, SPATIAL, no running stats (f32)",
                  batch_norm_cudnn);
  register_kernel(keys::batch_norm_inference, DeviceType::cuda, "cudnn", Priority::tuned,
                  "cudnnBatchNormalizationForwardInference, SPATIAL (f32)",
                  batch_norm_inference_cudnn);
  register_kernel(keys::batch_norm_backward, DeviceType::cuda, "cudnn", Priority::tuned,
                  "cudnnBatchNormalizationBackward, SPATIAL, saved statistics (f32)",
                  batch_norm_backward_cudnn);
#endif
}

}  // namespace minidl
