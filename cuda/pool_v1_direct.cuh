// cuda/pool_v1_direct.cuh — the "v1_direct" pooling kernels, their launchers and entry points:
// registered by cuda/pool_v1_direct.cu, and what cuda/pool_v2_2x2.cu falls back on for windows other than
// 2x2 of stride 2. The contract of the four keys:
//
// x [N, C, H, W] -> y [N, C, OH, OW], OH = (H + 2*ph - KH) / sh + 1 (likewise OW); window (p, q)
// covers rows p*sh - ph .. p*sh - ph + KH - 1 and columns q*sw - pw .. q*sw - pw + KW - 1
// (ops/kernel_signatures.h):
//   max_pool2d           y = max over the window's positions inside x (padding never wins)
//   max_pool2d.backward  each window's grad_y goes to the FIRST position of the window, in row-major
//                        window order, where x == y; positions that win several windows sum them
//   avg_pool2d           y = sum over the window / (KH*KW)   (padding counts as zeros, in the count)
//   avg_pool2d.backward  grad_x[pos] = sum over the windows containing pos of grad_y / (KH*KW)
// The backward kernels run one thread per INPUT element and gather from the windows containing it,
// so no two threads write one element and no atomics are needed.
// Included only by .cu files; what it defines is private to each (an unnamed namespace).
#pragma once
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/dispatch.h"
#include "cuda/cuda_common.h"
#include "cuda/kernel_helpers.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr int kBlock = 256;

// Sizes of a call in the index type I of the kernel: int32_t when every index fits (the common case:
// integer division, done several times per element here, is much cheaper on 32 bits), else int64_t.
template <class I>
struct PoolGeometry {
  I N, C, H, W, OH, OW;
  I kh, kw, sh, sw, ph, pw;
};

template <class I>
PoolGeometry<I> geometry(const Tensor& x_like, const Tensor& y_like, const Pool2dParams& p) {
  return {I(x_like.size(0)), I(x_like.size(1)), I(x_like.size(2)), I(x_like.size(3)), I(y_like.size(2)),
          I(y_like.size(3)), I(p.kernel_h),     I(p.kernel_w),     I(p.stride_h),     I(p.stride_w),
          I(p.pad_h),        I(p.pad_w)};
}

// Calls launch(I{}) with I = int32_t when indices up to `largest` (plus a window's reach) fit in it.
template <class Launch>
void with_index_type(int64_t largest, Launch launch) {
  if (largest < INT32_MAX / 2)
    launch(int32_t{0});
  else
    launch(int64_t{0});
}

// Grid-stride loops run on int64_t (so the stride never overflows); each element's index is then
// converted to I for its arithmetic.
__device__ __forceinline__ int64_t first_index() { return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; }
__device__ __forceinline__ int64_t index_step() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// The output rows p whose windows contain input row h: [begin, end). Window p covers
// p*s - pad .. p*s - pad + k - 1, so p*s >= h + pad - k + 1 and p*s <= h + pad.
template <class I>
__device__ __forceinline__ void windows_containing(I h, I k, I s, I pad, I out_size, I& begin, I& end) {
  begin = (h + pad < k) ? I(0) : (h + pad - k) / s + 1;
  end = ::min((h + pad) / s + 1, out_size);
}

// ---------------------------------------------------------------- v1_direct
// One thread per output: scan the window, skipping positions outside x. The reference's rule: the
// window's first position inside x starts the maximum, and a later value replaces it only if greater.
// So a NaN in the first position is the result (no comparison with it is true), and a NaN anywhere
// else is passed over. A window wholly in the padding (possible only when pad >= kernel) gives
// -infinity.
template <class T, class I>
__global__ void max_pool2d_kernel(const T* __restrict__ x, T* __restrict__ y, PoolGeometry<I> g) {
  const int64_t total = int64_t{g.N} * g.C * g.OH * g.OW;
  for (int64_t at = first_index(); at < total; at += index_step()) {
    const I idx = static_cast<I>(at);
    const I q = idx % g.OW, p = (idx / g.OW) % g.OH, nc = idx / (g.OW * g.OH);
    const T* plane = x + nc * g.H * g.W;
    T best = -std::numeric_limits<T>::infinity();
    bool any = false;
    for (I i = 0; i < g.kh; ++i) {
      const I h = p * g.sh - g.ph + i;
      if (h < 0 || h >= g.H) continue;
      for (I j = 0; j < g.kw; ++j) {
        const I w = q * g.sw - g.pw + j;
        if (w < 0 || w >= g.W) continue;
        const T v = plane[h * g.W + w];
        if (!any || v > best) best = v;
        any = true;
      }
    }
    y[idx] = best;
  }
}

