// cuda/conv_wgrad_nhwc_3x3.cu — the weight gradient of a 3x3 convolution with stride 1 and padding 1 on
// channels-last (NHWC) tensors: kernels "nhwc_3x3_tf32" (32s of channels, TF32 tensor cores, mma.sync of
// cuda/mma_tf32.cuh) and "nhwc_3x3_few_channels" (at most 4 input channels, float32 FMAs) of key
// "conv2d.backward_weight". All of the captcha model's convolutions are such convolutions, and their weight
// gradients were the largest item of its step (docs/results/README.md, "Issue 26, round 4").
//
// The math. With x [N, H, W, C] and grad_y [N, H, W, K] in memory (channels-last), tap (r, s) of the
// filter and a pixel p = (n, h, w):
//
//     grad_w[k][c][r][s] = sum over p of grad_y[p][k] * x[n][h + r - 1][w + s - 1][c]    (0 outside the image)
//
// For each tap this is a GEMM of a K x P matrix (grad_y transposed) by a P x C matrix (x shifted by the
// tap), with P = N * H * W, 1.5 million pixels for the captcha model's first block against a 32 x 32
// output per tap: a reduction that dwarfs its output. cuDNN's engines run it as an implicit GEMM over
// [K] x [9 C] whose B operand gathers x once per tap; where C and K are small they reach a fraction of
// the GPU (26 TFLOP/s at 32 x 32 on an H100, against 170 at 128 x 128).
//
// nhwc_3x3_tf32 reads every x row once. A block owns 32 output channels k, 32 input channels c and all 9
// taps (a 32 x 288 tile of the [K] x [9 C] result, in registers: warp t of 9 holds tap t's 32 x 32), and
// walks down strips of the image: a strip is 32 neighbouring pixels of one row of one image, h from 0 to
// H - 1. At row h it holds in shared memory grad_y's row h (32 pixels x 32 k) and x's rows h - 1, h, h + 1
// (34 pixels, the halo included, x 32 c) in a ring of three, so each step loads one new x row and one
// grad_y row and then multiplies 9 ways:
//
//     acc_tap(r,s)[k][c] += sum over j < 32 of gy_row[j][k] * x_row(h + r - 1)[j + s][c]
//
// as 4 steps of 8 pixels x (2 x 4) mma tiles of 16 x 8 per warp. The rows of the next kAhead = 2 steps
// are loaded into registers while this step multiplies (one step ahead left the loads' latency exposed:
// docs/conv-ladder.md). Pixels past the image's edge (the halo, a strip's last columns
// when 32 does not divide W) are stored as zeros. Shared rows are 40 floats: a fragment load of lanes
// (g, t) reads row t (+ 4), column g (+ 8 i), at bank (8 t + g) mod 32, all different (as in
// cuda/conv_implicit_gemm_tf32.cu). Blocks: a [G, K / 32, C / 32] grid; block g takes strips g, g + G,
// g + 2G, ..., G chosen so that the blocks fill the GPU once and the partials stay small.
//
// nhwc_3x3_few_channels is for an image's first convolution (C = 3 in the captcha model: 32 x 27 weights,
// 2.7 GFLOP over 1.5 million pixels, mostly memory traffic). Lane k of a warp owns output channel k of a
// 32-wide tile and accumulates its 9 C weights in registers; a warp walks one image row at a time, reading
// grad_y[p][k] (the warp reads one 128-byte row) and x's three rows around p (the same address on every
// lane: one broadcast load, from L1, in a 3 x 3 window that slides by a column per pixel), with sixteen
// pixels' grad_y loads issued before their FMAs. The block's warps then add their sums in a fixed order.
//
// Both kernels write one partial sum per block, partial[g][k][tap][c], and wgrad_nhwc_3x3_sum adds the G
// partials of each weight in a fixed order, in double: the result is the same on every run (no atomics),
// so both serve --deterministic too. Output: grad_w [K, C, 3, 3] contiguous, overwritten.
//
// Declines (the contracts, below), both kernels: activations not both channels-last, a filter other than
// 3x3 with stride 1 and padding 1, dtypes other than float32. nhwc_3x3_tf32 also: C or K not multiples of
// 32; activations not 16-byte aligned (its loads are float4s); C x K above kTf32MaxCK unless selected by
// name (cuDNN is faster there: docs/conv-ladder.md); strict FP32 (--precision fp32) unless selected by
// name: TF32 keeps 10 mantissa bits of each operand (tests/test_util.h, tf32_atol).
// nhwc_3x3_few_channels also: more than 4 input channels.
#include <cstdint>
#include <utility>
#include <vector>

