// cuda/batchnorm_v2_split.cu — "v2_split": batch normalisation on the GPU with each channel split over many
// blocks (float32 and float64, and bfloat16 activations in channels-last rows of C % 4 == 0 with float32
// per-channel tensors; batch_norm and batch_norm_relu under the same name; the default). The
// contract of the keys is in cuda/batchnorm_common.cuh. Running statistics are not touched here: the op
// front end updates them from save_mean/save_invstd. Accumulation convention: outputs are overwritten (=).
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "core/dispatch.h"
#include "cuda/batchnorm_common.cuh"
#include "cuda/batchnorm_v2_quads.cuh"
#include "cuda/batchnorm_v2_rows.cuh"
#include "cuda/cuda_common.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// ---------------------------------------------------------------- v2_split
// v1 gives each channel one block: the first layers of a CNN have 32 or 64 channels of millions of
// values each, so 32 of the H200's 132 multiprocessors do all the work. v2 splits every channel over
// G blocks and runs three launches (the statistics must be complete before any output is written):
//   1. partial sums: block (g, c) of a [G, C] grid sums chunk g of channel c's M = N*S values into
//      partial[c][g] (in double). Forward: s1 = sum (x - K_c) and s2 = sum (x - K_c)^2 with the shift
//      K_c = x[0, c, 0]; backward: sum gy and sum gy * (x - mean_c).
//   2. finalize: one warp per channel adds its G partials in a fixed order (deterministic results)
//      and derives the statistics and the per-channel coefficients of step 3.
//   3. apply: one thread per element: y = (x - mean_c) * scale_c + beta_c with scale_c = invstd_c * gamma_c,
//      or grad_x = A_c * gy + B_c * (x - mean_c) + D_c (the v1 formula regrouped, below).
// batch_norm_relu clamps y in step 3, and its backward reads gy * [y > 0] in steps 1 and 3: one more
// tensor read in each of the two passes, in place of the separate relu_backward pass of the unfused pair.
// Inference (given mean and var) needs only the per-channel scale and the apply pass.
// Forward reads x twice and writes y once; backward reads x and gy twice and writes grad_x once.
// Rows (S = 1: BatchNorm1d's [N, C], and a channels-last [N, C, H, W] seen as [N*H*W, C, 1], ops/norm.cpp):
// channel c's values are then C apart, so step 1's threads of one channel would each read their own
// 32-byte sector. Its rows variant puts 32 neighbouring channels on a warp instead (block 32 channels x 8
// row lanes, each lane striding over the chunk's rows), so every warp load is one 128-byte row segment,
// and the 8 lanes' sums are added in a fixed order in shared memory (cuda/batchnorm_v2_rows.cuh). Steps 2
// and 3 are the same.
// Rows of float32 with C a multiple of 4 (the channels-last layers of the captcha model) go four channels a
// load instead: steps 1 and 3 of cuda/batchnorm_v2_quads.cuh, step 2 as always.
// The variance comes from one pass: var = s2 / M - (s1 / M)^2. Without the shift this is
// E[x^2] - E[x]^2, which cancels catastrophically when |mean| >> std; around K_c (a value of the
// channel, so |K_c - mean| is a few std in practice) and in double it is accurate.
// Loads in flight. A GPU issues a warp's instructions in order, so a loop that loads a value and adds it
// at once waits a whole memory latency per iteration: one 128-byte load in flight per warp, a fraction
// of what the memory system needs to stream at full bandwidth. Step 1 therefore loads kLoadsInFlight
// values (the backward: kBackwardLoadsInFlight of each of its two or three tensors) before adding any.
// Each thread still adds its values in the same order, so the sums are the same to the bit.
constexpr int kLoadsInFlight = 8, kBackwardLoadsInFlight = 4;
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

// Rows (S = 1): blocks of kRowsTile channels x kRowsLanes row lanes; a [G, ceil(C / kRowsTile)] grid
// with enough blocks for about 4 per multiprocessor, no chunk shorter than kMinRowsChunk rows.
constexpr int64_t kMinRowsChunk = 64;

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

