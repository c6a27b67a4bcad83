// cuda/conv_wgrad_nchw_small_filter.cu — kernel "nchw_small_filter" of key "conv2d.backward_weight": the
// weight gradient of a convolution whose filter holds few weights per output channel (C * KH * KW <= 32),
// on NCHW tensors, any stride and padding. MNIST's first convolution (1 x 3 x 3 = 9 weights per output
// channel) is the case it was written for; an RGB image's 3 x 3 (27) fits too.
//
// The math. With x [N, C, H, W], grad_y [N, O, OH, OW] and a pixel p = (n, oh, ow) of the output:
//
//     grad_w[o][c][i][j] = sum over p of grad_y[n][o][oh][ow] * x[n][c][oh*sh - ph + i][ow*sw - pw + j]
//                          (0 outside x)
//
// Each of the O * C * KH * KW weights (288 for MNIST's conv1) is a sum over N * OH * OW pixels (43,264 at
// batch 64): the reduction dwarfs the output. As a GEMM (cuda/conv_implicit_gemm.cu: M = O = 32, N = 9,
// K = 43,264) a 32 x 32 tile carries 9 useful columns and K must be split and summed again; cuDNN's
// strict-FP32 engines do no better (docs/conv-ladder.md).
//
// Here the sum runs where the data is. Block (g, q) owns kChannels output channels o0 = q * kChannels ..
// and every G-th run of 256 pixels: thread t takes pixels g * 256 + t, then + G * 256, ..., so
// neighbouring threads read neighbouring grad_y values and neighbouring x values (coalesced). For each
// pixel a thread loads the input window once, xv[tap] (tap = (c * KH + i) * KW + j, grad_w's own order),
// then for each of its channels one grad_y value and one FMA per tap:
//
//     acc[k][tap] += grad_y[n][o0 + k][oh][ow] * xv[tap]
//
// kChannels x kTaps sums in registers (16 x 4, 8 x 9, 4 x 16, 2 x 32): the window's loads and the
// pixel's index arithmetic (two integer divisions) are shared by kChannels channels (docs/conv-ladder.md
// has the versions before this one and their times). Without padding every tap of an output pixel lies
// inside x, and the bounds tests are compiled out (kPadded). The taps' offsets (i, j and the x offset
// c*H*W + i*W + j) travel as a kernel parameter, read in unrolled loops (constant-bank loads).
//
// The block adds its threads' sums in a fixed order (a warp butterfly, then the 8 warps in order) into
// partial[g][o][tap], and cuda/conv_implicit_gemm.cuh's sum_splits adds the G partials of each weight in
// an order fixed by G. No atomics: the same bits on every run, so the kernel serves --deterministic too.
// With G = 1 the block writes grad_w directly. G is chosen so that the blocks fill the GPU once (the
// occupancy API), and no block has less than a pixel per thread.
//
// Declines (the contract, below): dtypes other than float32; a tensor that is not contiguous NCHW
// (channels-last calls go to cuda/conv_wgrad_nhwc_3x3.cu or cuDNN); more than 32 weights per output
// channel; sizes beyond 32-bit indexing (cuda/conv_implicit_gemm.cuh, conv_shape) or more than 65,535
// output channels (a bound on the grid's y, O / kChannels). Output: grad_w [O, C, KH, KW] contiguous,
// overwritten.
#include <cstdint>
#include <utility>
#include <vector>

#include "core/dispatch.h"
#include "core/kernel_contract.h"
#include "cuda/conv_implicit_gemm.cuh"
#include "cuda/cuda_common.h"
#include "cuda/kernel_helpers.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr const char* kName = "nchw_small_filter";
constexpr int kMaxTaps = 32;  // C * KH * KW at most: the sums a thread keeps in registers
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

using cuda::implicit_gemm::ConvShape;

// The filter's taps, flattened in grad_w's order: tap = (c * KH + i) * KW + j.
struct Taps {
  int count;            // C * KH * KW <= kMaxTaps
  int di[kMaxTaps];     // i: the row offset of the tap in the input window
  int dj[kMaxTaps];     // j: the column offset
  int offset[kMaxTaps]; // c * H * W + i * W + j: where the tap reads, from x[n][0][ih0][iw0]
};