#include "core/dispatch.h"
#include "core/kernel_contract.h"
#include "core/memory_format.h"
#include "core/precision.h"
#include "cuda/cuda_common.h"
#include "cuda/kernel_helpers.h"
#include "cuda/mma_tf32.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr const char* kTf32Name = "nhwc_3x3_tf32";
constexpr const char* kFewName = "nhwc_3x3_few_channels";

constexpr int kTile = 32;                // output channels k and input channels c per block
constexpr int kStrip = 32;               // pixels of a row per step
constexpr int kHalo = kStrip + 2;        // x pixels a step reads: one more on each side
constexpr int kTaps = 9;                 // 3 x 3, one warp each
constexpr int kThreads = 32 * kTaps;     // 288
constexpr int kLd = kTile + 8;           // shared row length in floats (bank spread, above)
constexpr int kQuads = kTile / 4;        // float4s in a row of 32 channels
constexpr int kXQuads = kHalo * kQuads;  // float4s of one x row (272)
constexpr int kStepQuads = kXQuads + kStrip * kQuads;                 // + grad_y's row (256) = 528
constexpr int kQuadsPerThread = (kStepQuads + kThreads - 1) / kThreads;  // 2
constexpr int kAhead = 2;  // steps whose rows are in flight (in registers) while one step multiplies
constexpr int64_t kMaxPartialFloats = int64_t{8} << 20;                 // 32 MiB of partial sums at most
// C x K above which nhwc_3x3_tf32 declines unless selected by name: cuDNN's engines are faster on the
// captcha model's 128- and 256-channel layers (docs/conv-ladder.md).
constexpr int64_t kTf32MaxCK = 64 * 64;

struct Shape4 {
  int N, H, W, C, K;
  int strips_per_row;  // ceil(W / kStrip)
  int strips;          // N * strips_per_row
};

// The float4 of a step that thread `tid` loads as its u-th: x's row hx (halo columns w0 - 1 ...) for
// indices below kXQuads, then grad_y's row hy. Zero outside the image.
__device__ __forceinline__ float4 load_step_quad(const float* __restrict__ x, const float* __restrict__ gy,
                                                 const Shape4& s, int n, int w0, int hx, int hy, int k0, int c0,
                                                 int index) {
  const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
  if (index < kXQuads) {
    const int p = index / kQuads, q = index % kQuads;
    const int w = w0 - 1 + p;
    if (hx < 0 || hx >= s.H || w < 0 || w >= s.W) return zero;
    const int64_t pixel = (static_cast<int64_t>(n) * s.H + hx) * s.W + w;
    return *reinterpret_cast<const float4*>(x + pixel * s.C + c0 + 4 * q);
  }
  if (index >= kStepQuads) return zero;
  const int p = (index - kXQuads) / kQuads, q = (index - kXQuads) % kQuads;
  const int w = w0 + p;
  if (hy >= s.H || w >= s.W) return zero;
  const int64_t pixel = (static_cast<int64_t>(n) * s.H + hy) * s.W + w;
  return *reinterpret_cast<const float4*>(gy + pixel * s.K + k0 + 4 * q);
}

