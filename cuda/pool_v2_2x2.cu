// cuda/pool_v2_2x2.cu — "v2_2x2": max pooling on the GPU (keys "max_pool2d", "max_pool2d.backward",
// float32 and float64) for 2x2 windows of stride 2 without padding, the models' pools: the windows tile
// the plane, so one thread per window does all the work both ways; any other window is served by
// v1_direct's kernels (cuda/pool_v1_direct.cuh) under the v2 name. The contract is in that header.
// Channels-last tensors (core/memory_format.h): any window that tiles the plane (stride = window, no
// padding: 2x2, and the captcha model's 2x1) by the NHWC kernels below, float32, float64 and bfloat16;
// other windows decline (cuDNN's NHWC pooling takes them).
// Accumulation convention: outputs are overwritten (=).
#include <cuda_bf16.h>

#include <cstdint>
#include <initializer_list>

#include "core/dispatch.h"
#include "core/memory_format.h"
#include "cuda/cuda_common.h"
#include "cuda/pool_v1_direct.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

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
// Why faster: the backward becomes memory-bound (x and grad_x read and written once, y and grad_y once)
// instead of re-reading each window for each of its positions.
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

// ---------------------------------------------------------------- channels-last (NHWC), tiling windows
// Windows of KH x KW with stride (KH, KW) and no padding tile the plane: OH = H / KH, OW = W / KW (rounded
// down). The tensors are [N, H, W, C] in memory; a thread's index runs over that order with the channel
// fastest, so a warp reads 32 consecutive channels of one position: coalesced, as each window position
// of the channels is a contiguous run of C values. Same rules as the kernels above:
//   forward:  y(n, c, p, q) = the window's first value (row-major) unless a later one is greater;
//   backward: one thread per cell (window-sized block of the plane, ceil(H/KH) x ceil(W/KW) of them)
//             writes every gradient of its cell: grad_y to the window's first position equal to y, 0 to
//             the others and to the cells in no window (the remainder rows and columns).
template <class T, class I>
__global__ void max_pool_tiles_nhwc_kernel(const T* __restrict__ x, T* __restrict__ y, I N, I C, I H, I W, I KH,
                                           I KW, I OH, I OW) {
  const int64_t total = int64_t{N} * OH * OW * C;
  for (int64_t at = first_index(); at < total; at += index_step()) {
    const I idx = static_cast<I>(at);
    const I c = idx % C, q = (idx / C) % OW, p = (idx / (C * OW)) % OH, n = idx / (C * OW * OH);
    const T* window = x + ((n * H + p * KH) * W + q * KW) * C + c;
    T best = window[0];
    for (I i = 0; i < KH; ++i)
      for (I j = 0; j < KW; ++j) {
        const T v = window[(i * W + j) * C];
        if (v > best) best = v;
      }
    y[idx] = best;
  }
}

template <class T, class I>
__global__ void max_pool_tiles_nhwc_backward_kernel(const T* __restrict__ x, const T* __restrict__ y,
                                                    const T* __restrict__ gy, T* __restrict__ gx, I N, I C, I H, I W,
                                                    I KH, I KW, I OH, I OW) {
  const I CH = (H + KH - 1) / KH, CW = (W + KW - 1) / KW;  // cells per column and row
  const int64_t total = int64_t{N} * CH * CW * C;
  for (int64_t at = first_index(); at < total; at += index_step()) {
    const I idx = static_cast<I>(at);
    const I c = idx % C, cq = (idx / C) % CW, cp = (idx / (C * CW)) % CH, n = idx / (C * CW * CH);
    const I offset = ((n * H + cp * KH) * W + cq * KW) * C + c;
    if (cp < OH && cq < OW) {  // a whole window
      const I out = ((n * OH + cp) * OW + cq) * C + c;
      const T target = y[out], g = gy[out];
      bool given = false;
      for (I i = 0; i < KH; ++i)
        for (I j = 0; j < KW; ++j) {
          const I at_ij = offset + (i * W + j) * C;
          const bool wins = !given && x[at_ij] == target;
          given = given || wins;
          gx[at_ij] = wins ? g : T(0);
        }
    } else {  // a cell of the remainder rows or columns: in no window
      for (I i = 0; i < KH && cp * KH + i < H; ++i)
        for (I j = 0; j < KW && cq * KW + j < W; ++j) gx[offset + (i * W + j) * C] = T(0);
    }
  }
}

bool tiles_the_plane(const Pool2dParams& p) {
  return p.stride_h == p.kernel_h && p.stride_w == p.kernel_w && p.pad_h == 0 && p.pad_w == 0;
}

template <class T>
void launch_max_tiles_nhwc(const Tensor& x, Tensor& y, const Pool2dParams& p, cudaStream_t s) {
  with_index_type(x.numel(), [&](auto zero) {
    using I = decltype(zero);
    max_pool_tiles_nhwc_kernel<T, I><<<cuda::grid_for(y.numel(), kBlock), kBlock, 0, s>>>(
        static_cast<const T*>(x.raw_data()), static_cast<T*>(y.raw_data()), I(x.size(0)), I(x.size(1)), I(x.size(2)), I(x.size(3)), I(p.kernel_h),
        I(p.kernel_w), I(y.size(2)), I(y.size(3)));
  });
  MINIDL_LAUNCH_CHECK();
}

