// cuda/conv_direct.cu — conv2d on the GPU straight from the definition, one thread per output element:
// kernel "direct" of keys "conv2d", "conv2d.backward_input", "conv2d.backward_weight". The simplest
// correct GPU version (float32 and float64), the GPU counterpart of the naive CPU loops.
//
// x [N, C, H, W], w [O, C, KH, KW], y [N, O, OH, OW] (ops/kernel_signatures.h):
//   forward          y[n,o,p,q]    = sum_{c,i,j} x[n, c, p*sh - ph + i, q*sw - pw + j] * w[o,c,i,j]
//   backward_input   grad_x[n,c,h,w] = sum over (o, i, j) and the (p, q) with p*sh - ph + i = h and
//                    q*sw - pw + j = w of grad_y[n,o,p,q] * w[o,c,i,j]       (a gather: no atomics)
//   backward_weight  grad_w[o,c,i,j] = sum_{n,p,q} x[n, c, p*sh - ph + i, q*sw - pw + j] * grad_y[n,o,p,q]
// The weight gradient has few elements, each a reduction over N*OH*OW terms done by one thread: slow
// (few threads, long serial sums) but obviously right. Accumulation convention: outputs are overwritten (=).
#include <cstdint>

#include "core/dispatch.h"
#include "cuda/cuda_common.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr int kBlock = 256;

struct DirectGeometry {
  int64_t N, C, H, W, O, KH, KW, OH, OW;
  int64_t sh, sw, ph, pw;
};

DirectGeometry geometry(const Tensor& x_like, const Tensor& w_like, const Tensor& y_like, const Conv2dParams& p) {
  return {x_like.size(0), x_like.size(1), x_like.size(2), x_like.size(3), w_like.size(0), w_like.size(2),
          w_like.size(3), y_like.size(2), y_like.size(3), p.stride_h,     p.stride_w,     p.pad_h,
          p.pad_w};
}

// Grid-stride loops: the grid is capped (cuda::grid_for), so each thread may take several elements.
__device__ __forceinline__ int64_t first_index() { return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; }
__device__ __forceinline__ int64_t index_step() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

template <class T>
__global__ void conv2d_direct_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                                     DirectGeometry g) {
  const int64_t total = g.N * g.O * g.OH * g.OW;
  for (int64_t idx = first_index(); idx < total; idx += index_step()) {
    int64_t t = idx;
    const int64_t q = t % g.OW;
    t /= g.OW;
    const int64_t p = t % g.OH;
    t /= g.OH;
    const int64_t o = t % g.O;
    const int64_t n = t / g.O;
    T acc = 0;
    for (int64_t c = 0; c < g.C; ++c) {
      for (int64_t i = 0; i < g.KH; ++i) {
        const int64_t h = p * g.sh - g.ph + i;
        if (h < 0 || h >= g.H) continue;
        for (int64_t j = 0; j < g.KW; ++j) {
          const int64_t wc = q * g.sw - g.pw + j;
          if (wc < 0 || wc >= g.W) continue;
          acc += x[((n * g.C + c) * g.H + h) * g.W + wc] * w[((o * g.C + c) * g.KH + i) * g.KW + j];
        }
      }
    }
    y[idx] = acc;
  }
}

template <class T>
__global__ void conv2d_backward_input_direct_kernel(const T* __restrict__ gy, const T* __restrict__ w,
                                                    T* __restrict__ gx, DirectGeometry g) {
  const int64_t total = g.N * g.C * g.H * g.W;
  for (int64_t idx = first_index(); idx < total; idx += index_step()) {
    int64_t t = idx;
    const int64_t wc = t % g.W;
    t /= g.W;
    const int64_t h = t % g.H;
    t /= g.H;
    const int64_t c = t % g.C;
    const int64_t n = t / g.C;
    T acc = 0;
    for (int64_t i = 0; i < g.KH; ++i) {
      const int64_t hp = h + g.ph - i;  // = p * sh for the output row p whose window reads h at offset i
      if (hp < 0 || hp % g.sh != 0) continue;
      const int64_t p = hp / g.sh;
      if (p >= g.OH) continue;
      for (int64_t j = 0; j < g.KW; ++j) {
        const int64_t wq = wc + g.pw - j;
        if (wq < 0 || wq % g.sw != 0) continue;
        const int64_t q = wq / g.sw;
        if (q >= g.OW) continue;
        for (int64_t o = 0; o < g.O; ++o)
          acc += gy[((n * g.O + o) * g.OH + p) * g.OW + q] * w[((o * g.C + c) * g.KH + i) * g.KW + j];
      }
    }
    gx[idx] = acc;
  }
}