// Stores a loaded float4, rounded to TF32, into x's ring slot or grad_y's row.
__device__ __forceinline__ void store_step_quad(float (*x_slot)[kLd], float (*gy_row)[kLd], int index, float4 v) {
  float* dst;
  if (index < kXQuads) {
    dst = &x_slot[index / kQuads][4 * (index % kQuads)];
  } else if (index < kStepQuads) {
    dst = &gy_row[(index - kXQuads) / kQuads][4 * ((index - kXQuads) % kQuads)];
  } else {
    return;
  }
  *reinterpret_cast<float4*>(dst) =
      make_float4(__uint_as_float(cuda::to_tf32(v.x)), __uint_as_float(cuda::to_tf32(v.y)),
                  __uint_as_float(cuda::to_tf32(v.z)), __uint_as_float(cuda::to_tf32(v.w)));
}

// Ring slot of x's row hx (hx >= -1): row -1 (the zero padding above row 0) in slot 0.
__device__ __forceinline__ int ring_slot(int hx) { return (hx + 1) % 3; }

__global__ void __launch_bounds__(kThreads, 2)
    wgrad_nhwc_3x3_partials(const float* __restrict__ x, const float* __restrict__ gy, const Shape4 s,
                            float* __restrict__ partial) {
  __shared__ __align__(16) float xs[3][kHalo][kLd];
  __shared__ __align__(16) float gs[kStrip][kLd];
  const int G = static_cast<int>(gridDim.x), g_block = static_cast<int>(blockIdx.x);
  const int k0 = static_cast<int>(blockIdx.y) * kTile, c0 = static_cast<int>(blockIdx.z) * kTile;
  const int tid = static_cast<int>(threadIdx.x), tap = tid / 32, lane = tid % 32;
  const int r = tap / 3, s_tap = tap % 3, g = lane / 4, t = lane % 4;

  float acc[2][4][4];  // [k fragment i: 16 rows][c fragment j: 8 columns][c0..c3]
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

  for (int strip = g_block; strip < s.strips; strip += G) {
    const int n = strip / s.strips_per_row, w0 = (strip % s.strips_per_row) * kStrip;
    // Prologue: x rows -1 and 0 straight into their slots (the previous strip's last step ended with a
    // barrier), then the loads of steps 0 .. kAhead - 1 (step m: x row m + 1, grad_y row m) into registers.
#pragma unroll
    for (int u = 0; u < kQuadsPerThread; ++u) {
      const int index = tid + u * kThreads;
      if (index < kXQuads) {
        store_step_quad(xs[ring_slot(-1)], gs, index, load_step_quad(x, gy, s, n, w0, -1, 0, k0, c0, index));
        store_step_quad(xs[ring_slot(0)], gs, index, load_step_quad(x, gy, s, n, w0, 0, 0, k0, c0, index));
      }
    }
    float4 ahead[kAhead][kQuadsPerThread];
#pragma unroll
    for (int l = 0; l < kAhead; ++l)
#pragma unroll
      for (int u = 0; u < kQuadsPerThread; ++u)
        ahead[l][u] = load_step_quad(x, gy, s, n, w0, l + 1, l, k0, c0, tid + u * kThreads);

    for (int h0 = 0; h0 < s.H; h0 += kAhead) {
#pragma unroll
      for (int l = 0; l < kAhead; ++l) {  // unrolled, so that ahead[l] stays in registers
        const int h = h0 + l;
        if (h >= s.H) break;
        // Step h: x row h + 1 and grad_y row h into shared memory; row h + 1's slot held row h - 2.
#pragma unroll
        for (int u = 0; u < kQuadsPerThread; ++u)
          store_step_quad(xs[ring_slot(h + 1)], gs, tid + u * kThreads, ahead[l][u]);
        __syncthreads();
        if (h + kAhead < s.H) {  // step h + kAhead's rows in flight while steps h .. multiply
#pragma unroll
          for (int u = 0; u < kQuadsPerThread; ++u)
            ahead[l][u] = load_step_quad(x, gy, s, n, w0, h + kAhead + 1, h + kAhead, k0, c0, tid + u * kThreads);
        }
        const float(*x_row)[kLd] = xs[ring_slot(h + r - 1)];
#pragma unroll
        for (int j0 = 0; j0 < kStrip; j0 += 8) {
          // A = grad_y's rows transposed: A[m = k][kk = pixel]; B = the shifted x row: B[kk = pixel][n = c].
          uint32_t a[2][4], b[4][2];
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            a[i][0] = __float_as_uint(gs[j0 + t][16 * i + g]);
            a[i][1] = __float_as_uint(gs[j0 + t][16 * i + g + 8]);
            a[i][2] = __float_as_uint(gs[j0 + t + 4][16 * i + g]);
            a[i][3] = __float_as_uint(gs[j0 + t + 4][16 * i + g + 8]);
          }
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            b[j][0] = __float_as_uint(x_row[j0 + t + s_tap][8 * j + g]);
            b[j][1] = __float_as_uint(x_row[j0 + t + 4 + s_tap][8 * j + g]);
          }
#pragma unroll
          for (int i = 0; i < 2; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) cuda::mma_tf32_16x8x8(acc[i][j], a[i], b[j]);
        }
        __syncthreads();  // before the next step overwrites grad_y's row and a ring slot
      }
    }
  }

  // partial[g][k][tap][c], c fastest.
  const int K = s.K, C = s.C;
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int k = k0 + 16 * i + g, c = c0 + 8 * j + 2 * t;
      float* row0 = partial + ((static_cast<int64_t>(g_block) * K + k) * kTaps + tap) * C + c;
      float* row8 = partial + ((static_cast<int64_t>(g_block) * K + k + 8) * kTaps + tap) * C + c;
      *reinterpret_cast<float2*>(row0) = make_float2(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<float2*>(row8) = make_float2(acc[i][j][2], acc[i][j][3]);
    }
}