template <class T>
void launch_max_tiles_nhwc_backward(const Tensor& x, const Tensor& y, const Tensor& gy, Tensor& gx,
                                    const Pool2dParams& p, cudaStream_t s) {
  const int64_t cells = x.size(0) * x.size(1) * ((x.size(2) + p.kernel_h - 1) / p.kernel_h) *
                        ((x.size(3) + p.kernel_w - 1) / p.kernel_w);
  with_index_type(x.numel(), [&](auto zero) {
    using I = decltype(zero);
    max_pool_tiles_nhwc_backward_kernel<T, I><<<cuda::grid_for(cells, kBlock), kBlock, 0, s>>>(
        static_cast<const T*>(x.raw_data()), static_cast<const T*>(y.raw_data()), static_cast<const T*>(gy.raw_data()),
        static_cast<T*>(gx.raw_data()), I(x.size(0)), I(x.size(1)), I(x.size(2)),
        I(x.size(3)), I(p.kernel_h), I(p.kernel_w), I(y.size(2)), I(y.size(3)));
  });
  MINIDL_LAUNCH_CHECK();
}

bool all_channels_last(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (!is_channels_last(*t)) return false;
  return true;
}

// A channels-last call (the activations not all contiguous NCHW): the NHWC kernels for tiling windows, a
// decline for anything else.
bool nhwc_call(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (!t->is_contiguous()) return true;
  return false;
}

bool is_2x2_stride_2(const Pool2dParams& p) {
  return p.kernel_h == 2 && p.kernel_w == 2 && p.stride_h == 2 && p.stride_w == 2 && p.pad_h == 0 && p.pad_w == 0;
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

// The NHWC kernels also serve bfloat16 (--precision bf16's activations): a max and the comparisons of the
// backward are exact in any format, so they are the float32 kernels on 2-byte values.
bool nhwc_dtype(const Tensor& t) { return is_f32_or_f64(t) || t.dtype() == DType::bfloat16; }

bool max_pool2d_v2(const Tensor& x, Tensor& y, const Pool2dParams& p) {
  if (nhwc_call({&x, &y})) {
    if (!tiles_the_plane(p) || !all_channels_last({&x, &y}) || !nhwc_dtype(y) || x.dtype() != y.dtype()) return false;
    const int device = y.device().index;
    cuda::set_device(device);
    if (y.numel() == 0) return true;
    if (y.dtype() == DType::bfloat16)
      launch_max_tiles_nhwc<__nv_bfloat16>(x, y, p, cuda::stream(device));
    else if (y.dtype() == DType::float32)
      launch_max_tiles_nhwc<float>(x, y, p, cuda::stream(device));
    else
      launch_max_tiles_nhwc<double>(x, y, p, cuda::stream(device));
    return true;
  }
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
  if (nhwc_call({&x, &y, &grad_y, &grad_x})) {
    if (!tiles_the_plane(p) || !all_channels_last({&x, &y, &grad_y, &grad_x}) || !nhwc_dtype(grad_x)) return false;
    for (const Tensor* t : {&x, &y, &grad_y})
      if (t->dtype() != grad_x.dtype()) return false;
    const int device = grad_x.device().index;
    cuda::set_device(device);
    if (grad_x.numel() == 0) return true;
    if (grad_x.dtype() == DType::bfloat16)
      launch_max_tiles_nhwc_backward<__nv_bfloat16>(x, y, grad_y, grad_x, p, cuda::stream(device));
    else if (grad_x.dtype() == DType::float32)
      launch_max_tiles_nhwc_backward<float>(x, y, grad_y, grad_x, p, cuda::stream(device));
    else
      launch_max_tiles_nhwc_backward<double>(x, y, grad_y, grad_x, p, cuda::stream(device));
    return true;
  }
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

}  // namespace

void register_pool_v2_2x2_cuda() {
  // Max pooling: our kernels are the default because they implement the contract's tie rule by
  // construction, where cuDNN's is undocumented; they ran as fast as cuDNN's (memory-bound).
  // Average pooling: cuDNN's backward was faster, so it is the default there (cuda/pool_cudnn.cu).
  register_kernel(keys::max_pool2d, DeviceType::cuda, "v2_2x2", Priority::tuned + 5,
                  "2x2 windows of stride 2: one thread per window; other windows as v1_direct (f32, f64; bf16 "
                  "channels-last tiling windows)",
                  max_pool2d_v2);
  register_kernel(keys::max_pool2d_backward, DeviceType::cuda, "v2_2x2", Priority::tuned + 5,
      "2x2 windows of stride 2: one thread per window writes its 4 gradients; other windows as v1_direct (f32, f64; "
      "bf16 channels-last tiling windows)",
      max_pool2d_backward_v2);
  // Channels-last tensors: windows that tile the plane (see the header comment); others decline.
  declare_channels_last_kernel(keys::max_pool2d, DeviceType::cuda, "v2_2x2");
  declare_channels_last_kernel(keys::max_pool2d_backward, DeviceType::cuda, "v2_2x2");
}

}  // namespace minidl