// One thread per input element (h, w). For each window (p, q) containing it: the window's gradient is
// ours if x[h, w] == y[p, q] and no earlier position of the window (row-major) also equals y[p, q].
// Checking our own value first skips most windows after one comparison.
template <class T, class I>
__global__ void max_pool2d_backward_kernel(const T* __restrict__ x, const T* __restrict__ y,
                                           const T* __restrict__ gy, T* __restrict__ gx, PoolGeometry<I> g) {
  const int64_t total = int64_t{g.N} * g.C * g.H * g.W;
  for (int64_t at = first_index(); at < total; at += index_step()) {
    const I idx = static_cast<I>(at);
    const I w = idx % g.W, h = (idx / g.W) % g.H, nc = idx / (g.W * g.H);
    const T* plane = x + nc * g.H * g.W;
    const T* y_plane = y + nc * g.OH * g.OW;
    const T* gy_plane = gy + nc * g.OH * g.OW;
    const T mine = plane[h * g.W + w];
    I p_begin, p_end, q_begin, q_end;
    windows_containing(h, g.kh, g.sh, g.ph, g.OH, p_begin, p_end);
    windows_containing(w, g.kw, g.sw, g.pw, g.OW, q_begin, q_end);
    T acc = 0;
    for (I p = p_begin; p < p_end; ++p) {
      for (I q = q_begin; q < q_end; ++q) {
        const T target = y_plane[p * g.OW + q];
        if (!(mine == target)) continue;
        // Is there an earlier position of window (p, q), inside x, that also equals the max?
        const I h0 = p * g.sh - g.ph, w0 = q * g.sw - g.pw;
        bool earlier = false;
        for (I hh = ::max(h0, I(0)); hh <= h && !earlier; ++hh) {
          const I w_stop = (hh == h) ? w : ::min(w0 + g.kw, g.W);  // on our own row, stop before us
          for (I ww = ::max(w0, I(0)); ww < w_stop; ++ww) {
            if (plane[hh * g.W + ww] == target) {
              earlier = true;
              break;
            }
          }
        }
        if (!earlier) acc += gy_plane[p * g.OW + q];
      }
    }
    gx[idx] = acc;
  }
}

template <class T, class I>
__global__ void avg_pool2d_kernel(const T* __restrict__ x, T* __restrict__ y, PoolGeometry<I> g) {
  const int64_t total = int64_t{g.N} * g.C * g.OH * g.OW;
  const T inv_count = T(1) / static_cast<T>(g.kh * g.kw);
  for (int64_t at = first_index(); at < total; at += index_step()) {
    const I idx = static_cast<I>(at);
    const I q = idx % g.OW, p = (idx / g.OW) % g.OH, nc = idx / (g.OW * g.OH);
    const T* plane = x + nc * g.H * g.W;
    T sum = 0;
    for (I i = 0; i < g.kh; ++i) {
      const I h = p * g.sh - g.ph + i;
      if (h < 0 || h >= g.H) continue;
      for (I j = 0; j < g.kw; ++j) {
        const I w = q * g.sw - g.pw + j;
        if (w < 0 || w >= g.W) continue;
        sum += plane[h * g.W + w];
      }
    }
    y[idx] = sum * inv_count;
  }
}

template <class T, class I>
__global__ void avg_pool2d_backward_kernel(const T* __restrict__ gy, T* __restrict__ gx, PoolGeometry<I> g) {
  const int64_t total = int64_t{g.N} * g.C * g.H * g.W;
  const T inv_count = T(1) / static_cast<T>(g.kh * g.kw);
  for (int64_t at = first_index(); at < total; at += index_step()) {
    const I idx = static_cast<I>(at);
    const I w = idx % g.W, h = (idx / g.W) % g.H, nc = idx / (g.W * g.H);
    const T* gy_plane = gy + nc * g.OH * g.OW;
    I p_begin, p_end, q_begin, q_end;
    windows_containing(h, g.kh, g.sh, g.ph, g.OH, p_begin, p_end);
    windows_containing(w, g.kw, g.sw, g.pw, g.OW, q_begin, q_end);
    T sum = 0;
    for (I p = p_begin; p < p_end; ++p)
      for (I q = q_begin; q < q_end; ++q) sum += gy_plane[p * g.OW + q];
    gx[idx] = sum * inv_count;
  }
}

inline bool is_f32_or_f64(const Tensor& t) { return t.dtype() == DType::float32 || t.dtype() == DType::float64; }