// kTaps is count rounded up to an instantiated size (4, 9, 16, 32), kChannels the output channels a thread
// takes (kTaps x kChannels <= 72 sums in registers); kPadded: whether a tap can fall outside x (without
// padding every tap of an output pixel is inside, and the bounds tests go).
template <int kTaps, int kChannels, bool kPadded>
__global__ void __launch_bounds__(kThreads)
    wgrad_small_filter_partials(const float* __restrict__ x, const float* __restrict__ grad_y, ConvShape s,
                                Taps taps, float* __restrict__ out) {
  const int o0 = static_cast<int>(blockIdx.y) * kChannels;  // this block's first output channel
  const int G = static_cast<int>(gridDim.x);
  const int pixels = s.Nb * s.OHW;  // conv_shape checked that it fits an int
  float acc[kChannels][kTaps];
#pragma unroll
  for (int k = 0; k < kChannels; ++k)
#pragma unroll
    for (int t = 0; t < kTaps; ++t) acc[k][t] = 0.f;

  for (int p = static_cast<int>(blockIdx.x) * kThreads + static_cast<int>(threadIdx.x); p < pixels; p += G * kThreads) {
    const int n = p / s.OHW, r = p - n * s.OHW;
    const int oh = r / s.OW, ow = r - oh * s.OW;
    const int ih0 = oh * s.sh - s.ph, iw0 = ow * s.sw - s.pw;
    const int64_t window = static_cast<int64_t>(n) * s.CHW + ih0 * s.W + iw0;  // where x[n][0][ih0][iw0] would be
    // The pixel's input window, once for all kChannels output channels (0 outside x and past count).
    float xv[kTaps];
#pragma unroll
    for (int t = 0; t < kTaps; ++t) {
      bool inside = t < taps.count;
      if (kPadded) {
        const int ih = ih0 + taps.di[t], iw = iw0 + taps.dj[t];
        inside = inside && ih >= 0 && ih < s.H && iw >= 0 && iw < s.W;
      }
      xv[t] = inside ? x[window + taps.offset[t]] : 0.f;
    }
    // The pixel's grad_y values, all loaded before the first FMA: a branch between the loads (a `break`
    // at the last channel) would make each load wait for the FMAs of the one before (docs/conv-ladder.md).
    const float* gy = grad_y + (static_cast<int64_t>(n) * s.O + o0) * s.OHW + r;  // grad_y[n][o0][oh][ow]
    float g[kChannels];
#pragma unroll
    for (int k = 0; k < kChannels; ++k) g[k] = o0 + k < s.O ? gy[static_cast<int64_t>(k) * s.OHW] : 0.f;
#pragma unroll
    for (int k = 0; k < kChannels; ++k)
#pragma unroll
      for (int t = 0; t < kTaps; ++t) acc[k][t] += g[k] * xv[t];
  }

  // The block's sums, in a fixed order: a butterfly within each warp, then the warps in order.
  __shared__ float warp_sums[kWarps][kChannels][kTaps];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
#pragma unroll
  for (int k = 0; k < kChannels; ++k)
#pragma unroll
    for (int t = 0; t < kTaps; ++t) {
      float v = acc[k][t];
#pragma unroll
      for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
      if (lane == 0) warp_sums[warp][k][t] = v;
    }
  __syncthreads();
  for (int i = static_cast<int>(threadIdx.x); i < kChannels * taps.count; i += kThreads) {
    const int k = i / taps.count, t = i - k * taps.count;
    if (o0 + k >= s.O) continue;
    float sum = 0.f;
    for (int w = 0; w < kWarps; ++w) sum += warp_sums[w][k][t];
    out[(static_cast<int64_t>(blockIdx.x) * s.O + o0 + k) * taps.count + t] = sum;  // out[g][o][tap]
  }
}

// ---------------------------------------------------------------- host side
bool not_contiguous_nchw(const Tensor& x, const Tensor& gy, const Tensor& gw) {
  return !x.is_contiguous() || !gy.is_contiguous() || !gw.is_contiguous();
}
bool too_many_weights(const Tensor& gw) {
  return gw.dim() != 4 || gw.size(1) * gw.size(2) * gw.size(3) > kMaxTaps;
}

Taps taps_of(const ConvShape& s) {
  Taps taps{};
  taps.count = s.C * s.KHKW;
  for (int c = 0; c < s.C; ++c)
    for (int i = 0; i < s.KH; ++i)
      for (int j = 0; j < s.KW; ++j) {
        const int t = (c * s.KH + i) * s.KW + j;
        taps.di[t] = i;
        taps.dj[t] = j;
        taps.offset[t] = c * s.HW + i * s.W + j;
      }
  return taps;
}

