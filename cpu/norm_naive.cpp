// cpu/norm_naive.cpp — reference batch normalisation kernels: plain loops over x [N, C, S], one channel
// at a time, statistics accumulated in double. Accumulation convention: outputs are overwritten (=).
//
// Per channel c over its M = N*S values x[n, c, s]:
//   mean = 1/M sum x,  var = 1/M sum (x - mean)^2   (two passes: no cancellation),  invstd = 1/sqrt(var + eps)
//   batch_norm:            y = (x - mean) * invstd * gamma + beta;  save_mean = mean, save_invstd = invstd
//   batch_norm.inference:  y = (x - mean_c) / sqrt(var_c + eps) * gamma + beta  with the given mean_c, var_c
//   batch_norm.backward:   xhat = (x - mean) * invstd,  grad_gamma = sum g * xhat,  grad_beta = sum g,
//                          grad_x = gamma * invstd / M * (M * g - grad_beta - xhat * grad_gamma)
//   batch_norm_relu:          y = relu(batch_norm's y)          (relu(v) = v > 0 ? v : 0)
//   batch_norm_relu.backward: batch_norm.backward with g replaced by g * [y > 0], y the forward's output
//   batch_norm.running_stats: in place, from a training call's save_mean, save_invstd over M values,
//                          running_mean = (1 - momentum) * running_mean + momentum * save_mean
//                          running_var  = (1 - momentum) * running_var + momentum * (1/invstd^2 - eps) * M/(M-1)
#include <cmath>

#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// Index of x[n, c, s] in a contiguous [N, C, S] tensor.
inline int64_t at(int64_t n, int64_t c, int64_t s, int64_t channels, int64_t spatial) {
  return (n * channels + c) * spatial + s;
}

template <bool Relu>
bool batch_norm_naive(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                      Tensor& save_mean, Tensor& save_invstd) {
  const int64_t batch = x.shape()[0], channels = x.shape()[1], spatial = x.shape()[2];
  const double count = static_cast<double>(batch * spatial);
  return MINIDL_FLOAT_TYPES(x.dtype(), {
    const T* px = x.data<T>();
    const T* pg = gamma.data<T>();
    const T* pb = beta.data<T>();
    T* py = y.data<T>();
    T* pmean = save_mean.data<T>();
    T* pinvstd = save_invstd.data<T>();
    for (int64_t c = 0; c < channels; ++c) {
      double total = 0;
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t s = 0; s < spatial; ++s) total += px[at(n, c, s, channels, spatial)];
      const double mean = total / count;
      double squares = 0;
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t s = 0; s < spatial; ++s) {
          const double d = px[at(n, c, s, channels, spatial)] - mean;
          squares += d * d;
        }
      const double invstd = 1.0 / std::sqrt(squares / count + eps);
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t s = 0; s < spatial; ++s) {
          const int64_t i = at(n, c, s, channels, spatial);
          const T v = static_cast<T>((px[i] - mean) * invstd * pg[c] + pb[c]);
          py[i] = Relu ? (v > T(0) ? v : T(0)) : v;
        }
      pmean[c] = static_cast<T>(mean);
      pinvstd[c] = static_cast<T>(invstd);
    }
  });
}

bool batch_norm_inference_naive(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                                const Tensor& var, double eps, Tensor& y) {
  const int64_t batch = x.shape()[0], channels = x.shape()[1], spatial = x.shape()[2];
  return MINIDL_FLOAT_TYPES(x.dtype(), {
    const T* px = x.data<T>();
    const T* pg = gamma.data<T>();
    const T* pb = beta.data<T>();
    const T* pm = mean.data<T>();
    const T* pv = var.data<T>();
    T* py = y.data<T>();
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t c = 0; c < channels; ++c) {
        const double invstd = 1.0 / std::sqrt(static_cast<double>(pv[c]) + eps);
        for (int64_t s = 0; s < spatial; ++s) {
          const int64_t i = at(n, c, s, channels, spatial);
          py[i] = static_cast<T>((px[i] - static_cast<double>(pm[c])) * invstd * pg[c] + pb[c]);
        }
      }
  });
}