// ---------------------------------------------------------------- nhwc_3x3_few_channels
constexpr int kFewMaxC = 4;     // input channels at most
constexpr int kFewWarps = 8;    // warps per block
constexpr int kFewPixels = 16;  // grad_y loads a warp issues before the FMAs that use them

// x[n][hx][w][c] of a channels-last x, 0 outside the image.
__device__ __forceinline__ float x_or_zero(const float* __restrict__ x, const Shape4& s, int n, int hx, int w, int c) {
  if (hx < 0 || hx >= s.H || w < 0 || w >= s.W) return 0.f;
  return x[((static_cast<int64_t>(n) * s.H + hx) * s.W + w) * s.C + c];
}

// Block (g, k tile): warp v takes image row g * kFewWarps + v, then every (G * kFewWarps)-th; lane k sums
// grad_y[p][k] * x at the 9 taps around p for each of the C channels. The grad_y loads of kFewPixels pixels
// are in flight together (what bounds this kernel is grad_y's stream: 32 x 4 bytes per pixel against x's
// C x 4); x's values, the same for all lanes, come from L1 as a window win[t][r][c] of columns w - 1,
// w, w + 1 of rows h - 1, h, h + 1, shifted by one column per pixel.
template <int C>
__global__ void __launch_bounds__(32 * kFewWarps)
    wgrad_nhwc_3x3_few_channels_partials(const float* __restrict__ x, const float* __restrict__ gy, const Shape4 s,
                                         float* __restrict__ partial) {
  __shared__ float warp_sums[kFewWarps][kTaps * C][32];
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int k = static_cast<int>(blockIdx.y) * 32 + lane;
  const bool k_ok = k < s.K;
  const int rows = s.N * s.H, warps = static_cast<int>(gridDim.x) * kFewWarps;
  float acc[C][kTaps];
#pragma unroll
  for (int c = 0; c < C; ++c)
#pragma unroll
    for (int tap = 0; tap < kTaps; ++tap) acc[c][tap] = 0.f;

  for (int row = static_cast<int>(blockIdx.x) * kFewWarps + warp; row < rows; row += warps) {
    const int n = row / s.H, h = row % s.H;
    const float* gy_row = gy + static_cast<int64_t>(row) * s.W * s.K + k;
    float win[3][3][C];
#pragma unroll
    for (int r = 0; r < 3; ++r)
#pragma unroll
      for (int c = 0; c < C; ++c) {
        win[0][r][c] = 0.f;  // column -1: padding
        win[1][r][c] = x_or_zero(x, s, n, h + r - 1, 0, c);
      }
    for (int w0 = 0; w0 < s.W; w0 += kFewPixels) {
      float g[kFewPixels];
#pragma unroll
      for (int j = 0; j < kFewPixels; ++j) g[j] = k_ok && w0 + j < s.W ? gy_row[static_cast<int64_t>(w0 + j) * s.K] : 0.f;
#pragma unroll
      for (int j = 0; j < kFewPixels; ++j) {
#pragma unroll
        for (int r = 0; r < 3; ++r)
#pragma unroll
          for (int c = 0; c < C; ++c) win[2][r][c] = x_or_zero(x, s, n, h + r - 1, w0 + j + 1, c);
#pragma unroll
        for (int r = 0; r < 3; ++r)
#pragma unroll
          for (int t = 0; t < 3; ++t)
#pragma unroll
            for (int c = 0; c < C; ++c) acc[c][3 * r + t] += g[j] * win[t][r][c];
#pragma unroll
        for (int r = 0; r < 3; ++r)
#pragma unroll
          for (int c = 0; c < C; ++c) {
            win[0][r][c] = win[1][r][c];
            win[1][r][c] = win[2][r][c];
          }
      }
    }
  }
  // The block's warps added in a fixed order; partial[g][k][tap][c] as nhwc_3x3_tf32 writes it.
#pragma unroll
  for (int c = 0; c < C; ++c)
#pragma unroll
    for (int tap = 0; tap < kTaps; ++tap) warp_sums[warp][tap * C + c][lane] = acc[c][tap];
  __syncthreads();
  for (int i = static_cast<int>(threadIdx.x); i < kTaps * C * 32; i += static_cast<int>(blockDim.x)) {
    const int tap_c = i / 32, k_out = static_cast<int>(blockIdx.y) * 32 + i % 32;
    if (k_out >= s.K) continue;
    float sum = 0.f;
    for (int v = 0; v < kFewWarps; ++v) sum += warp_sums[v][tap_c][i % 32];
    partial[(static_cast<int64_t>(blockIdx.x) * s.K + k_out) * kTaps * C + tap_c] = sum;
  }
}

