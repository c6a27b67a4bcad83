// cuda/batchnorm_v2_rows.cuh — v2_split's step 1 (partial sums) for rows, one channel a thread, forward and
// backward: rows [M, C] of any dtype and C (BatchNorm1d's [N, C]; a channels-last [N, C, H, W] seen as
// [N*H*W, C]; float32 rows with C % 4 == 0 go four channels a load instead, cuda/batchnorm_v2_quads.cuh).
// Steps 2 and 3 and the launchers are cuda/batchnorm_v2_split.cu's, which is the only file that includes
// this one; the contract of the keys is in cuda/batchnorm_common.cuh.
//
// Channel c's values are C apart, so a block puts kRowsTile neighbouring channels on a warp (every warp
// load is one 128-byte row segment) and kRowsLanes row lanes on its y axis, each lane striding over the
// chunk's rows; the lanes' sums are then added in lane order (write_rows_partials): deterministic.
// Included only by .cu files; what it defines is private to each (an unnamed namespace).
#pragma once
#include <cstdint>

#include "cuda/batchnorm_common.cuh"
#include "cuda/cuda_common.h"
#include "cuda/kernel_helpers.h"

namespace minidl {

namespace {

constexpr int kRowsTile = 32, kRowsLanes = 8;  // a block: 32 channels x 8 row lanes
// Values of each tensor loaded before any is added, as in the plane kernels (cuda/batchnorm_v2_split.cu,
// "Loads in flight").
constexpr int kRowsLoadsInFlight = 8, kRowsBackwardLoadsInFlight = 4;

// The end of step 1 for rows: each thread's two sums a and b go to shared memory; row lane 0 of each
// channel adds the other lanes' in lane order and writes partial[2c][g] and partial[2c + 1][g].
__device__ void write_rows_partials(int64_t c, int64_t C, double a, double b, double* __restrict__ partial) {
  __shared__ double lane_sums[2][kRowsLanes][kRowsTile];
  lane_sums[0][threadIdx.y][threadIdx.x] = a;
  lane_sums[1][threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y != 0 || c >= C) return;
  for (int lane = 1; lane < kRowsLanes; ++lane) {
    a += lane_sums[0][lane][threadIdx.x];
    b += lane_sums[1][lane][threadIdx.x];
  }
  const int64_t G = gridDim.x, g = blockIdx.x;
  partial[(2 * c) * G + g] = a;
  partial[(2 * c + 1) * G + g] = b;
}

// Step 1 for rows (S = 1): x is [M, C]; block (g, tile) sums rows [g * chunk, ...) of its 32 channels.
template <class T>
__global__ void __launch_bounds__(kRowsTile* kRowsLanes)
    bn_forward_partials_rows(const T* __restrict__ x, int64_t C, uint32_t M, uint32_t chunk,
                             double* __restrict__ partial) {
  const int64_t c = static_cast<int64_t>(blockIdx.y) * kRowsTile + threadIdx.x;
  const uint32_t begin = blockIdx.x * chunk;
  const uint32_t end = M - begin < chunk ? M : begin + chunk;  // begin < M (rows_plan)
  double s1 = 0, s2 = 0;
  if (c < C) {
    const double K = x[c];  // x[0, c]
    uint32_t r = begin + threadIdx.y;
    for (; uint64_t{r} + (kRowsLoadsInFlight - 1) * kRowsLanes < end; r += kRowsLoadsInFlight * kRowsLanes) {
      T v[kRowsLoadsInFlight];
#pragma unroll
      for (int u = 0; u < kRowsLoadsInFlight; ++u) v[u] = x[static_cast<int64_t>(r + u * kRowsLanes) * C + c];
#pragma unroll
      for (int u = 0; u < kRowsLoadsInFlight; ++u) {
        const double d = static_cast<double>(v[u]) - K;
        s1 += d;
        s2 += d * d;
      }
    }
    for (; r < end; r += kRowsLanes) {
      const double d = static_cast<double>(x[static_cast<int64_t>(r) * C + c]) - K;
      s1 += d;
      s2 += d * d;
    }
  }
  write_rows_partials(c, C, s1, s2, partial);
}

// Step 1 of the backward for rows (S = 1), laid out as bn_forward_partials_rows.
template <class T, bool Relu>
__global__ void __launch_bounds__(kRowsTile* kRowsLanes)
    bn_backward_partials_rows(const T* __restrict__ x, const T* __restrict__ y, const T* __restrict__ gy,
                              const T* __restrict__ save_mean, int64_t C, uint32_t M, uint32_t chunk,
                              double* __restrict__ partial) {
  const int64_t c = static_cast<int64_t>(blockIdx.y) * kRowsTile + threadIdx.x;
  const uint32_t begin = blockIdx.x * chunk;
  const uint32_t end = M - begin < chunk ? M : begin + chunk;  // begin < M (rows_plan)
  double sum_gy = 0, sum_gy_xc = 0;
  if (c < C) {
    const double mean = save_mean[c];
    uint32_t r = begin + threadIdx.y;
    for (; uint64_t{r} + (kRowsBackwardLoadsInFlight - 1) * kRowsLanes < end;
         r += kRowsBackwardLoadsInFlight * kRowsLanes) {
      T g_vals[kRowsBackwardLoadsInFlight], x_vals[kRowsBackwardLoadsInFlight];
#pragma unroll
      for (int u = 0; u < kRowsBackwardLoadsInFlight; ++u) {
        const int64_t off = static_cast<int64_t>(r + u * kRowsLanes) * C + c;
        g_vals[u] = masked_grad<Relu>(gy, y, off);
        x_vals[u] = x[off];
      }
#pragma unroll
      for (int u = 0; u < kRowsBackwardLoadsInFlight; ++u) {
        const double g_val = g_vals[u];
        sum_gy += g_val;
        sum_gy_xc += g_val * (static_cast<double>(x_vals[u]) - mean);
      }
    }
    for (; r < end; r += kRowsLanes) {
      const int64_t off = static_cast<int64_t>(r) * C + c;
      const double g_val = masked_grad<Relu>(gy, y, off);
      sum_gy += g_val;
      sum_gy_xc += g_val * (static_cast<double>(x[off]) - mean);
    }
  }
  write_rows_partials(c, C, sum_gy, sum_gy_xc, partial);
}

}  // namespace

}  // namespace minidl