SplitPlan rows_plan_for_tiles(int64_t tiles, int64_t M, int device, int64_t min_chunk = kMinRowsChunk) {
  const int64_t target_blocks = 4 * static_cast<int64_t>(cuda::properties(device).multiProcessorCount);
  int64_t G = (target_blocks + tiles - 1) / tiles;
  const int64_t by_size = (M + min_chunk - 1) / min_chunk;
  if (G > by_size) G = by_size;
  if (G > 65535) G = 65535;
  if (G < 1) G = 1;
  const int64_t chunk = (M + G - 1) / G;
  return {(M + chunk - 1) / chunk, chunk};
}
SplitPlan rows_plan(int64_t C, int64_t M, int device) {
  return rows_plan_for_tiles((C + kRowsTile - 1) / kRowsTile, M, device);
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
  uint32_t i = begin + threadIdx.x;
  for (; uint64_t{i} + (kLoadsInFlight - 1) * uint64_t{blockDim.x} < end; i += kLoadsInFlight * blockDim.x) {
    T v[kLoadsInFlight];
#pragma unroll
    for (int u = 0; u < kLoadsInFlight; ++u) v[u] = x[channel_offset32(i + u * blockDim.x, c, C, S)];
#pragma unroll
    for (int u = 0; u < kLoadsInFlight; ++u) {
      const double d = static_cast<double>(v[u]) - K;
      s1 += d;
      s2 += d * d;
    }
  }
  for (; i < end; i += blockDim.x) {
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

// Step 2 runs one warp per channel: lane l adds partials l, l + 32, l + 64, ... in order, then warp_sum adds
// the 32 lane sums in a fixed tree, so the result is the same on every run. (One thread per channel adding
// its G partials one after another waits a memory latency per partial: at G in the hundreds, step 2 took
// longer than steps 1 and 3 together.)
__device__ __forceinline__ void sum_channel_partials(const double* __restrict__ partial, int64_t c, int64_t G,
                                                     double& a, double& b) {
  a = 0;
  b = 0;
  for (int64_t g = threadIdx.x % 32; g < G; g += 32) {
    a += partial[(2 * c) * G + g];
    b += partial[(2 * c + 1) * G + g];
  }
  a = warp_sum(a);  // lane 0 holds the totals
  b = warp_sum(b);
}

// Launch configuration of the finalize kernels: 32 threads per channel.
unsigned finalize_grid(int64_t C) { return cuda::grid_for(32 * C, kElementwiseBlock); }

template <class T>
__global__ void bn_forward_finalize(const T* __restrict__ x, const T* __restrict__ gamma,
                                    const double* __restrict__ partial, int64_t C, int64_t S, int64_t M, int64_t G,
                                    double eps, T* __restrict__ save_mean, T* __restrict__ save_invstd,
                                    T* __restrict__ scale) {
  const int64_t c = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / 32;
  if (c >= C) return;  // whole warps: c is the same for the 32 lanes of a warp
  double s1, s2;
  sum_channel_partials(partial, c, G, s1, s2);
  if (threadIdx.x % 32 != 0) return;
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
  uint32_t i = begin + threadIdx.x;
  for (; uint64_t{i} + (kBackwardLoadsInFlight - 1) * uint64_t{blockDim.x} < end;
       i += kBackwardLoadsInFlight * blockDim.x) {
    T g_vals[kBackwardLoadsInFlight], x_vals[kBackwardLoadsInFlight];
#pragma unroll
    for (int u = 0; u < kBackwardLoadsInFlight; ++u) {
      const int64_t off = channel_offset32(i + u * blockDim.x, c, C, S);
      g_vals[u] = masked_grad<Relu>(gy, y, off);
      x_vals[u] = x[off];
    }
#pragma unroll
    for (int u = 0; u < kBackwardLoadsInFlight; ++u) {
      const double g_val = g_vals[u];
      sum_gy += g_val;
      sum_gy_xc += g_val * (static_cast<double>(x_vals[u]) - mean);
    }
  }
  for (; i < end; i += blockDim.x) {
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
  const int64_t c = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / 32;
  if (c >= C) return;  // whole warps, as in bn_forward_finalize
  double gb, sum_gy_xc;
  sum_channel_partials(partial, c, G, gb, sum_gy_xc);
  if (threadIdx.x % 32 != 0) return;
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

// What both quad launchers set up first: the layout, the chunks (G of them), step 1's grid and the buffer
// of its partial sums (two per channel and chunk).
struct QuadLaunch {
  QuadLayout L;
  SplitPlan plan;
  dim3 grid;
  Tensor partial;
};
QuadLaunch quad_launch(const BnDims& d, const Device& dev) {
  QuadLaunch q;
  q.L = quad_layout(d.C);
  const int64_t tiles = (q.L.Q + q.L.tile - 1) / q.L.tile;
  q.plan = rows_plan_for_tiles(tiles, d.N, dev.index, quad_min_chunk(q.L));
  q.grid = dim3(static_cast<unsigned>(q.plan.G), static_cast<unsigned>(tiles));
  q.partial = empty({2 * d.C * q.plan.G}, TensorOptions(DType::float64, dev));
  return q;
}

// The forward for rows four channels a load (takes_quads), float32 (Quad float4) or bfloat16 (BfQuad):
// steps 1 and 3 as quads, step 2 as always, on float32 per-channel vectors.
template <class Quad, bool Relu>
void launch_forward_quads(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                          Tensor& save_mean, Tensor& save_invstd, Tensor& scale, const BnDims& d, int device) {
  const cudaStream_t s = cuda::stream(device);
  const int64_t M = d.N;
  QuadLaunch q = quad_launch(d, x.device());
  const auto* x4 = static_cast<const Quad*>(x.raw_data());
  bn_forward_partials_quads<Quad><<<q.grid, kQuadBlock, 0, s>>>(x4, q.L, static_cast<uint32_t>(M),
                                                                static_cast<uint32_t>(q.plan.chunk),
                                                                q.partial.data<double>());
  MINIDL_LAUNCH_CHECK();
  // Step 2 reads the shifts K_c = x[0, c] from x as float32: for bfloat16 x, its first row widened.
  const Tensor first_row =
      x.dtype() == DType::float32 ? x : x.view({d.N, d.C}).slice(0, 0, 1).to(DType::float32);
  bn_forward_finalize<float><<<finalize_grid(d.C), kElementwiseBlock, 0, s>>>(
      first_row.data<float>(), gamma.data<float>(), q.partial.data<double>(), d.C, 1, M, q.plan.G, eps,
      save_mean.data<float>(), save_invstd.data<float>(), scale.data<float>());
  MINIDL_LAUNCH_CHECK();
  const int64_t total4 = x.numel() / 4;
  bn_forward_apply_quads<Quad, Relu><<<cuda::grid_for(total4, kElementwiseBlock), kElementwiseBlock, 0, s>>>(
      x4, reinterpret_cast<const float4*>(save_mean.data<float>()), reinterpret_cast<const float4*>(scale.data<float>()),
      reinterpret_cast<const float4*>(beta.data<float>()), static_cast<Quad*>(y.raw_data()),
      static_cast<uint32_t>(total4), static_cast<uint32_t>(q.L.Q));
  MINIDL_LAUNCH_CHECK();
}

template <class T, bool Relu>
void launch_forward_v2(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                       Tensor& save_mean, Tensor& save_invstd, const BnDims& d, int device) {
  Tensor scale = empty({d.C}, x.options());  // scale_c = invstd_c * gamma_c, step 2's output
  if constexpr (std::is_same_v<T, float>) {
    if (x.numel() <= UINT32_MAX &&
        takes_quads(d, {x.raw_data(), y.raw_data(), save_mean.raw_data(), beta.raw_data(), scale.raw_data()})) {
      launch_forward_quads<float4, Relu>(x, gamma, beta, eps, y, save_mean, save_invstd, scale, d, device);
      return;
    }
  }
  const cudaStream_t s = cuda::stream(device);
  const int64_t M = d.N * d.S;
  const bool rows = d.S == 1;
  const SplitPlan plan = rows ? rows_plan(d.C, M, device) : split_plan(d.C, M, device);
  const int64_t G = plan.G, chunk = plan.chunk;
  Tensor partial = empty({2 * d.C * G}, TensorOptions(DType::float64, x.device()));
  if (rows) {
    const dim3 grid(static_cast<unsigned>(G), static_cast<unsigned>((d.C + kRowsTile - 1) / kRowsTile));
    bn_forward_partials_rows<T><<<grid, dim3(kRowsTile, kRowsLanes), 0, s>>>(
        x.data<T>(), d.C, static_cast<uint32_t>(M), static_cast<uint32_t>(chunk), partial.data<double>());
  } else {
    bn_forward_partials<T><<<dim3(static_cast<unsigned>(G), static_cast<unsigned>(d.C)), kSplitBlock, 0, s>>>(
        x.data<T>(), d.C, static_cast<uint32_t>(d.S), static_cast<uint32_t>(M), static_cast<uint32_t>(chunk),
        partial.data<double>());
  }
  MINIDL_LAUNCH_CHECK();
  bn_forward_finalize<T><<<finalize_grid(d.C), kElementwiseBlock, 0, s>>>(
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

// bfloat16 activations (cuda/batchnorm_v2_quads.cuh): rows four channels a load only, the per-channel
// tensors float32; any other bfloat16 call is declined (ops/bfloat16_widening.h then serves it).
bool bf16_quads_accept(const BnDims& d, const Tensor& x, std::initializer_list<const Tensor*> activations,
                       std::initializer_list<const Tensor*> per_channel) {
  if (d.N * d.S == 0 || d.N > UINT32_MAX || x.numel() > UINT32_MAX) return false;
  for (const Tensor* t : activations)
    if (t->defined() && t->dtype() != DType::bfloat16) return false;
  for (const Tensor* t : per_channel)
    if (t->dtype() != DType::float32) return false;
  return true;
}

template <bool Relu>
bool batch_norm_v2_bf16(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                        Tensor& save_mean, Tensor& save_invstd, const BnDims& d) {
  if (!bf16_quads_accept(d, x, {&x, &y}, {&gamma, &beta, &save_mean, &save_invstd})) return false;
  const int device = x.device().index;
  cuda::set_device(device);
  Tensor scale = empty({d.C}, save_mean.options());
  if (!takes_quads(d, {x.raw_data(), y.raw_data(), save_mean.raw_data(), beta.raw_data(), scale.raw_data()}))
    return false;
  launch_forward_quads<BfQuad, Relu>(x, gamma, beta, eps, y, save_mean, save_invstd, scale, d, device);
  return true;
}

// batch_norm (Relu false) and batch_norm_relu (Relu true).
template <bool Relu>
bool batch_norm_v2(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y, Tensor& save_mean,
                   Tensor& save_invstd) {
  const BnDims d = bn_dims(x);
  if (x.dtype() == DType::bfloat16) return batch_norm_v2_bf16<Relu>(x, gamma, beta, eps, y, save_mean, save_invstd, d);
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
// The backward for rows four channels a load (takes_quads), float32 (Quad float4) or bfloat16 (BfQuad):
// steps 1 and 3 as quads.
template <class Quad, bool Relu>
void launch_backward_quads(const Tensor& x, const Tensor& y, const Tensor& gy, const Tensor& gamma,
                           const Tensor& save_mean, const Tensor& save_invstd, Tensor& gx, Tensor& grad_gamma,
                           Tensor& grad_beta, Tensor& coef, const BnDims& d, int device) {
  const cudaStream_t s = cuda::stream(device);
  const int64_t M = d.N;
  QuadLaunch q = quad_launch(d, x.device());
  const auto* x4 = static_cast<const Quad*>(x.raw_data());
  const auto* y4 = Relu ? static_cast<const Quad*>(y.raw_data()) : nullptr;
  const auto* gy4 = static_cast<const Quad*>(gy.raw_data());
  bn_backward_partials_quads<Quad, Relu><<<q.grid, kQuadBlock, 0, s>>>(x4, y4, gy4, save_mean.data<float>(), q.L,
                                                                 static_cast<uint32_t>(M),
                                                                 static_cast<uint32_t>(q.plan.chunk),
                                                                 q.partial.data<double>());
  MINIDL_LAUNCH_CHECK();
  bn_backward_finalize<float><<<finalize_grid(d.C), kElementwiseBlock, 0, s>>>(
      gamma.data<float>(), save_invstd.data<float>(), q.partial.data<double>(), d.C, M, q.plan.G,
      grad_gamma.data<float>(), grad_beta.data<float>(), coef.data<float>());
  MINIDL_LAUNCH_CHECK();
  const int64_t total4 = x.numel() / 4;
  const auto* coef4 = reinterpret_cast<const float4*>(coef.data<float>());
  bn_backward_apply_quads<Quad, Relu><<<cuda::grid_for(total4, kElementwiseBlock), kElementwiseBlock, 0, s>>>(
      x4, y4, gy4, reinterpret_cast<const float4*>(save_mean.data<float>()), coef4, coef4 + q.L.Q,
      coef4 + 2 * q.L.Q, static_cast<Quad*>(gx.raw_data()), static_cast<uint32_t>(total4),
      static_cast<uint32_t>(q.L.Q));
  MINIDL_LAUNCH_CHECK();
}

template <class T, bool Relu>
void launch_backward_v2(const Tensor& x, const Tensor& y, const Tensor& gy, const Tensor& gamma,
                        const Tensor& save_mean, const Tensor& save_invstd, Tensor& gx, Tensor& grad_gamma,
                        Tensor& grad_beta, const BnDims& d, int device) {
  Tensor coef = empty({3 * d.C}, x.options());  // A, B and D per channel, step 2's output
  if constexpr (std::is_same_v<T, float>) {
    if (x.numel() <= UINT32_MAX && takes_quads(d, {x.raw_data(), Relu ? y.raw_data() : nullptr, gy.raw_data(),
                                                   gx.raw_data(), save_mean.raw_data(), coef.raw_data()})) {
      launch_backward_quads<float4, Relu>(x, y, gy, gamma, save_mean, save_invstd, gx, grad_gamma, grad_beta, coef,
                                          d, device);
      return;
    }
  }
  const T* mask = Relu ? y.data<T>() : nullptr;
  const cudaStream_t s = cuda::stream(device);
  const int64_t M = d.N * d.S;
  const bool rows = d.S == 1;
  const SplitPlan plan = rows ? rows_plan(d.C, M, device) : split_plan(d.C, M, device);
  const int64_t G = plan.G, chunk = plan.chunk;
  Tensor partial = empty({2 * d.C * G}, TensorOptions(DType::float64, x.device()));
  if (rows) {
    const dim3 grid(static_cast<unsigned>(G), static_cast<unsigned>((d.C + kRowsTile - 1) / kRowsTile));
    bn_backward_partials_rows<T, Relu><<<grid, dim3(kRowsTile, kRowsLanes), 0, s>>>(
        x.data<T>(), mask, gy.data<T>(), save_mean.data<T>(), d.C, static_cast<uint32_t>(M),
        static_cast<uint32_t>(chunk), partial.data<double>());
  } else {
    bn_backward_partials<T, Relu><<<dim3(static_cast<unsigned>(G), static_cast<unsigned>(d.C)), kSplitBlock, 0, s>>>(
        x.data<T>(), mask, gy.data<T>(), save_mean.data<T>(), d.C, static_cast<uint32_t>(d.S),
        static_cast<uint32_t>(M), static_cast<uint32_t>(chunk), partial.data<double>());
  }
  MINIDL_LAUNCH_CHECK();
  bn_backward_finalize<T><<<finalize_grid(d.C), kElementwiseBlock, 0, s>>>(
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

template <bool Relu>
bool backward_v2_bf16(const Tensor& x, const Tensor& y, const Tensor& grad_y, const Tensor& gamma,
                      const Tensor& save_mean, const Tensor& save_invstd, Tensor& grad_x, Tensor& grad_gamma,
                      Tensor& grad_beta, const BnDims& d) {
  if (!bf16_quads_accept(d, x, {&x, &y, &grad_y, &grad_x}, {&gamma, &save_mean, &save_invstd, &grad_gamma, &grad_beta}))
    return false;
  const int device = x.device().index;
  cuda::set_device(device);
  Tensor coef = empty({3 * d.C}, save_mean.options());
  if (!takes_quads(d, {x.raw_data(), Relu ? y.raw_data() : nullptr, grad_y.raw_data(), grad_x.raw_data(),
                       save_mean.raw_data(), coef.raw_data()}))
    return false;
  launch_backward_quads<BfQuad, Relu>(x, y, grad_y, gamma, save_mean, save_invstd, grad_x, grad_gamma, grad_beta, coef,
                                      d, device);
  return true;
}

// The backward of batch_norm (Relu false, y undefined) or of batch_norm_relu (Relu true, y its output).
template <bool Relu>
bool backward_v2(const Tensor& x, const Tensor& y, const Tensor& grad_y, const Tensor& gamma, const Tensor& save_mean,
                 const Tensor& save_invstd, Tensor& grad_x, Tensor& grad_gamma, Tensor& grad_beta) {
  const BnDims d = bn_dims(x);
  if (x.dtype() == DType::bfloat16)
    return backward_v2_bf16<Relu>(x, y, grad_y, gamma, save_mean, save_invstd, grad_x, grad_gamma, grad_beta, d);
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

}  // namespace

void register_batchnorm_v2_split_cuda() {
  register_kernel(keys::batch_norm, DeviceType::cuda, "v2_split", Priority::preferred,
                  "each channel split over many blocks: partial sums, finalize, apply (f32, f64; bf16 "
                  "channels-last rows, C % 4 == 0)",
                  batch_norm_v2<false>);
  register_kernel(keys::batch_norm_inference, DeviceType::cuda, "v2_split", Priority::preferred,
                  "per-channel scale once, then one apply pass (f32, f64)",
                  batch_norm_inference_v2);
  register_kernel(keys::batch_norm_backward, DeviceType::cuda, "v2_split", Priority::preferred,
                  "each channel split over many blocks: partial sums, finalize, apply "
                  "(f32, f64; bf16 channels-last rows, C % 4 == 0)",
                  batch_norm_backward_v2);
  // batch_norm_relu: the same kernels with the ReLU (Relu = true) under the same names and priorities, so
  // --kernel batch_norm_relu=v2_split selects both of its stages, and v2_split is the default.
  register_kernel(keys::batch_norm_relu, DeviceType::cuda, "v2_split", Priority::preferred,
                  "v2_split with relu(y) in the apply pass (f32, f64; bf16 channels-last rows, C % 4 == 0)",
                  batch_norm_v2<true>);
  register_kernel(keys::batch_norm_relu_backward, DeviceType::cuda, "v2_split", Priority::preferred,
                  "v2_split reading grad_y * [y > 0] in the partial sums and the apply "
                  "pass (f32, f64; bf16 channels-last rows, C % 4 == 0)",
                  batch_norm_relu_backward_v2);
}

}  // namespace minidl