// ---------------------------------------------------------------- the sum of the partials
// grad_w[k][c][tap] = sum over g = 0 .. G - 1 of partial[g][k][tap][c], in double, in a fixed order:
// thread (lane, y) of a [32, kSumLanes] block adds g = y, y + kSumLanes, ... of output lane's weight
// (consecutive lanes read consecutive addresses), loading kSumInFlight before adding them; then lane's
// kSumLanes sums are added in order of y.
constexpr int kSumLanes = 8, kSumInFlight = 4;

__global__ void __launch_bounds__(32 * kSumLanes)
    wgrad_nhwc_3x3_sum(const float* __restrict__ partial, int G, int K, int C, float* __restrict__ grad_w) {
  __shared__ double sums[kSumLanes][32];
  const int64_t per_g = static_cast<int64_t>(K) * kTaps * C;
  // Blocks of 32 outputs, grid-stride (the grid is capped: cuda::grid_for); the bound is the block's, so
  // every thread reaches the barriers.
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * 32; first < per_g; first += static_cast<int64_t>(gridDim.x) * 32) {
    const int64_t i = first + threadIdx.x;
    double sum = 0;
    if (i < per_g) {
      int g = static_cast<int>(threadIdx.y);
      for (; g + (kSumInFlight - 1) * kSumLanes < G; g += kSumInFlight * kSumLanes) {
        float v[kSumInFlight];
#pragma unroll
        for (int u = 0; u < kSumInFlight; ++u) v[u] = partial[(g + u * kSumLanes) * per_g + i];
#pragma unroll
        for (int u = 0; u < kSumInFlight; ++u) sum += v[u];
      }
      for (; g < G; g += kSumLanes) sum += partial[g * per_g + i];
    }
    sums[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y == 0 && i < per_g) {
      for (int y = 1; y < kSumLanes; ++y) sum += sums[y][threadIdx.x];
      const int64_t c = i % C, tap = (i / C) % kTaps, k = i / (static_cast<int64_t>(C) * kTaps);
      grad_w[(k * C + c) * kTaps + tap] = static_cast<float>(sum);
    }
    __syncthreads();  // before the next round overwrites sums
  }
}