template <int kTaps, int kChannels, bool kPadded>
void launch(const Tensor& x, const Tensor& grad_y, Tensor& grad_w, const ConvShape& s, int device) {
  const auto kernel = wgrad_small_filter_partials<kTaps, kChannels, kPadded>;
  const Taps taps = taps_of(s);
  const int64_t pixels = static_cast<int64_t>(s.Nb) * s.OHW;
  const int64_t groups = (s.O + kChannels - 1) / kChannels;  // the grid's y
  int per_sm = 0;
  MINIDL_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
  const int64_t resident = static_cast<int64_t>(cuda::properties(device).multiProcessorCount) * (per_sm > 0 ? per_sm : 1);
  int64_t G = (resident + groups - 1) / groups;             // the G x groups blocks fill the GPU once
  const int64_t runs = (pixels + kThreads - 1) / kThreads;  // no block without a pixel per thread
  if (G > runs) G = runs;
  if (G < 1) G = 1;
  const int64_t weights = static_cast<int64_t>(s.O) * taps.count;
  const cudaStream_t stream = cuda::stream(device);
  Tensor partial;
  float* out = grad_w.data<float>();
  if (G > 1) {
    partial = empty({G * weights}, TensorOptions(DType::float32, x.device()));
    out = partial.data<float>();
  }
  kernel<<<dim3(static_cast<unsigned>(G), static_cast<unsigned>(groups)), kThreads, 0, stream>>>(
      x.data<float>(), grad_y.data<float>(), s, taps, out);
  MINIDL_LAUNCH_CHECK();
  if (G > 1)  // partial[g][o][tap] -> grad_w[o][tap], in a fixed order (cuda/conv_implicit_gemm.cuh)
    cuda::implicit_gemm::sum_splits(partial.data<float>(), grad_w.data<float>(), static_cast<int>(weights),
                                    static_cast<int>(G), stream);
}

// kChannels for kTaps: about 64 sums a thread.
template <int kTaps, int kChannels>
void launch_padded_or_not(const Tensor& x, const Tensor& grad_y, Tensor& grad_w, const ConvShape& s, int device) {
  if (s.ph > 0 || s.pw > 0)
    launch<kTaps, kChannels, true>(x, grad_y, grad_w, s, device);
  else
    launch<kTaps, kChannels, false>(x, grad_y, grad_w, s, device);
}

bool conv2d_backward_weight_nchw_small_filter(const Tensor& x, const Tensor& grad_y, Tensor& grad_w,
                                              const Conv2dParams& p) {
  ConvShape s;
  if (cuda::any_not_float32(x, grad_y, grad_w) || not_contiguous_nchw(x, grad_y, grad_w) || too_many_weights(grad_w) ||
      !cuda::implicit_gemm::conv_shape(x, grad_w, grad_y, p, s) || s.O > 65535)  // bounds the grid's y
    return false;
  const int device = grad_w.device().index;
  cuda::set_device(device);
  if (grad_w.numel() == 0) return true;
  if (grad_y.numel() == 0) {  // no output pixels: empty sums
    fill_(grad_w, 0.0);
    return true;
  }
  const int count = s.C * s.KHKW;
  if (count <= 4)
    launch_padded_or_not<4, 16>(x, grad_y, grad_w, s, device);
  else if (count <= 9)
    launch_padded_or_not<9, 8>(x, grad_y, grad_w, s, device);
  else if (count <= 16)
    launch_padded_or_not<16, 4>(x, grad_y, grad_w, s, device);
  else
    launch_padded_or_not<32, 2>(x, grad_y, grad_w, s, device);
  return true;
}

}  // namespace

void register_conv_wgrad_nchw_small_filter_cuda() {
  // Priority 19: below cudnn (20), so the dispatcher alone never picks it; by_shape (25, cuda/conv_by_shape.cu)
  // tries it first for the NCHW weight gradients of small filters, and --kernel selects it by name.
  using Fn = Conv2dBackwardWeightKernel;
  register_kernel(keys::conv2d_backward_weight, DeviceType::cuda, kName, Priority::tuned - 1,
                  "NCHW weight gradient of a small filter (C*KH*KW <= 32): a block per group of output channels and "
                  "pixel slice, every weight's sum in registers, float32 FMAs, fixed-order sum (deterministic)",
                  conv2d_backward_weight_nchw_small_filter);
  declare_kernel_contract(
      keys::conv2d_backward_weight, DeviceType::cuda, kName,
      KernelContract<Fn>{{"backward_weight"},
                         {{"not float32",
                           [](const Tensor& x, const Tensor& gy, Tensor& gw, const Conv2dParams&) {
                             return cuda::any_not_float32(x, gy, gw);
                           }},
                          {"a tensor not contiguous NCHW (channels-last, strided)",
                           [](const Tensor& x, const Tensor& gy, Tensor& gw, const Conv2dParams&) {
                             return not_contiguous_nchw(x, gy, gw);
                           }},
                          {"more than 32 weights per output channel (C*KH*KW > 32)",
                           [](const Tensor&, const Tensor&, Tensor& gw, const Conv2dParams&) {
                             return too_many_weights(gw);
                           }}}});
}

}  // namespace minidl
