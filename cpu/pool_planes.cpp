// cpu/pool_planes.cpp — max and average pooling for speed ("planes_omp"). Same rules as the reference
// (cpu/pool_naive.cpp); what changes:
//   - the N*C planes are independent, so they are split across OpenMP threads (the backward stages too:
//     overlapping windows only ever share positions within one plane, so no two threads write one place);
//   - each window is clipped to the input once ([h0, h1) x [v0, v1)), so the inner loops carry no
//     per-element padding test and read contiguous runs of a row.
//   - max_pool2d.backward finds each window's winner (the first position, row-major, where x == y) as a
//     branch-free running argmax instead of a search with an early exit.
//   - max pooling with 2x2 windows, stride 2 and no padding (both models' pools) has its own loops: no
//     clipping, the four values of a window compared in the same order as the general loop, and the
//     backward writes all four gradients of a window (each input value is in at most one window), so
//     the loop over a row of windows vectorises and grad_x needs no zeroing pass (only for odd sizes).
// Results equal the reference's: the same winners, windows added in the same order.
// Accumulation convention: y is overwritten (=); grad_x is zeroed per plane, then windows add (+=).
#include <algorithm>

#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr int64_t kParallelThreshold = 1 << 14;  // output elements below which one thread is faster

struct PoolDims {
  int64_t planes, h, w, oh, ow;
};

PoolDims dims_of(const Tensor& x, const Tensor& y) {
  return {x.shape()[0] * x.shape()[1], x.shape()[2], x.shape()[3], y.shape()[2], y.shape()[3]};
}

// The real rows [begin, end) of window row p (or columns of window column q).
struct Span {
  int64_t begin, end;
};
Span clip(int64_t index, int stride, int pad, int kernel, int64_t size) {
  const int64_t start = index * stride - pad;
  return {std::max<int64_t>(start, 0), std::min<int64_t>(start + kernel, size)};
}

template <class T>
void max_forward(const T* x, T* y, const PoolDims& d, const Pool2dParams& pp) {
#pragma omp parallel for schedule(static) if (d.planes * d.oh * d.ow > kParallelThreshold)
  for (int64_t plane = 0; plane < d.planes; ++plane) {
    const T* xp = x + plane * d.h * d.w;
    T* yp = y + plane * d.oh * d.ow;
    for (int64_t p = 0; p < d.oh; ++p) {
      const Span rows = clip(p, pp.stride_h, pp.pad_h, pp.kernel_h, d.h);
      for (int64_t q = 0; q < d.ow; ++q) {
        const Span cols = clip(q, pp.stride_w, pp.pad_w, pp.kernel_w, d.w);
        T best = xp[rows.begin * d.w + cols.begin];
        for (int64_t h = rows.begin; h < rows.end; ++h)
          for (int64_t v = cols.begin; v < cols.end; ++v) best = xp[h * d.w + v] > best ? xp[h * d.w + v] : best;
        yp[p * d.ow + q] = best;
      }
    }
  }
}

// y[p, q] = the 2x2 window at (2p, 2q), folded in row-major order with a strict > (as max_forward: a
// NaN counts only when it comes first).
template <class T>
void max_forward_2x2(const T* x, T* y, const PoolDims& d) {
#pragma omp parallel for schedule(static) if (d.planes * d.oh * d.ow > kParallelThreshold)
  for (int64_t plane = 0; plane < d.planes; ++plane) {
    const T* xp = x + plane * d.h * d.w;
    T* yp = y + plane * d.oh * d.ow;
    for (int64_t p = 0; p < d.oh; ++p) {
      const T* top = xp + 2 * p * d.w;
      const T* bottom = top + d.w;
      T* out = yp + p * d.ow;
#pragma omp simd
      for (int64_t q = 0; q < d.ow; ++q) {
        const T a = top[2 * q], b = top[2 * q + 1], c = bottom[2 * q], e = bottom[2 * q + 1];
        T best = a;
        best = b > best ? b : best;
        best = c > best ? c : best;
        best = e > best ? e : best;
        out[q] = best;
      }
    }
  }
}