// The launchers: dtype from the output, index type from the larger of the x-sized and y-sized tensors.
template <class T>
void launch_max_forward(const Tensor& x, Tensor& y, const Pool2dParams& p, cudaStream_t s) {
  with_index_type(std::max(x.numel(), y.numel()), [&](auto zero) {
    using I = decltype(zero);
    max_pool2d_kernel<T, I><<<cuda::grid_for(y.numel(), kBlock), kBlock, 0, s>>>(x.data<T>(), y.data<T>(),
                                                                                  geometry<I>(x, y, p));
  });
  MINIDL_LAUNCH_CHECK();
}

template <class T>
void launch_max_backward(const Tensor& x, const Tensor& y, const Tensor& gy, Tensor& gx, const Pool2dParams& p,
                         cudaStream_t s) {
  with_index_type(std::max(x.numel(), y.numel()), [&](auto zero) {
    using I = decltype(zero);
    max_pool2d_backward_kernel<T, I><<<cuda::grid_for(gx.numel(), kBlock), kBlock, 0, s>>>(
        x.data<T>(), y.data<T>(), gy.data<T>(), gx.data<T>(), geometry<I>(x, y, p));
  });
  MINIDL_LAUNCH_CHECK();
}

template <class T>
void launch_avg_forward(const Tensor& x, Tensor& y, const Pool2dParams& p, cudaStream_t s) {
  with_index_type(std::max(x.numel(), y.numel()), [&](auto zero) {
    using I = decltype(zero);
    avg_pool2d_kernel<T, I><<<cuda::grid_for(y.numel(), kBlock), kBlock, 0, s>>>(x.data<T>(), y.data<T>(),
                                                                                  geometry<I>(x, y, p));
  });
  MINIDL_LAUNCH_CHECK();
}

template <class T>
void launch_avg_backward(const Tensor& gy, Tensor& gx, const Pool2dParams& p, cudaStream_t s) {
  with_index_type(std::max(gx.numel(), gy.numel()), [&](auto zero) {
    using I = decltype(zero);
    avg_pool2d_backward_kernel<T, I><<<cuda::grid_for(gx.numel(), kBlock), kBlock, 0, s>>>(
        gy.data<T>(), gx.data<T>(), geometry<I>(gx, gy, p));
  });
  MINIDL_LAUNCH_CHECK();
}

inline bool max_pool2d_v1(const Tensor& x, Tensor& y, const Pool2dParams& p) {
  if (!is_f32_or_f64(y)) return false;
  const int device = y.device().index;
  cuda::set_device(device);
  if (y.numel() == 0) return true;
  if (y.dtype() == DType::float32)
    launch_max_forward<float>(x, y, p, cuda::stream(device));
  else
    launch_max_forward<double>(x, y, p, cuda::stream(device));
  return true;
}

inline bool max_pool2d_backward_v1(const Tensor& x, const Tensor& y, const Tensor& grad_y, Tensor& grad_x,
                                   const Pool2dParams& p) {
  if (!is_f32_or_f64(grad_x)) return false;
  const int device = grad_x.device().index;
  cuda::set_device(device);
  if (grad_x.numel() == 0) return true;
  if (grad_x.dtype() == DType::float32)
    launch_max_backward<float>(x, y, grad_y, grad_x, p, cuda::stream(device));
  else
    launch_max_backward<double>(x, y, grad_y, grad_x, p, cuda::stream(device));
  return true;
}

inline bool avg_pool2d_v1(const Tensor& x, Tensor& y, const Pool2dParams& p) {
  if (!is_f32_or_f64(y)) return false;
  const int device = y.device().index;
  cuda::set_device(device);
  if (y.numel() == 0) return true;
  if (y.dtype() == DType::float32)
    launch_avg_forward<float>(x, y, p, cuda::stream(device));
  else
    launch_avg_forward<double>(x, y, p, cuda::stream(device));
  return true;
}

inline bool avg_pool2d_backward_v1(const Tensor& grad_y, Tensor& grad_x, const Pool2dParams& p) {
  if (!is_f32_or_f64(grad_x)) return false;
  const int device = grad_x.device().index;
  cuda::set_device(device);
  if (grad_x.numel() == 0) return true;
  if (grad_x.dtype() == DType::float32)
    launch_avg_backward<float>(grad_y, grad_x, p, cuda::stream(device));
  else
    launch_avg_backward<double>(grad_y, grad_x, p, cuda::stream(device));
  return true;
}

}  // namespace

}  // namespace minidl