// ---------------------------------------------------------------- host side
bool selected_by_name(const char* name) {
  return KernelRegistry::instance().is_selected("conv2d.backward_weight", DeviceType::cuda, name);
}

// The declines of both kernels (their contracts).
bool not_3x3_s1_p1(const Tensor& grad_w, const Conv2dParams& p) {
  const Shape& ws = grad_w.shape();
  return ws.size() != 4 || ws[2] != 3 || ws[3] != 3 || p.stride_h != 1 || p.stride_w != 1 || p.pad_h != 1 ||
         p.pad_w != 1;
}
bool not_channels_last(const Tensor& x, const Tensor& gy) { return !is_channels_last(x) || !is_channels_last(gy); }

// nhwc_3x3_tf32's own.
bool tf32_strict_unless_selected() { return float32_precision() == Precision::fp32 && !selected_by_name(kTf32Name); }
bool channels_not_multiple(const Tensor& grad_w) {
  return grad_w.shape().size() != 4 || grad_w.shape()[0] % kTile != 0 || grad_w.shape()[1] % kTile != 0;
}
bool tf32_too_many_channels(const Tensor& grad_w) {
  return grad_w.shape().size() == 4 && grad_w.shape()[0] * grad_w.shape()[1] > kTf32MaxCK &&
         !selected_by_name(kTf32Name);
}

// nhwc_3x3_few_channels's own.
bool too_many_channels(const Tensor& grad_w) { return grad_w.shape().size() != 4 || grad_w.shape()[1] > kFewMaxC; }

// The call's sizes, or false when one does not fit the kernels' int arithmetic.
bool shape_of(const Tensor& x, const Tensor& grad_y, const Tensor& grad_w, Shape4& s) {
  const Shape& xs = x.shape();
  const Shape& ys = grad_y.shape();
  if (ys[2] != xs[2] || ys[3] != xs[3] || ys[1] != grad_w.shape()[0] || xs[1] != grad_w.shape()[1] ||
      !grad_w.is_contiguous())
    return false;
  for (int64_t d : {xs[0], xs[1], xs[2], xs[3], ys[1], xs[0] * xs[2]})
    if (!cuda::fits_int(d)) return false;
  s.N = static_cast<int>(xs[0]);
  s.C = static_cast<int>(xs[1]);
  s.H = static_cast<int>(xs[2]);
  s.W = static_cast<int>(xs[3]);
  s.K = static_cast<int>(ys[1]);
  s.strips_per_row = (s.W + kStrip - 1) / kStrip;
  if (!cuda::fits_int(static_cast<int64_t>(s.N) * s.strips_per_row)) return false;
  s.strips = s.N * s.strips_per_row;
  return true;
}

// Blocks per k (and c) tile: one wave of resident blocks over the tiles, every block the same number of
// work units (strips, or a warp's image rows), and no more partials than kMaxPartialFloats.
template <class Kernel>
int work_groups(Kernel kernel, int threads, int64_t units, int64_t units_per_block, int64_t tiles, int64_t per_g,
                int device) {
  int per_sm = 0;
  MINIDL_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  const int64_t resident = static_cast<int64_t>(cuda::properties(device).multiProcessorCount) * (per_sm > 0 ? per_sm : 1);
  const int64_t blocks_needed = (units + units_per_block - 1) / units_per_block;  // with one unit each
  int64_t G = (resident + tiles - 1) / tiles;
  if (G > kMaxPartialFloats / per_g) G = kMaxPartialFloats / per_g;
  if (G > blocks_needed) G = blocks_needed;
  if (G < 1) G = 1;
  const int64_t rounds = (units + G * units_per_block - 1) / (G * units_per_block);  // units per block slot
  return static_cast<int>((units + rounds * units_per_block - 1) / (rounds * units_per_block));
}