// grad_x of 2x2 windows with stride 2: the window's running argmax (strict >, row-major, as max_backward)
// gets gy when its value equals y, the other three get 0. Rows and columns no window covers (odd sizes)
// are zeroed first.
template <class T>
void max_backward_2x2(const T* x, const T* y, const T* gy, T* gx, const PoolDims& d) {
#pragma omp parallel for schedule(static) if (d.planes * d.oh * d.ow > kParallelThreshold)
  for (int64_t plane = 0; plane < d.planes; ++plane) {
    const T* xp = x + plane * d.h * d.w;
    const T* yp = y + plane * d.oh * d.ow;
    const T* gyp = gy + plane * d.oh * d.ow;
    T* gxp = gx + plane * d.h * d.w;
    if (d.h != 2 * d.oh || d.w != 2 * d.ow) std::fill(gxp, gxp + d.h * d.w, T(0));
    for (int64_t p = 0; p < d.oh; ++p) {
      const T* top = xp + 2 * p * d.w;
      const T* bottom = top + d.w;
      T* gtop = gxp + 2 * p * d.w;
      T* gbottom = gtop + d.w;
#pragma omp simd
      for (int64_t q = 0; q < d.ow; ++q) {
        const T a = top[2 * q], b = top[2 * q + 1], c = bottom[2 * q], e = bottom[2 * q + 1];
        // The winner kept one-hot in T values (ka..ke), moved by selects only: an integer index or a
        // boolean expression (&&) would take the loop out of float vector lanes (measured: 1.7x slower
        // than the general loop).
        T best = a, ka = 1, kb = 0, kc = 0, ke = 0;
        const bool b_beats = b > best;
        best = b_beats ? b : best;
        ka = b_beats ? T(0) : ka;
        kb = b_beats ? T(1) : kb;
        const bool c_beats = c > best;
        best = c_beats ? c : best;
        ka = c_beats ? T(0) : ka;
        kb = c_beats ? T(0) : kb;
        kc = c_beats ? T(1) : kc;
        const bool e_beats = e > best;
        best = e_beats ? e : best;
        ka = e_beats ? T(0) : ka;
        kb = e_beats ? T(0) : kb;
        kc = e_beats ? T(0) : kc;
        ke = e_beats ? T(1) : ke;
        const T target = yp[p * d.ow + q], g = gyp[p * d.ow + q];
        const T won = best == target ? g : T(0);  // best is x at the winner
        gtop[2 * q] = ka > T(0) ? won : T(0);
        gtop[2 * q + 1] = kb > T(0) ? won : T(0);
        gbottom[2 * q] = kc > T(0) ? won : T(0);
        gbottom[2 * q + 1] = ke > T(0) ? won : T(0);
      }
    }
  }
}

bool is_2x2_stride_2(const Pool2dParams& p) {
  return p.kernel_h == 2 && p.kernel_w == 2 && p.stride_h == 2 && p.stride_w == 2 && p.pad_h == 0 && p.pad_w == 0;
}

template <class T>
void max_backward(const T* x, const T* y, const T* gy, T* gx, const PoolDims& d, const Pool2dParams& pp) {
#pragma omp parallel for schedule(static) if (d.planes * d.oh * d.ow > kParallelThreshold)
  for (int64_t plane = 0; plane < d.planes; ++plane) {
    const T* xp = x + plane * d.h * d.w;
    const T* yp = y + plane * d.oh * d.ow;
    const T* gyp = gy + plane * d.oh * d.ow;
    T* gxp = gx + plane * d.h * d.w;
    std::fill(gxp, gxp + d.h * d.w, T(0));
    for (int64_t p = 0; p < d.oh; ++p) {
      const Span rows = clip(p, pp.stride_h, pp.pad_h, pp.kernel_h, d.h);
      for (int64_t q = 0; q < d.ow; ++q) {
        const Span cols = clip(q, pp.stride_w, pp.pad_w, pp.kernel_w, d.w);
        const T target = yp[p * d.ow + q];
        // A running argmax with a strict >: it moves only to strictly greater values, so it stops at the
        // first occurrence of the window's maximum, which is the position the rule asks for when that
        // maximum is y (checked last; NaN windows fall out there as in the reference). Unlike a search
        // for x == y with an early exit, this compiles to conditional moves: no mispredicted branch
        // per window.
        int64_t winner = rows.begin * d.w + cols.begin;
        T best = xp[winner];
        for (int64_t h = rows.begin; h < rows.end; ++h)
          for (int64_t v = cols.begin; v < cols.end; ++v) {
            const T value = xp[h * d.w + v];
            const bool better = value > best;
            best = better ? value : best;
            winner = better ? h * d.w + v : winner;
          }
        if (xp[winner] == target) gxp[winner] += gyp[p * d.ow + q];
      }
    }
  }
}

