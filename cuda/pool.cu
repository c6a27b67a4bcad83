// cuda/pool.cu — 2-D max and average pooling on the GPU: keys "max_pool2d", "max_pool2d.backward",
// "avg_pool2d", "avg_pool2d.backward". Our own kernels ("v1_direct", float32 and float64) and cuDNN
// peers ("cudnn", float32).
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
// "v2_2x2" (max pooling only): for 2x2 windows of stride 2 without padding, the models' pools, the
// windows tile the plane, so one thread per window does all the work both ways; any other window is
// served by v1_direct's kernels under the v2 name.
// Accumulation convention: outputs are overwritten (=).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/dispatch.h"
#include "cuda/cuda_common.h"
#include "cuda/dense_common.h"
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

// ---------------------------------------------------------------- v2_2x2
// 2x2 windows, stride 2, no padding: window (p, q) is rows 2p, 2p+1 and columns 2q, 2q+1, OH = H / 2 and
// OW = W / 2 (rounded down), and no two windows share a position.
//   forward:  one thread per window reads its four values in row-major order and keeps the first unless
//             a later one is greater (the reference's rule: a NaN in the first position wins, a later
//             NaN is passed over);
//   backward: one thread per window's cell of the plane, ceil(H/2) x ceil(W/2) of them, writes all four
//             of its gradients: grad_y to the first position equal to y, 0 to the others. The cells of an
//             odd plane's last row or column hold no window: their thread writes zeros. Every element of
//             grad_x is written exactly once, and x is read once instead of once per window it could win.
// A warp's threads take consecutive windows of a row, so each of the two rows it reads is 64 consecutive
// values: the loads stay coalesced although each thread's own reads are two apart.
// Predicted: the backward becomes memory-bound (x and grad_x read and written once, y and grad_y once:
// 2.5 x the activation's bytes) instead of re-reading each window for each of its positions; about 4x.
// Measured on the H200 (2026-12-04, `minidl bench --device cuda --op max_pool2d`), MNIST conv2's output
// at batch 1024 (1024x64x24x24): backward 0.109 ms (3.46 TB/s) against v1_direct's 0.504 and cuDNN's
// 0.357; forward 0.066 against 0.093 and 0.079. The MNIST training step at batch 1024: 3.65 -> 3.24 ms.
template <class T, class I>
__global__ void max_pool2x2_kernel(const T* __restrict__ x, T* __restrict__ y, I planes, I H, I W, I OH, I OW) {
  const int64_t total = int64_t{planes} * OH * OW;
  for (int64_t at = first_index(); at < total; at += index_step()) {
    const I idx = static_cast<I>(at);
    const I q = idx % OW, p = (idx / OW) % OH, plane = idx / (OW * OH);
    const T* row0 = x + (plane * H + 2 * p) * W + 2 * q;
    const T* row1 = row0 + W;
    T best = row0[0];
    if (row0[1] > best) best = row0[1];
    if (row1[0] > best) best = row1[0];
    if (row1[1] > best) best = row1[1];
    y[idx] = best;
  }
}

template <class T, class I>
__global__ void max_pool2x2_backward_kernel(const T* __restrict__ x, const T* __restrict__ y,
                                            const T* __restrict__ gy, T* __restrict__ gx, I planes, I H, I W, I OH,
                                            I OW) {
  const I CH = (H + 1) / 2, CW = (W + 1) / 2;  // cells per column and row: the windows, and an odd edge
  const int64_t total = int64_t{planes} * CH * CW;
  for (int64_t at = first_index(); at < total; at += index_step()) {
    const I idx = static_cast<I>(at);
    const I cq = idx % CW, cp = (idx / CW) % CH, plane = idx / (CW * CH);
    const I offset = (plane * H + 2 * cp) * W + 2 * cq;
    T* g0 = gx + offset;
    T* g1 = g0 + W;
    const bool second_row = 2 * cp + 1 < H, second_column = 2 * cq + 1 < W;
    if (cp < OH && cq < OW) {  // a whole window (both rows and columns exist)
      const T* x0 = x + offset;
      const T* x1 = x0 + W;
      const I out = (plane * OH + cp) * OW + cq;
      const T target = y[out], g = gy[out];
      const int winner = x0[0] == target ? 0 : x0[1] == target ? 1 : x1[0] == target ? 2 : x1[1] == target ? 3 : -1;
      g0[0] = winner == 0 ? g : T(0);
      g0[1] = winner == 1 ? g : T(0);
      g1[0] = winner == 2 ? g : T(0);
      g1[1] = winner == 3 ? g : T(0);
    } else {  // the last row or column of an odd plane: in no window
      g0[0] = T(0);
      if (second_column) g0[1] = T(0);
      if (second_row) {
        g1[0] = T(0);
        if (second_column) g1[1] = T(0);
      }
    }
  }
}