// The partials' fixed-order sum into grad_w.
void sum_partials(const Tensor& partial, int G, const Shape4& s, Tensor& grad_w, cudaStream_t stream) {
  const int64_t per_g = static_cast<int64_t>(s.K) * kTaps * s.C;
  wgrad_nhwc_3x3_sum<<<cuda::grid_for(per_g, 32), dim3(32, kSumLanes), 0, stream>>>(partial.data<float>(), G, s.K,
                                                                                  s.C, grad_w.data<float>());
  MINIDL_LAUNCH_CHECK();
}

bool conv2d_backward_weight_nhwc_3x3_tf32(const Tensor& x, const Tensor& grad_y, Tensor& grad_w,
                                          const Conv2dParams& p) {
  Shape4 s;
  if (tf32_strict_unless_selected() || cuda::any_not_float32(x, grad_y, grad_w) || not_channels_last(x, grad_y) ||
      not_3x3_s1_p1(grad_w, p) || channels_not_multiple(grad_w) || tf32_too_many_channels(grad_w) ||
      cuda::any_unaligned_16(x, grad_y) || !shape_of(x, grad_y, grad_w, s))
    return false;
  const int device = x.device().index;
  cuda::set_device(device);
  if (x.numel() == 0) {  // an empty batch: no terms
    fill_(grad_w, 0.0);
    return true;
  }
  const int64_t per_g = static_cast<int64_t>(s.K) * kTaps * s.C;
  const int G = work_groups(wgrad_nhwc_3x3_partials, kThreads, s.strips, 1,
                            static_cast<int64_t>(s.K / kTile) * (s.C / kTile), per_g, device);
  Tensor partial = empty({G * per_g}, TensorOptions(DType::float32, x.device()));
  const cudaStream_t stream = cuda::stream(device);
  wgrad_nhwc_3x3_partials<<<dim3(G, s.K / kTile, s.C / kTile), kThreads, 0, stream>>>(
      x.data<float>(), grad_y.data<float>(), s, partial.data<float>());
  MINIDL_LAUNCH_CHECK();
  sum_partials(partial, G, s, grad_w, stream);
  return true;
}

template <int C>
void launch_few_channels(const Tensor& x, const Tensor& grad_y, Tensor& grad_w, const Shape4& s, int device) {
  const int64_t per_g = static_cast<int64_t>(s.K) * kTaps * C;
  const int k_tiles = (s.K + 31) / 32;
  const int G = work_groups(wgrad_nhwc_3x3_few_channels_partials<C>, 32 * kFewWarps,
                            static_cast<int64_t>(s.N) * s.H, kFewWarps, k_tiles, per_g, device);
  Tensor partial = empty({G * per_g}, TensorOptions(DType::float32, x.device()));
  const cudaStream_t stream = cuda::stream(device);
  wgrad_nhwc_3x3_few_channels_partials<C><<<dim3(G, k_tiles), 32 * kFewWarps, 0, stream>>>(
      x.data<float>(), grad_y.data<float>(), s, partial.data<float>());
  MINIDL_LAUNCH_CHECK();
  sum_partials(partial, G, s, grad_w, stream);
}

bool conv2d_backward_weight_nhwc_3x3_few_channels(const Tensor& x, const Tensor& grad_y, Tensor& grad_w,
                                                  const Conv2dParams& p) {
  Shape4 s;
  if (cuda::any_not_float32(x, grad_y, grad_w) || not_channels_last(x, grad_y) || not_3x3_s1_p1(grad_w, p) ||
      too_many_channels(grad_w) || !shape_of(x, grad_y, grad_w, s) || !cuda::fits_int(static_cast<int64_t>(s.N) * s.H * s.W))
    return false;
  const int device = x.device().index;
  cuda::set_device(device);
  if (x.numel() == 0) {
    fill_(grad_w, 0.0);
    return true;
  }
  switch (s.C) {
    case 1: launch_few_channels<1>(x, grad_y, grad_w, s, device); break;
    case 2: launch_few_channels<2>(x, grad_y, grad_w, s, device); break;
    case 3: launch_few_channels<3>(x, grad_y, grad_w, s, device); break;
    default: launch_few_channels<4>(x, grad_y, grad_w, s, device); break;
  }
  return true;
}

