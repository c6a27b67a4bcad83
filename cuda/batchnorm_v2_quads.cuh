// cuda/batchnorm_v2_quads.cuh — v2_split's kernels for rows four channels a load: steps 1 (partial
// sums) and 3 (apply) of both directions, for rows [M, C] with C a multiple of 4 (a channels-last
// [N, C, H, W] seen as [N*H*W, C], the captcha model's layers). Step 2 (finalize) and the launchers are
// cuda/batchnorm_v2_split.cu's, which is the only file that includes this one; the contract of the keys is
// in cuda/batchnorm_common.cuh.
//
// A thread owns a quad of neighbouring channels (one float4) and a row lane, so a warp's load is 512
// contiguous bytes (C = 32: four whole rows), and steps 1 and 3 issue a quarter of the loads, stores and
// index computations of the scalar rows kernels (the apply pass's channel is one modulo per four values).
// The sums are the same per channel, added per thread and then over the row lanes in a fixed order:
// deterministic, though not the scalar rows' bits.
// bfloat16 activations (ops/bfloat16_widening.h): the same kernels read and write quads of four bfloat16 values
// (8 bytes, BfQuad below) for x, y, grad_y and grad_x, widened to float32 on load and rounded to nearest even
// on store; the per-channel vectors (mean, scale, beta, the coefficients) and every sum stay float32 or
// double. The quad type is the kernels' template parameter Quad: float4 or BfQuad.
// Included only by .cu files; what it defines is private to each (an unnamed namespace).
#pragma once
#include <cuda_bf16.h>

#include <cstdint>
#include <initializer_list>

#include "cuda/batchnorm_common.cuh"
#include "cuda/cuda_common.h"
#include "cuda/kernel_helpers.h"

namespace minidl {

namespace {

constexpr int kQuadBlock = 256;  // threads per block of the partial-sum kernels

// Four neighbouring bfloat16 channels: one 8-byte load or store.
struct alignas(8) BfQuad {
  __nv_bfloat162 lo, hi;
};

// A quad of activations as four floats (exact for bfloat16), and four floats stored as a quad.
__device__ __forceinline__ float4 load4(const float4* __restrict__ p, int64_t i) { return p[i]; }
__device__ __forceinline__ float4 load4(const BfQuad* __restrict__ p, int64_t i) {
  const BfQuad v = p[i];
  const float2 a = __bfloat1622float2(v.lo), b = __bfloat1622float2(v.hi);
  return make_float4(a.x, a.y, b.x, b.y);
}
__device__ __forceinline__ void store4(float4* __restrict__ p, int64_t i, float4 v) { p[i] = v; }
__device__ __forceinline__ void store4(BfQuad* __restrict__ p, int64_t i, float4 v) {
  p[i] = BfQuad{__floats2bfloat162_rn(v.x, v.y), __floats2bfloat162_rn(v.z, v.w)};
}

// Rows four channels a load: Q = C / 4 quads; a block of kQuadBlock threads covers `tile` quads (all of them
// up to kQuadBlock) times `lanes` = kQuadBlock / tile row lanes; the grid's y axis walks the quad tiles.
struct QuadLayout {
  int Q, tile, lanes;
};
QuadLayout quad_layout(int64_t C) {
  const int Q = static_cast<int>(C / 4);
  const int tile = Q < kQuadBlock ? Q : kQuadBlock;
  return {Q, tile, kQuadBlock / tile};
}
constexpr int kQuadLoadsInFlight = 4, kQuadBackwardLoadsInFlight = 2;  // float4s of each tensor
// Rows per chunk at least: 16 per row lane, so a thread loads 16 float4s or more before its block adds up.
int64_t quad_min_chunk(const QuadLayout& L) { return 16 * static_cast<int64_t>(L.lanes); }

// Whether a call takes the four-channel rows path: float32 rows (S = 1), C % 4 == 0, every tensor the
// kernels read as float4 on a 16-byte boundary (the per-channel vectors too), C within the grid's y range.
bool takes_quads(const BnDims& d, std::initializer_list<const void*> pointers) {
  if (d.S != 1 || d.C % 4 != 0 || d.C / 4 > 65535LL * kQuadBlock) return false;
  for (const void* p : pointers)
    if (p != nullptr && !cuda::aligned_16(p)) return false;
  return true;
}

// Where a thread of a quad kernel's block works: quad q (of tile blockIdx.y) on row lane `lane`, over the
// rows [begin, end) of chunk g = blockIdx.x; inactive threads (past the last quad or row lane) only wait.
struct QuadThread {
  int qi, lane;
  int64_t q;
  uint32_t begin, end;
  bool active;
};
__device__ __forceinline__ QuadThread quad_thread(const QuadLayout& L, uint32_t M, uint32_t chunk) {
  QuadThread t;
  t.qi = threadIdx.x % L.tile;
  t.lane = threadIdx.x / L.tile;
  t.q = static_cast<int64_t>(blockIdx.y) * L.tile + t.qi;
  t.begin = blockIdx.x * chunk;
  t.end = M - t.begin < chunk ? M : t.begin + chunk;  // begin < M (rows_plan_for_tiles)
  t.active = t.q < L.Q && t.lane < L.lanes;
  return t;
}

// The quad kernels' last part: each thread's two sums (a, b) for the four channels of its quad, added over
// the block's row lanes in order (lane 0's, then lane 1's, ...) and written as chunk blockIdx.x's partials
// of those channels (partial[2c][g] = a, partial[2c + 1][g] = b). Every thread of the block calls it.
__device__ void write_quad_partials(const QuadThread& t, const QuadLayout& L, double (&a)[4], double (&b)[4],
                                    double* __restrict__ partial) {
  __shared__ double lane_sums[2][4][kQuadBlock];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    lane_sums[0][j][threadIdx.x] = a[j];
    lane_sums[1][j][threadIdx.x] = b[j];
  }
  __syncthreads();
  if (t.lane != 0 || !t.active) return;
  for (int l = 1; l < L.lanes; ++l)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      a[j] += lane_sums[0][j][l * L.tile + t.qi];
      b[j] += lane_sums[1][j][l * L.tile + t.qi];
    }
  const int64_t G = gridDim.x, g = blockIdx.x;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int64_t c = 4 * t.q + j;
    partial[(2 * c) * G + g] = a[j];
    partial[(2 * c + 1) * G + g] = b[j];
  }
}