template <class T>
void avg_forward(const T* x, T* y, const PoolDims& d, const Pool2dParams& pp) {
  const T count = static_cast<T>(pp.kernel_h * pp.kernel_w);
#pragma omp parallel for schedule(static) if (d.planes * d.oh * d.ow > kParallelThreshold)
  for (int64_t plane = 0; plane < d.planes; ++plane) {
    const T* xp = x + plane * d.h * d.w;
    T* yp = y + plane * d.oh * d.ow;
    for (int64_t p = 0; p < d.oh; ++p) {
      const Span rows = clip(p, pp.stride_h, pp.pad_h, pp.kernel_h, d.h);
      for (int64_t q = 0; q < d.ow; ++q) {
        const Span cols = clip(q, pp.stride_w, pp.pad_w, pp.kernel_w, d.w);
        T acc = 0;
        for (int64_t h = rows.begin; h < rows.end; ++h)
          for (int64_t v = cols.begin; v < cols.end; ++v) acc += xp[h * d.w + v];
        yp[p * d.ow + q] = acc / count;
      }
    }
  }
}

template <class T>
void avg_backward(const T* gy, T* gx, const PoolDims& d, const Pool2dParams& pp) {
  const T count = static_cast<T>(pp.kernel_h * pp.kernel_w);
#pragma omp parallel for schedule(static) if (d.planes * d.oh * d.ow > kParallelThreshold)
  for (int64_t plane = 0; plane < d.planes; ++plane) {
    const T* gyp = gy + plane * d.oh * d.ow;
    T* gxp = gx + plane * d.h * d.w;
    std::fill(gxp, gxp + d.h * d.w, T(0));
    for (int64_t p = 0; p < d.oh; ++p) {
      const Span rows = clip(p, pp.stride_h, pp.pad_h, pp.kernel_h, d.h);
      for (int64_t q = 0; q < d.ow; ++q) {
        const Span cols = clip(q, pp.stride_w, pp.pad_w, pp.kernel_w, d.w);
        const T g = gyp[p * d.ow + q] / count;
        for (int64_t h = rows.begin; h < rows.end; ++h)
          for (int64_t v = cols.begin; v < cols.end; ++v) gxp[h * d.w + v] += g;
      }
    }
  }
}

bool max_pool2d_planes(const Tensor& x, Tensor& y, const Pool2dParams& p) {
  const PoolDims d = dims_of(x, y);
  return MINIDL_FLOAT_TYPES(y.dtype(), {
    if (is_2x2_stride_2(p))
      max_forward_2x2(x.data<T>(), y.data<T>(), d);
    else
      max_forward(x.data<T>(), y.data<T>(), d, p);
  });
}

bool max_pool2d_backward_planes(const Tensor& x, const Tensor& y, const Tensor& grad_y, Tensor& grad_x,
                                const Pool2dParams& p) {
  const PoolDims d = dims_of(x, y);
  return MINIDL_FLOAT_TYPES(grad_x.dtype(), {
    if (is_2x2_stride_2(p))
      max_backward_2x2(x.data<T>(), y.data<T>(), grad_y.data<T>(), grad_x.data<T>(), d);
    else
      max_backward(x.data<T>(), y.data<T>(), grad_y.data<T>(), grad_x.data<T>(), d, p);
  });
}

bool avg_pool2d_planes(const Tensor& x, Tensor& y, const Pool2dParams& p) {
  const PoolDims d = dims_of(x, y);
  return MINIDL_FLOAT_TYPES(y.dtype(), { avg_forward(x.data<T>(), y.data<T>(), d, p); });
}

bool avg_pool2d_backward_planes(const Tensor& grad_y, Tensor& grad_x, const Pool2dParams& p) {
  const PoolDims d = dims_of(grad_x, grad_y);
  return MINIDL_FLOAT_TYPES(grad_x.dtype(), { avg_backward(grad_y.data<T>(), grad_x.data<T>(), d, p); });
}

}  // namespace

void register_pool_planes_cpu() {
  const char* d = "N*C planes across OpenMP threads, windows clipped once (no per-element padding test)";
  register_kernel(keys::max_pool2d, DeviceType::cpu, "planes_omp", Priority::portable, d, max_pool2d_planes);
  register_kernel(keys::max_pool2d_backward, DeviceType::cpu, "planes_omp", Priority::portable, d,
                  max_pool2d_backward_planes);
  register_kernel(keys::avg_pool2d, DeviceType::cpu, "planes_omp", Priority::portable, d, avg_pool2d_planes);
  register_kernel(keys::avg_pool2d_backward, DeviceType::cpu, "planes_omp", Priority::portable, d,
                  avg_pool2d_backward_planes);
}

}  // namespace minidl
