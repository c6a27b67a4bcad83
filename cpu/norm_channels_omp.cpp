// cpu/norm_channels_omp.cpp — batch normalisation kernels for speed ("channels_omp").
//
// What changes against the reference (cpu/norm_naive.cpp): channels are split across OpenMP threads
// (each channel's statistics are independent), the inner loops walk one contiguous [S] plane at a time
// with `omp simd` reductions (still accumulated in double: M = N*S reaches 10^5 and more for images, too
// many for a float sum), and the per-element work is folded into per-channel constants:
//   forward:   y = (x - mean) * a + beta,   a = invstd * gamma
//   backward:  grad_x = g * k1 + (x - mean) * k2 + k0,  k1 = gamma * invstd,  k2 = -k1 * invstd * grad_gamma / M,
//              k0 = -k1 * grad_beta / M                 (the reference's formula, expanded)
// (x - mean) stays a subtraction rather than being folded into the constant, so a channel whose mean is
// large against its spread keeps its precision.
// batch_norm_relu (the same kernels with Relu = true): the forward clamps each y at 0 as it writes it; the
// backward reads the mask from the forward's output, g * [y > 0], in both of its passes (g and y loaded
// before the select, so the loop stays a vector select: cpu/bias_relu_omp.cpp has the measurement).
// Same layout: x [N, C, S] contiguous. Accumulation convention: outputs are overwritten (=).
#include <algorithm>
#include <cmath>

#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr int64_t kParallelThreshold = 1 << 15;
constexpr int64_t kBlock = 512;  // values summed in T before going into a double (batch_norm_relu's backward)

// y[n, c, :] = (x[n, c, :] - shift) * a + b for every n (then clamped at 0 when Relu).
template <bool Relu, class T>
void affine_channel(const T* px, T* py, int64_t c, int64_t batch, int64_t channels, int64_t spatial, T shift, T a,
                    T b) {
  for (int64_t n = 0; n < batch; ++n) {
    const T* x = px + (n * channels + c) * spatial;
    T* y = py + (n * channels + c) * spatial;
#pragma omp simd
    for (int64_t s = 0; s < spatial; ++s) {
      const T v = (x[s] - shift) * a + b;
      y[s] = Relu ? (v > T(0) ? v : T(0)) : v;
    }
  }
}

// The gradient the normalisation sees: g, or g * [y > 0] after a fused ReLU.
template <bool Relu, class T>
inline T masked(const T* g, const T* y, int64_t s) {
  if (!Relu) return g[s];
  const T gv = g[s], yv = y[s];
  return yv > T(0) ? gv : T(0);
}

template <bool Relu, class T>
void batch_norm_channels(const T* px, const T* pg, const T* pb, double eps, T* py, T* pmean, T* pinvstd, int64_t batch,
                         int64_t channels, int64_t spatial) {
  const double count = static_cast<double>(batch * spatial);
#pragma omp parallel for schedule(static) if (batch * channels * spatial > kParallelThreshold && channels > 1)
  for (int64_t c = 0; c < channels; ++c) {
    double total = 0;
    for (int64_t n = 0; n < batch; ++n) {
      const T* x = px + (n * channels + c) * spatial;
#pragma omp simd reduction(+ : total)
      for (int64_t s = 0; s < spatial; ++s) total += x[s];
    }
    const double mean = total / count;
    double squares = 0;
    for (int64_t n = 0; n < batch; ++n) {
      const T* x = px + (n * channels + c) * spatial;
#pragma omp simd reduction(+ : squares)
      for (int64_t s = 0; s < spatial; ++s) squares += (x[s] - mean) * (x[s] - mean);
    }
    const double invstd = 1.0 / std::sqrt(squares / count + eps);
    const double a = invstd * pg[c];
    affine_channel<Relu, T>(px, py, c, batch, channels, spatial, static_cast<T>(mean), static_cast<T>(a), pb[c]);
    pmean[c] = static_cast<T>(mean);
    pinvstd[c] = static_cast<T>(invstd);
  }
}

template <class T>
void batch_norm_inference_channels(const T* px, const T* pg, const T* pb, const T* pm, const T* pv, double eps, T* py,
                                   int64_t batch, int64_t channels, int64_t spatial) {
#pragma omp parallel for schedule(static) if (batch * channels * spatial > kParallelThreshold && channels > 1)
  for (int64_t c = 0; c < channels; ++c) {
    const double a = pg[c] / std::sqrt(static_cast<double>(pv[c]) + eps);
    affine_channel<false, T>(px, py, c, batch, channels, spatial, pm[c], static_cast<T>(a), pb[c]);
  }
}