// Step 1 for rows, four channels a load: x is [M, Q] quads; block (g, tile) sums rows
// [g * chunk, ...) of its quads, each thread its quad over every lanes-th row, then the lanes in order.
template <class Quad>
__global__ void __launch_bounds__(kQuadBlock)
    bn_forward_partials_quads(const Quad* __restrict__ x, QuadLayout L, uint32_t M, uint32_t chunk,
                              double* __restrict__ partial) {
  const QuadThread t = quad_thread(L, M, chunk);
  double s1[4] = {0, 0, 0, 0}, s2[4] = {0, 0, 0, 0};
  const int64_t q = t.q;
  if (t.active) {
    const float4 k4 = load4(x, q);  // the shifts K_c = x[0, c] of the quad's channels
    const double K[4] = {k4.x, k4.y, k4.z, k4.w};
    auto add = [&](const float4 v) {
      const float vals[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const double d = static_cast<double>(vals[j]) - K[j];
        s1[j] += d;
        s2[j] += d * d;
      }
    };
    uint32_t r = t.begin + t.lane;
    for (; uint64_t{r} + uint64_t{kQuadLoadsInFlight - 1} * L.lanes < t.end; r += kQuadLoadsInFlight * L.lanes) {
      float4 v[kQuadLoadsInFlight];
#pragma unroll
      for (int u = 0; u < kQuadLoadsInFlight; ++u) v[u] = load4(x, static_cast<int64_t>(r + u * L.lanes) * L.Q + q);
#pragma unroll
      for (int u = 0; u < kQuadLoadsInFlight; ++u) add(v[u]);
    }
    for (; r < t.end; r += L.lanes) add(load4(x, static_cast<int64_t>(r) * L.Q + q));
  }
  write_quad_partials(t, L, s1, s2, partial);
}

// Step 3 for rows, four channels a load: y = (x - mean_c) * scale_c + beta_c (then relu(y) when Relu), one
// quad of x (quad i % Q of its row) per thread and step; the per-channel vectors are float32.
template <class Quad, bool Relu>
__global__ void bn_forward_apply_quads(const Quad* __restrict__ x, const float4* __restrict__ mean,
                                       const float4* __restrict__ scale, const float4* __restrict__ beta,
                                       Quad* __restrict__ y, uint32_t total4, uint32_t Q) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total4; i += gridDim.x * blockDim.x) {
    const uint32_t q = i % Q;
    const float4 v = load4(x, i), m = mean[q], k = scale[q], b = beta[q];
    store4(y, i,
           make_float4(relu_if<Relu>((v.x - m.x) * k.x + b.x), relu_if<Relu>((v.y - m.y) * k.y + b.y),
                       relu_if<Relu>((v.z - m.z) * k.z + b.z), relu_if<Relu>((v.w - m.w) * k.w + b.w)));
  }
}