using Fn = Conv2dBackwardWeightKernel;

// The declines both kernels share, first in each contract.
std::vector<DeclinedShape<Fn>> shared_declines() {
  return {{"not float32",
           [](const Tensor& x, const Tensor& gy, Tensor& gw, const Conv2dParams&) { return cuda::any_not_float32(x, gy, gw); }},
          {"activations not both channels-last",
           [](const Tensor& x, const Tensor& gy, Tensor&, const Conv2dParams&) { return not_channels_last(x, gy); }},
          {"not a 3x3 filter with stride 1 and padding 1",
           [](const Tensor&, const Tensor&, Tensor& gw, const Conv2dParams& p) { return not_3x3_s1_p1(gw, p); }}};
}

}  // namespace

void register_conv_wgrad_nhwc_3x3_cuda() {
  // Priorities 22 and 23: above cudnn_graph_tf32 (21), so channels-last 3x3 weight gradients try these first;
  // the calls they decline go on to cudnn_graph_tf32 and the classic cudnn. The two decline each other's
  // shapes (C <= 4 against C in 32s), so their order does not matter.
  register_kernel(keys::conv2d_backward_weight, DeviceType::cuda, kTf32Name, Priority::tuned + 2,
                  "channels-last 3x3 stride-1 weight gradient on TF32 tensor cores: x rows read once for all 9 "
                  "taps, fixed-order sum (C, K multiples of 32, C x K <= 4096 unless selected; TF32/BF16 or when "
                  "selected)",
                  conv2d_backward_weight_nhwc_3x3_tf32);
  KernelContract<Fn> tf32{{"backward_weight"}, shared_declines()};
  tf32.declines.insert(
      tf32.declines.begin(),
      {"strict FP32 (--precision fp32), unless selected by name",
       [](const Tensor&, const Tensor&, Tensor&, const Conv2dParams&) { return tf32_strict_unless_selected(); }});
  tf32.declines.push_back({"output or input channels not a multiple of 32",
                           [](const Tensor&, const Tensor&, Tensor& gw, const Conv2dParams&) {
                             return channels_not_multiple(gw);
                           }});
  tf32.declines.push_back({"output x input channels above 4096 (cuDNN is faster), unless selected by name",
                           [](const Tensor&, const Tensor&, Tensor& gw, const Conv2dParams&) {
                             return tf32_too_many_channels(gw);
                           }});
  tf32.declines.push_back({"an activation not 16-byte aligned",
                           [](const Tensor& x, const Tensor& gy, Tensor&, const Conv2dParams&) {
                             return cuda::any_unaligned_16(x, gy);  // its loads are float4s
                           }});
  declare_kernel_contract(keys::conv2d_backward_weight, DeviceType::cuda, kTf32Name, std::move(tf32));
  declare_channels_last_kernel(keys::conv2d_backward_weight, DeviceType::cuda, kTf32Name);

  register_kernel(keys::conv2d_backward_weight, DeviceType::cuda, kFewName, Priority::tuned + 3,
                  "channels-last 3x3 stride-1 weight gradient for at most 4 input channels: a lane per output "
                  "channel, float32 FMAs, fixed-order sum",
                  conv2d_backward_weight_nhwc_3x3_few_channels);
  KernelContract<Fn> few{{"backward_weight"}, shared_declines()};
  few.declines.push_back({"more than 4 input channels", [](const Tensor&, const Tensor&, Tensor& gw,
                                                           const Conv2dParams&) { return too_many_channels(gw); }});
  declare_kernel_contract(keys::conv2d_backward_weight, DeviceType::cuda, kFewName, std::move(few));
  declare_channels_last_kernel(keys::conv2d_backward_weight, DeviceType::cuda, kFewName);
}

}  // namespace minidl