// py: the forward's output when Relu (its mask), unused otherwise.
template <bool Relu, class T>
void batch_norm_backward_channels(const T* px, const T* py, const T* pgy, const T* pg, const T* pmean,
                                  const T* pinvstd, T* pgx, T* pgg, T* pgb, int64_t batch, int64_t channels,
                                  int64_t spatial) {
  const double count = static_cast<double>(batch * spatial);
#pragma omp parallel for schedule(static) if (batch * channels * spatial > kParallelThreshold && channels > 1)
  for (int64_t c = 0; c < channels; ++c) {
    const double mean = pmean[c], invstd = pinvstd[c];
    // sum g * xhat = invstd * (sum g * x - mean * sum g)
    double sum_g = 0, sum_gx = 0;
    for (int64_t n = 0; n < batch; ++n) {
      const T* x = px + (n * channels + c) * spatial;
      const T* g = pgy + (n * channels + c) * spatial;
      const T* y = Relu ? py + (n * channels + c) * spatial : nullptr;
      if (Relu) {
        // Blocks of kBlock summed in T (vector lanes), the blocks in double: with the mask's select in the
        // loop, a double accumulator kept GCC from vectorising it (3x slower than unfused, measured).
        for (int64_t start = 0; start < spatial; start += kBlock) {
          const int64_t end = std::min(spatial, start + kBlock);
          T part_g = 0, part_gx = 0;
#pragma omp simd reduction(+ : part_g, part_gx)
          for (int64_t s = start; s < end; ++s) {
            const T gs = masked<Relu>(g, y, s);
            part_g += gs;
            part_gx += gs * x[s];
          }
          sum_g += part_g;
          sum_gx += part_gx;
        }
        continue;
      }
#pragma omp simd reduction(+ : sum_g, sum_gx)
      for (int64_t s = 0; s < spatial; ++s) {
        sum_g += g[s];
        sum_gx += static_cast<double>(g[s]) * x[s];
      }
    }
    const double grad_gamma = invstd * (sum_gx - mean * sum_g), grad_beta = sum_g;
    const double k1 = pg[c] * invstd;
    const double k2 = -k1 * invstd * grad_gamma / count;
    const double k0 = -k1 * grad_beta / count;
    const T t1 = static_cast<T>(k1), t2 = static_cast<T>(k2), t0 = static_cast<T>(k0), m = pmean[c];
    for (int64_t n = 0; n < batch; ++n) {
      const T* x = px + (n * channels + c) * spatial;
      const T* g = pgy + (n * channels + c) * spatial;
      const T* y = Relu ? py + (n * channels + c) * spatial : nullptr;
      T* gx = pgx + (n * channels + c) * spatial;
#pragma omp simd
      for (int64_t s = 0; s < spatial; ++s) gx[s] = masked<Relu>(g, y, s) * t1 + (x[s] - m) * t2 + t0;
    }
    pgg[c] = static_cast<T>(grad_gamma);
    pgb[c] = static_cast<T>(grad_beta);
  }
}

template <bool Relu>
bool batch_norm_channels_omp(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                             Tensor& save_mean, Tensor& save_invstd) {
  return MINIDL_FLOAT_TYPES(x.dtype(), {
    batch_norm_channels<Relu, T>(x.data<T>(), gamma.data<T>(), beta.data<T>(), eps, y.data<T>(), save_mean.data<T>(),
                           save_invstd.data<T>(), x.shape()[0], x.shape()[1], x.shape()[2]);
  });
}

bool batch_norm_inference_channels_omp(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                                       const Tensor& var, double eps, Tensor& y) {
  return MINIDL_FLOAT_TYPES(x.dtype(), {
    batch_norm_inference_channels<T>(x.data<T>(), gamma.data<T>(), beta.data<T>(), mean.data<T>(), var.data<T>(), eps,
                                     y.data<T>(), x.shape()[0], x.shape()[1], x.shape()[2]);
  });
}

bool batch_norm_backward_channels_omp(const Tensor& x, const Tensor& grad_y, const Tensor& gamma,
                                      const Tensor& save_mean, const Tensor& save_invstd, Tensor& grad_x,
                                      Tensor& grad_gamma, Tensor& grad_beta) {
  return MINIDL_FLOAT_TYPES(x.dtype(), {
    batch_norm_backward_channels<false, T>(x.data<T>(), nullptr, grad_y.data<T>(), gamma.data<T>(),
                                           save_mean.data<T>(), save_invstd.data<T>(), grad_x.data<T>(),
                                           grad_gamma.data<T>(), grad_beta.data<T>(), x.shape()[0], x.shape()[1],
                                           x.shape()[2]);
  });
}

bool batch_norm_relu_backward_channels_omp(const Tensor& x, const Tensor& y, const Tensor& grad_y,
                                           const Tensor& gamma, const Tensor& save_mean, const Tensor& save_invstd,
                                           Tensor& grad_x, Tensor& grad_gamma, Tensor& grad_beta) {
  return MINIDL_FLOAT_TYPES(x.dtype(), {
    batch_norm_backward_channels<true, T>(x.data<T>(), y.data<T>(), grad_y.data<T>(), gamma.data<T>(),
                                          save_mean.data<T>(), save_invstd.data<T>(), grad_x.data<T>(),
                                          grad_gamma.data<T>(), grad_beta.data<T>(), x.shape()[0], x.shape()[1],
                                          x.shape()[2]);
  });
}

}  // namespace

void register_norm_channels_omp_cpu() {
  const char* d = "channels across OpenMP threads, simd plane loops, double statistics, per-channel constants";
  const char* name = "channels_omp";
  register_kernel(keys::batch_norm, DeviceType::cpu, name, Priority::portable, d, batch_norm_channels_omp<false>);
  register_kernel(keys::batch_norm_inference, DeviceType::cpu, name, Priority::portable, d,
                  batch_norm_inference_channels_omp);
  register_kernel(keys::batch_norm_backward, DeviceType::cpu, name, Priority::portable, d,
                  batch_norm_backward_channels_omp);
  register_kernel(keys::batch_norm_relu, DeviceType::cpu, name, Priority::portable, d,
                  batch_norm_channels_omp<true>);
  register_kernel(keys::batch_norm_relu_backward, DeviceType::cpu, name, Priority::portable, d,
                  batch_norm_relu_backward_channels_omp);
}

}  // namespace minidl