// grad_y * [y > 0] of four values when Relu (y may be null otherwise), as masked_grad.
template <bool Relu, class Quad>
__device__ __forceinline__ float4 masked_grad4(const Quad* __restrict__ gy, const Quad* __restrict__ y,
                                               int64_t off) {
  float4 g = load4(gy, off);
  if constexpr (Relu) {
    const float4 out = load4(y, off);
    g = make_float4(out.x > 0.f ? g.x : 0.f, out.y > 0.f ? g.y : 0.f, out.z > 0.f ? g.z : 0.f,
                    out.w > 0.f ? g.w : 0.f);
  }
  return g;
}

// Step 1 of the backward for rows, four channels a load, laid out as bn_forward_partials_quads.
template <class Quad, bool Relu>
__global__ void __launch_bounds__(kQuadBlock)
    bn_backward_partials_quads(const Quad* __restrict__ x, const Quad* __restrict__ y,
                               const Quad* __restrict__ gy, const float* __restrict__ save_mean, QuadLayout L,
                               uint32_t M, uint32_t chunk, double* __restrict__ partial) {
  const QuadThread t = quad_thread(L, M, chunk);
  double sum_gy[4] = {0, 0, 0, 0}, sum_gy_xc[4] = {0, 0, 0, 0};
  const int64_t q = t.q;
  if (t.active) {
    const double mean[4] = {save_mean[4 * q], save_mean[4 * q + 1], save_mean[4 * q + 2], save_mean[4 * q + 3]};
    auto add = [&](const float4 gv, const float4 xv) {
      const float gs[4] = {gv.x, gv.y, gv.z, gv.w}, xs[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const double g_val = gs[j];
        sum_gy[j] += g_val;
        sum_gy_xc[j] += g_val * (static_cast<double>(xs[j]) - mean[j]);
      }
    };
    uint32_t r = t.begin + t.lane;
    for (; uint64_t{r} + uint64_t{kQuadBackwardLoadsInFlight - 1} * L.lanes < t.end;
         r += kQuadBackwardLoadsInFlight * L.lanes) {
      float4 g_vals[kQuadBackwardLoadsInFlight], x_vals[kQuadBackwardLoadsInFlight];
#pragma unroll
      for (int u = 0; u < kQuadBackwardLoadsInFlight; ++u) {
        const int64_t off = static_cast<int64_t>(r + u * L.lanes) * L.Q + q;
        g_vals[u] = masked_grad4<Relu>(gy, y, off);
        x_vals[u] = load4(x, off);
      }
#pragma unroll
      for (int u = 0; u < kQuadBackwardLoadsInFlight; ++u) add(g_vals[u], x_vals[u]);
    }
    for (; r < t.end; r += L.lanes) {
      const int64_t off = static_cast<int64_t>(r) * L.Q + q;
      add(masked_grad4<Relu>(gy, y, off), load4(x, off));
    }
  }
  write_quad_partials(t, L, sum_gy, sum_gy_xc, partial);
}

// Step 3 of the backward for rows, four channels a load: coef holds A, B and D per channel
// (bn_backward_finalize, float32), read as float4s at A + q, B + q and D + q.
template <class Quad, bool Relu>
__global__ void bn_backward_apply_quads(const Quad* __restrict__ x, const Quad* __restrict__ y,
                                        const Quad* __restrict__ gy, const float4* __restrict__ mean,
                                        const float4* __restrict__ A, const float4* __restrict__ B,
                                        const float4* __restrict__ D, Quad* __restrict__ gx, uint32_t total4,
                                        uint32_t Q) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total4; i += gridDim.x * blockDim.x) {
    const uint32_t q = i % Q;
    const float4 g = masked_grad4<Relu>(gy, y, i), v = load4(x, i), m = mean[q], a = A[q], b = B[q], d = D[q];
    store4(gx, i,
           make_float4(a.x * g.x + b.x * (v.x - m.x) + d.x, a.y * g.y + b.y * (v.y - m.y) + d.y,
                       a.z * g.z + b.z * (v.z - m.z) + d.z, a.w * g.w + b.w * (v.w - m.w) + d.w));
  }
}

}  // namespace

}  // namespace minidl
