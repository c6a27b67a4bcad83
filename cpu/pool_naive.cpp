// cpu/pool_naive.cpp — reference max and average pooling with their backward stages: for every output
// element, walk its window position by position (row-major) and skip what falls in the padding.
//   x [N, C, H, W], y [N, C, OH, OW]; window of y[n,c,p,q]: rows p*sh - ph + i, columns q*sw - pw + j,
//   i < KH, j < KW.
//   max_pool2d            y = max of the window's real elements (padding never wins)
//   max_pool2d.backward   the window's grad_y goes to its first position where x == y
//   avg_pool2d            y = sum of the window's real elements / (KH*KW)
//   avg_pool2d.backward   every real position of the window gets grad_y / (KH*KW)
// Accumulation convention: y is overwritten (=); grad_x is zeroed, then each window adds (+=) into it,
// so positions shared by overlapping windows sum their gradients.
#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

struct PoolDims {
  int64_t planes, h, w, oh, ow;
};

PoolDims dims_of(const Tensor& x, const Tensor& y) {
  return {x.shape()[0] * x.shape()[1], x.shape()[2], x.shape()[3], y.shape()[2], y.shape()[3]};
}

// Calls f(x_index) for every real (non-padding) position of window (p, q), in row-major order, until
// f returns true.
template <class F>
void for_window(const PoolDims& d, const Pool2dParams& pp, int64_t p, int64_t q, F f) {
  for (int64_t i = 0; i < pp.kernel_h; ++i)
    for (int64_t j = 0; j < pp.kernel_w; ++j) {
      const int64_t h = p * pp.stride_h - pp.pad_h + i, v = q * pp.stride_w - pp.pad_w + j;
      if (h < 0 || h >= d.h || v < 0 || v >= d.w) continue;
      if (f(h * d.w + v)) return;
    }
}

template <class T>
void max_forward(const T* x, T* y, const PoolDims& d, const Pool2dParams& pp) {
  for (int64_t plane = 0; plane < d.planes; ++plane) {
    const T* xp = x + plane * d.h * d.w;
    for (int64_t p = 0; p < d.oh; ++p)
      for (int64_t q = 0; q < d.ow; ++q) {
        bool any = false;
        T best = T(0);
        for_window(d, pp, p, q, [&](int64_t at) {
          if (!any || xp[at] > best) best = xp[at];
          any = true;
          return false;
        });
        y[(plane * d.oh + p) * d.ow + q] = best;
      }
  }
}

template <class T>
void max_backward(const T* x, const T* y, const T* gy, T* gx, const PoolDims& d, const Pool2dParams& pp) {
  for (int64_t e = 0; e < d.planes * d.h * d.w; ++e) gx[e] = T(0);
  for (int64_t plane = 0; plane < d.planes; ++plane) {
    const T* xp = x + plane * d.h * d.w;
    T* gxp = gx + plane * d.h * d.w;
    for (int64_t p = 0; p < d.oh; ++p)
      for (int64_t q = 0; q < d.ow; ++q) {
        const int64_t out = (plane * d.oh + p) * d.ow + q;
        for_window(d, pp, p, q, [&](int64_t at) {
          if (xp[at] != y[out]) return false;
          gxp[at] += gy[out];
          return true;
        });
      }
  }
}

template <class T>
void avg_forward(const T* x, T* y, const PoolDims& d, const Pool2dParams& pp) {
  const double count = static_cast<double>(pp.kernel_h) * pp.kernel_w;
  for (int64_t plane = 0; plane < d.planes; ++plane) {
    const T* xp = x + plane * d.h * d.w;
    for (int64_t p = 0; p < d.oh; ++p)
      for (int64_t q = 0; q < d.ow; ++q) {
        double acc = 0;
        for_window(d, pp, p, q, [&](int64_t at) {
          acc += xp[at];
          return false;
        });
        y[(plane * d.oh + p) * d.ow + q] = static_cast<T>(acc / count);
      }
  }
}

template <class T>
void avg_backward(const T* gy, T* gx, const PoolDims& d, const Pool2dParams& pp) {
  const T count = static_cast<T>(pp.kernel_h * pp.kernel_w);
  for (int64_t e = 0; e < d.planes * d.h * d.w; ++e) gx[e] = T(0);
  for (int64_t plane = 0; plane < d.planes; ++plane) {
    T* gxp = gx + plane * d.h * d.w;
    for (int64_t p = 0; p < d.oh; ++p)
      for (int64_t q = 0; q < d.ow; ++q) {
        const T g = gy[(plane * d.oh + p) * d.ow + q] / count;
        for_window(d, pp, p, q, [&](int64_t at) {
          gxp[at] += g;
          return false;
        });
      }
  }
}

bool max_pool2d_naive(const Tensor& x, Tensor& y, const Pool2dParams& p) {
  const PoolDims d = dims_of(x, y);
  return MINIDL_FLOAT_TYPES(y.dtype(), { max_forward(x.data<T>(), y.data<T>(), d, p); });
}

bool max_pool2d_backward_naive(const Tensor& x, const Tensor& y, const Tensor& grad_y, Tensor& grad_x,
                               const Pool2dParams& p) {
  const PoolDims d = dims_of(x, y);
  return MINIDL_FLOAT_TYPES(grad_x.dtype(),
                            { max_backward(x.data<T>(), y.data<T>(), grad_y.data<T>(), grad_x.data<T>(), d, p); });
}

bool avg_pool2d_naive(const Tensor& x, Tensor& y, const Pool2dParams& p) {
  const PoolDims d = dims_of(x, y);
  return MINIDL_FLOAT_TYPES(y.dtype(), { avg_forward(x.data<T>(), y.data<T>(), d, p); });
}

bool avg_pool2d_backward_naive(const Tensor& grad_y, Tensor& grad_x, const Pool2dParams& p) {
  const PoolDims d = dims_of(grad_x, grad_y);
  return MINIDL_FLOAT_TYPES(grad_x.dtype(), { avg_backward(grad_y.data<T>(), grad_x.data<T>(), d, p); });
}

}  // namespace

void register_pool_naive_cpu() {
  const char* d = "reference: each window position by position, padding skipped";
  register_kernel(keys::max_pool2d, DeviceType::cpu, "naive", Priority::reference, d, max_pool2d_naive);
  register_kernel(keys::max_pool2d_backward, DeviceType::cpu, "naive", Priority::reference, d,
                  max_pool2d_backward_naive);
  register_kernel(keys::avg_pool2d, DeviceType::cpu, "naive", Priority::reference, d, avg_pool2d_naive);
  register_kernel(keys::avg_pool2d_backward, DeviceType::cpu, "naive", Priority::reference, d,
                  avg_pool2d_backward_naive);
}

}  // namespace minidl