template <class T>
__global__ void conv2d_backward_weight_direct_kernel(const T* __restrict__ x, const T* __restrict__ gy,
                                                     T* __restrict__ gw, DirectGeometry g) {
  const int64_t total = g.O * g.C * g.KH * g.KW;
  for (int64_t idx = first_index(); idx < total; idx += index_step()) {
    int64_t t = idx;
    const int64_t j = t % g.KW;
    t /= g.KW;
    const int64_t i = t % g.KH;
    t /= g.KH;
    const int64_t c = t % g.C;
    const int64_t o = t / g.C;
    T acc = 0;
    for (int64_t n = 0; n < g.N; ++n) {
      for (int64_t p = 0; p < g.OH; ++p) {
        const int64_t h = p * g.sh - g.ph + i;
        if (h < 0 || h >= g.H) continue;
        for (int64_t q = 0; q < g.OW; ++q) {
          const int64_t wc = q * g.sw - g.pw + j;
          if (wc < 0 || wc >= g.W) continue;
          acc += x[((n * g.C + c) * g.H + h) * g.W + wc] * gy[((n * g.O + o) * g.OH + p) * g.OW + q];
        }
      }
    }
    gw[idx] = acc;
  }
}

// Runs Launch<T>::run over out's elements for out's dtype (float or double); false for other dtypes.
template <template <class> class Launch, class... Args>
bool launch_typed(const Tensor& out, Args&&... args) {
  const int device = out.device().index;
  cuda::set_device(device);
  if (out.dtype() == DType::float32) {
    Launch<float>::run(cuda::stream(device), out.numel(), args...);
    return true;
  }
  if (out.dtype() == DType::float64) {
    Launch<double>::run(cuda::stream(device), out.numel(), args...);
    return true;
  }
  return false;
}

template <class T>
struct ForwardLaunch {
  static void run(cudaStream_t s, int64_t n, const Tensor& x, const Tensor& w, Tensor& y, const DirectGeometry& g) {
    if (n == 0) return;
    conv2d_direct_kernel<T><<<cuda::grid_for(n, kBlock), kBlock, 0, s>>>(x.data<T>(), w.data<T>(), y.data<T>(), g);
    MINIDL_LAUNCH_CHECK();
  }
};
template <class T>
struct BackwardInputLaunch {
  static void run(cudaStream_t s, int64_t n, const Tensor& gy, const Tensor& w, Tensor& gx, const DirectGeometry& g) {
    if (n == 0) return;
    conv2d_backward_input_direct_kernel<T>
        <<<cuda::grid_for(n, kBlock), kBlock, 0, s>>>(gy.data<T>(), w.data<T>(), gx.data<T>(), g);
    MINIDL_LAUNCH_CHECK();
  }
};
template <class T>
struct BackwardWeightLaunch {
  static void run(cudaStream_t s, int64_t n, const Tensor& x, const Tensor& gy, Tensor& gw, const DirectGeometry& g) {
    if (n == 0) return;
    conv2d_backward_weight_direct_kernel<T>
        <<<cuda::grid_for(n, kBlock), kBlock, 0, s>>>(x.data<T>(), gy.data<T>(), gw.data<T>(), g);
    MINIDL_LAUNCH_CHECK();
  }
};

bool conv2d_direct(const Tensor& x, const Tensor& w, Tensor& y, const Conv2dParams& p) {
  return launch_typed<ForwardLaunch>(y, x, w, y, geometry(x, w, y, p));
}

bool conv2d_backward_input_direct(const Tensor& grad_y, const Tensor& w, Tensor& grad_x, const Conv2dParams& p) {
  return launch_typed<BackwardInputLaunch>(grad_x, grad_y, w, grad_x, geometry(grad_x, w, grad_y, p));
}

bool conv2d_backward_weight_direct(const Tensor& x, const Tensor& grad_y, Tensor& grad_w, const Conv2dParams& p) {
  return launch_typed<BackwardWeightLaunch>(grad_w, x, grad_y, grad_w, geometry(x, grad_w, grad_y, p));
}

}  // namespace

void register_conv_direct_cuda() {
  register_kernel(keys::conv2d, DeviceType::cuda, "direct", Priority::reference,
                  "one thread per output element, loops over C, KH, KW (f32, f64)", conv2d_direct);
  register_kernel(keys::conv2d_backward_input, DeviceType::cuda, "direct", Priority::reference,
                  "one thread per input element gathering its outputs, no atomics (f32, f64)",
                  conv2d_backward_input_direct);
  register_kernel(keys::conv2d_backward_weight, DeviceType::cuda, "direct", Priority::reference,
                  "one thread per weight element summing over N, OH, OW: slow (f32, f64)",
                  conv2d_backward_weight_direct);
}

}  // namespace minidl