bool is_2x2_stride_2(const Pool2dParams& p) {
  return p.kernel_h == 2 && p.kernel_w == 2 && p.stride_h == 2 && p.stride_w == 2 && p.pad_h == 0 && p.pad_w == 0;
}

bool is_f32_or_f64(const Tensor& t) { return t.dtype() == DType::float32 || t.dtype() == DType::float64; }

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

bool max_pool2d_v1(const Tensor& x, Tensor& y, const Pool2dParams& p) {
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

bool max_pool2d_backward_v1(const Tensor& x, const Tensor& y, const Tensor& grad_y, Tensor& grad_x,
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

bool avg_pool2d_v1(const Tensor& x, Tensor& y, const Pool2dParams& p) {
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

bool avg_pool2d_backward_v1(const Tensor& grad_y, Tensor& grad_x, const Pool2dParams& p) {
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

template <class T>
void launch_max_2x2(const Tensor& x, Tensor& y, cudaStream_t s) {
  with_index_type(x.numel(), [&](auto zero) {
    using I = decltype(zero);
    max_pool2x2_kernel<T, I><<<cuda::grid_for(y.numel(), kBlock), kBlock, 0, s>>>(
        x.data<T>(), y.data<T>(), I(x.size(0) * x.size(1)), I(x.size(2)), I(x.size(3)), I(y.size(2)), I(y.size(3)));
  });
  MINIDL_LAUNCH_CHECK();
}

template <class T>
void launch_max_2x2_backward(const Tensor& x, const Tensor& y, const Tensor& gy, Tensor& gx, cudaStream_t s) {
  const int64_t cells = x.size(0) * x.size(1) * ((x.size(2) + 1) / 2) * ((x.size(3) + 1) / 2);
  with_index_type(x.numel(), [&](auto zero) {
    using I = decltype(zero);
    max_pool2x2_backward_kernel<T, I><<<cuda::grid_for(cells, kBlock), kBlock, 0, s>>>(
        x.data<T>(), y.data<T>(), gy.data<T>(), gx.data<T>(), I(x.size(0) * x.size(1)), I(x.size(2)), I(x.size(3)),
        I(y.size(2)), I(y.size(3)));
  });
  MINIDL_LAUNCH_CHECK();
}

bool max_pool2d_v2(const Tensor& x, Tensor& y, const Pool2dParams& p) {
  if (!is_2x2_stride_2(p)) return max_pool2d_v1(x, y, p);
  if (!is_f32_or_f64(y)) return false;
  const int device = y.device().index;
  cuda::set_device(device);
  if (y.numel() == 0) return true;
  if (y.dtype() == DType::float32)
    launch_max_2x2<float>(x, y, cuda::stream(device));
  else
    launch_max_2x2<double>(x, y, cuda::stream(device));
  return true;
}

bool max_pool2d_backward_v2(const Tensor& x, const Tensor& y, const Tensor& grad_y, Tensor& grad_x,
                            const Pool2dParams& p) {
  if (!is_2x2_stride_2(p)) return max_pool2d_backward_v1(x, y, grad_y, grad_x, p);
  if (!is_f32_or_f64(grad_x)) return false;
  const int device = grad_x.device().index;
  cuda::set_device(device);
  if (grad_x.numel() == 0) return true;
  if (grad_x.dtype() == DType::float32)
    launch_max_2x2_backward<float>(x, y, grad_y, grad_x, cuda::stream(device));
  else
    launch_max_2x2_backward<double>(x, y, grad_y, grad_x, cuda::stream(device));
  return true;
}

#ifdef MINIDL_WITH_CUDNN
// ---------------------------------------------------------------- cudnn
// cudnnPoolingForward / cudnnPoolingBackward with CUDNN_POOLING_MAX_DETERMINISTIC and
// CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING (divide by KH*KW, our rule), float32, NCHW.
// Max pooling ties: cuDNN does not document which maximal position of a window receives its
// gradient; the contract says the first in row-major window order. On cuDNN 9.14 (H200) the [cuda]
// tie test, on inputs of three distinct values (ties everywhere), found cuDNN agreeing with that
// rule, and padding treated as -infinity like ours; being undocumented, the test keeps reporting it.
// NaN: with CUDNN_NOT_PROPAGATE_NAN a NaN never wins a window, where the reference's rule lets a NaN in
// the window's first position win (and passes over later ones); measured on the H200 (cuDNN 9.14), the
// NaN test of tests/test_conv_pool.cpp reports the difference instead of failing cuDNN for it.
using cuda::CudnnPoolDesc;
using cuda::CudnnTensorDesc;

bool pool_shapes_ok(const Tensor& x_like, const Tensor& y_like) {
  for (const Tensor* t : {&x_like, &y_like}) {
    if (t->dtype() != DType::float32 || t->numel() == 0 || !cuda::fits_int(t->numel())) return false;
    for (int64_t d : t->shape())
      if (!cuda::fits_int(d)) return false;
  }
  return true;
}

struct PoolCall {
  CudnnPoolDesc pool;
  CudnnTensorDesc x_desc, y_desc;
  PoolCall(cudnnPoolingMode_t mode, const Tensor& x_like, const Tensor& y_like, const Pool2dParams& p)
      : pool(mode, p.kernel_h, p.kernel_w, p.pad_h, p.pad_w, p.stride_h, p.stride_w),
        x_desc(int(x_like.size(0)), int(x_like.size(1)), int(x_like.size(2)), int(x_like.size(3))),
        y_desc(int(y_like.size(0)), int(y_like.size(1)), int(y_like.size(2)), int(y_like.size(3))) {}
  // cuDNN must agree with the front end on the output size (it always should; decline if not).
  bool output_matches(const Tensor& y_like) const {
    int n = 0, c = 0, h = 0, w = 0;
    MINIDL_CUDNN_CHECK(cudnnGetPooling2dForwardOutputDim(pool.get(), x_desc.get(), &n, &c, &h, &w));
    return Shape{n, c, h, w} == y_like.shape();
  }
};

bool pool_forward_cudnn(cudnnPoolingMode_t mode, const Tensor& x, Tensor& y, const Pool2dParams& p) {
  if (!pool_shapes_ok(x, y)) return false;
  const int device = y.device().index;
  cuda::set_device(device);
  PoolCall call(mode, x, y, p);
  if (!call.output_matches(y)) return false;
  const float one = 1.0f, zero = 0.0f;
  MINIDL_CUDNN_CHECK(cudnnPoolingForward(cuda::cudnn_handle(device), call.pool.get(), &one, call.x_desc.get(),
                                         x.raw_data(), &zero, call.y_desc.get(), y.raw_data()));
  return true;
}

// x and y are read only by max pooling; average pooling is given placeholders of the right shapes.
bool pool_backward_cudnn(cudnnPoolingMode_t mode, const void* x, const void* y, const Tensor& grad_y, Tensor& grad_x,
                         const Pool2dParams& p) {
  if (!pool_shapes_ok(grad_x, grad_y)) return false;
  const int device = grad_x.device().index;
  cuda::set_device(device);
  PoolCall call(mode, grad_x, grad_y, p);
  if (!call.output_matches(grad_y)) return false;
  const float one = 1.0f, zero = 0.0f;
  MINIDL_CUDNN_CHECK(cudnnPoolingBackward(cuda::cudnn_handle(device), call.pool.get(), &one, call.y_desc.get(), y,
                                          call.y_desc.get(), grad_y.raw_data(), call.x_desc.get(), x, &zero,
                                          call.x_desc.get(), grad_x.raw_data()));
  return true;
}

bool max_pool2d_cudnn(const Tensor& x, Tensor& y, const Pool2dParams& p) {
  return pool_forward_cudnn(CUDNN_POOLING_MAX_DETERMINISTIC, x, y, p);
}

bool max_pool2d_backward_cudnn(const Tensor& x, const Tensor& y, const Tensor& grad_y, Tensor& grad_x,
                               const Pool2dParams& p) {
  if (x.dtype() != DType::float32 || y.dtype() != DType::float32) return false;
  return pool_backward_cudnn(CUDNN_POOLING_MAX_DETERMINISTIC, x.raw_data(), y.raw_data(), grad_y, grad_x, p);
}

bool avg_pool2d_cudnn(const Tensor& x, Tensor& y, const Pool2dParams& p) {
  return pool_forward_cudnn(CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, x, y, p);
}

// cuDNN's API wants x and y even for average pooling, whose gradient depends on neither: grad_y stands
// in for y (same shape) and an uninitialised scratch tensor for x, so no input aliases the output.
bool avg_pool2d_backward_cudnn(const Tensor& grad_y, Tensor& grad_x, const Pool2dParams& p) {
  if (!pool_shapes_ok(grad_x, grad_y)) return false;
  const Tensor x_placeholder = empty(grad_x.shape(), grad_x.options());
  return pool_backward_cudnn(CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, x_placeholder.raw_data(), grad_y.raw_data(),
                             grad_y, grad_x, p);
}
#endif  // MINIDL_WITH_CUDNN

}  // namespace

void register_pool_cuda() {
  // Max pooling: our kernels are the default because they implement the contract's tie rule by
  // construction, where cuDNN's is undocumented; they ran as fast as cuDNN's on an H200 (memory-bound).
  // Average pooling: cuDNN's backward was faster, so it is the default there.
  register_kernel(keys::max_pool2d, DeviceType::cuda, "v2_2x2", Priority::tuned + 5,
                  "2x2 windows of stride 2: one thread per window; other windows as v1_direct (f32, f64)",
                  max_pool2d_v2);
  register_kernel(
      keys::max_pool2d_backward, DeviceType::cuda, "v2_2x2", Priority::tuned + 5,
      "2x2 windows of stride 2: one thread per window writes its 4 gradients; other windows as v1_direct (f32, f64)",
      max_pool2d_backward_v2);
  register_kernel(keys::max_pool2d, DeviceType::cuda, "v1_direct", Priority::tuned,
                  "one thread per output scanning its window (f32, f64)", max_pool2d_v1);
  register_kernel(
      keys::max_pool2d_backward, DeviceType::cuda, "v1_direct", Priority::tuned,
      "one thread per input gathering the windows it wins, first-max tie rule, no atomics (f32, f64)",
      max_pool2d_backward_v1);
  register_kernel(keys::avg_pool2d, DeviceType::cuda, "v1_direct", Priority::portable,
                  "one thread per output summing its window (f32, f64)", avg_pool2d_v1);
  register_kernel(keys::avg_pool2d_backward, DeviceType::cuda, "v1_direct", Priority::portable,
                  "one thread per input gathering its windows, no atomics (f32, f64)",
                  avg_pool2d_backward_v1);
#ifdef MINIDL_WITH_CUDNN
  register_kernel(keys::max_pool2d, DeviceType::cuda, "cudnn", Priority::portable,
                  "cudnnPoolingForward, MAX_DETERMINISTIC (f32)", max_pool2d_cudnn);
  register_kernel(
      keys::max_pool2d_backward, DeviceType::cuda, "cudnn", Priority::portable,
      "cudnnPoolingBackward, MAX_DETERMINISTIC; tie rule undocumented (first-max in tests) (f32)", max_pool2d_backward_cudnn);
  register_kernel(keys::avg_pool2d, DeviceType::cuda, "cudnn", Priority::tuned,
                  "cudnnPoolingForward, AVERAGE_COUNT_INCLUDE_PADDING (f32)", avg_pool2d_cudnn);
  register_kernel(keys::avg_pool2d_backward, DeviceType::cuda, "cudnn", Priority::tuned,
                  "cudnnPoolingBackward, AVERAGE_COUNT_INCLUDE_PADDING (f32)",
                  avg_pool2d_backward_cudnn);
#endif
}

}  // namespace minidl