// The backward of batch_norm (y undefined) or of batch_norm_relu (y its output: g is read as g * [y > 0]).
bool backward_naive(const Tensor& x, const Tensor& y, const Tensor& grad_y, const Tensor& gamma,
                    const Tensor& save_mean, const Tensor& save_invstd, Tensor& grad_x, Tensor& grad_gamma,
                    Tensor& grad_beta) {
  const int64_t batch = x.shape()[0], channels = x.shape()[1], spatial = x.shape()[2];
  const double count = static_cast<double>(batch * spatial);
  return MINIDL_FLOAT_TYPES(x.dtype(), {
    const T* px = x.data<T>();
    const T* py = y.defined() ? y.data<T>() : nullptr;
    const T* pg_raw = grad_y.data<T>();
    auto g_at = [&](int64_t i) -> double { return py && !(py[i] > T(0)) ? 0.0 : static_cast<double>(pg_raw[i]); };
    const T* pg = gamma.data<T>();
    const T* pmean = save_mean.data<T>();
    const T* pinvstd = save_invstd.data<T>();
    T* pgx = grad_x.data<T>();
    T* pgg = grad_gamma.data<T>();
    T* pgb = grad_beta.data<T>();
    for (int64_t c = 0; c < channels; ++c) {
      const double mean = pmean[c], invstd = pinvstd[c];
      double sum_g = 0, sum_g_xhat = 0;
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t s = 0; s < spatial; ++s) {
          const int64_t i = at(n, c, s, channels, spatial);
          sum_g += g_at(i);
          sum_g_xhat += g_at(i) * ((px[i] - mean) * invstd);
        }
      const double scale = pg[c] * invstd / count;
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t s = 0; s < spatial; ++s) {
          const int64_t i = at(n, c, s, channels, spatial);
          const double xhat = (px[i] - mean) * invstd;
          pgx[i] = static_cast<T>(scale * (count * g_at(i) - sum_g - xhat * sum_g_xhat));
        }
      pgg[c] = static_cast<T>(sum_g_xhat);
      pgb[c] = static_cast<T>(sum_g);
    }
  });
}

bool batch_norm_backward_naive(const Tensor& x, const Tensor& grad_y, const Tensor& gamma, const Tensor& save_mean,
                               const Tensor& save_invstd, Tensor& grad_x, Tensor& grad_gamma, Tensor& grad_beta) {
  return backward_naive(x, Tensor(), grad_y, gamma, save_mean, save_invstd, grad_x, grad_gamma, grad_beta);
}

bool batch_norm_relu_backward_naive(const Tensor& x, const Tensor& y, const Tensor& grad_y, const Tensor& gamma,
                                    const Tensor& save_mean, const Tensor& save_invstd, Tensor& grad_x,
                                    Tensor& grad_gamma, Tensor& grad_beta) {
  return backward_naive(x, y, grad_y, gamma, save_mean, save_invstd, grad_x, grad_gamma, grad_beta);
}

bool batch_norm_running_stats_naive(const Tensor& save_mean, const Tensor& save_invstd, double momentum, double eps,
                                    int64_t count, Tensor& running_mean, Tensor& running_var) {
  const int64_t channels = save_mean.numel();
  const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
  return MINIDL_FLOAT_TYPES(save_mean.dtype(), {
    const T* pmean = save_mean.data<T>();
    const T* pinvstd = save_invstd.data<T>();
    T* prm = running_mean.defined() ? running_mean.data<T>() : nullptr;
    T* prv = running_var.defined() ? running_var.data<T>() : nullptr;
    for (int64_t c = 0; c < channels; ++c) {
      if (prm) prm[c] = static_cast<T>((1 - momentum) * prm[c] + momentum * pmean[c]);
      if (prv) {
        const double invstd = pinvstd[c];
        const double var = 1.0 / (invstd * invstd) - eps;
        prv[c] = static_cast<T>((1 - momentum) * prv[c] + momentum * var * unbias);
      }
    }
  });
}

}  // namespace

void register_norm_naive_cpu() {
  const char* d = "reference: one channel at a time, two-pass statistics in double";
  register_kernel(keys::batch_norm, DeviceType::cpu, "naive", Priority::reference, d, batch_norm_naive<false>);
  register_kernel(keys::batch_norm_inference, DeviceType::cpu, "naive", Priority::reference, d,
                  batch_norm_inference_naive);
  register_kernel(keys::batch_norm_backward, DeviceType::cpu, "naive", Priority::reference, d,
                  batch_norm_backward_naive);
  register_kernel(keys::batch_norm_relu, DeviceType::cpu, "naive", Priority::reference, d, batch_norm_naive<true>);
  register_kernel(keys::batch_norm_relu_backward, DeviceType::cpu, "naive", Priority::reference, d,
                  batch_norm_relu_backward_naive);
  register_kernel(keys::batch_norm_running_stats, DeviceType::cpu, "naive", Priority::reference,
                  "reference: one channel at a time, in double", batch_norm_running_stats_naive);
}

}  // namespace minidl
