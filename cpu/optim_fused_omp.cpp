// cpu/optim_fused_omp.cpp — optimizer updates for speed ("fused_omp").
//
// What changes against the reference (cpu/optim_naive.cpp): the math is done in float with the
// hyperparameters and Adam's bias corrections folded into float constants once per call, the branches
// on the options are hoisted out of the element loop (one loop per case, each vectorisable), and the
// elements of a large tensor are split across OpenMP threads. The math is the reference's.
// Accumulation convention: params and state are updated in place.
#include <cmath>

#include "core/dispatch.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr int64_t kParallelThreshold = 1 << 15;

void sgd_tensor(float* p, const float* g, float* b, int64_t n, const SgdParams& h) {
  const float lr = static_cast<float>(h.lr), wd = static_cast<float>(h.weight_decay);
  const float mu = static_cast<float>(h.momentum), keep = static_cast<float>(1 - h.dampening);
  if (h.momentum == 0) {
#pragma omp parallel for simd schedule(static) if (n > kParallelThreshold)
    for (int64_t i = 0; i < n; ++i) p[i] -= lr * (g[i] + wd * p[i]);
  } else if (h.first_step) {
    const float nesterov_scale = h.nesterov ? 1 + mu : 1;  // d = g' + mu * g' or d = g'
#pragma omp parallel for simd schedule(static) if (n > kParallelThreshold)
    for (int64_t i = 0; i < n; ++i) {
      const float decayed = g[i] + wd * p[i];
      b[i] = decayed;
      p[i] -= lr * nesterov_scale * decayed;
    }
  } else if (h.nesterov) {
#pragma omp parallel for simd schedule(static) if (n > kParallelThreshold)
    for (int64_t i = 0; i < n; ++i) {
      const float decayed = g[i] + wd * p[i];
      b[i] = mu * b[i] + keep * decayed;
      p[i] -= lr * (decayed + mu * b[i]);
    }
  } else {
#pragma omp parallel for simd schedule(static) if (n > kParallelThreshold)
    for (int64_t i = 0; i < n; ++i) {
      const float decayed = g[i] + wd * p[i];
      b[i] = mu * b[i] + keep * decayed;
      p[i] -= lr * b[i];
    }
  }
}

bool sgd_step_fused_omp(std::vector<Tensor>& params, const std::vector<Tensor>& grads, std::vector<Tensor>& momentum_buffers,
                   const SgdParams& h) {
  for (size_t k = 0; k < params.size(); ++k)
    sgd_tensor(params[k].data<float>(), grads[k].data<float>(),
               h.momentum > 0 ? momentum_buffers[k].data<float>() : nullptr, params[k].numel(), h);
  return true;
}

// p -= step_size * m / (sqrt(v) * inv_sqrt_c2 + eps),  step_size = lr / c1: the reference's
// lr * (m / c1) / (sqrt(v / c2) + eps) with the corrections moved out of the loop.
bool adam_step_fused_omp(std::vector<Tensor>& params, const std::vector<Tensor>& grads, std::vector<Tensor>& m,
                    std::vector<Tensor>& v, const AdamParams& h) {
  const double c1 = 1 - std::pow(h.beta1, static_cast<double>(h.step));
  const double c2 = 1 - std::pow(h.beta2, static_cast<double>(h.step));
  const float b1 = static_cast<float>(h.beta1), b2 = static_cast<float>(h.beta2);
  const float one_minus_b1 = static_cast<float>(1 - h.beta1), one_minus_b2 = static_cast<float>(1 - h.beta2);
  const float step_size = static_cast<float>(h.lr / c1), inv_sqrt_c2 = static_cast<float>(1 / std::sqrt(c2));
  const float eps = static_cast<float>(h.eps);
  // Adam folds the decay into the gradient, AdamW shrinks the parameter: one of the two is zero.
  const float grad_decay = h.decoupled_weight_decay ? 0.0f : static_cast<float>(h.weight_decay);
  const float shrink = h.decoupled_weight_decay ? static_cast<float>(1 - h.lr * h.weight_decay) : 1.0f;
  for (size_t k = 0; k < params.size(); ++k) {
    float* p = params[k].data<float>();
    const float* g = grads[k].data<float>();
    float* pm = m[k].data<float>();
    float* pv = v[k].data<float>();
    const int64_t n = params[k].numel();
#pragma omp parallel for simd schedule(static) if (n > kParallelThreshold)
    for (int64_t i = 0; i < n; ++i) {
      const float grad = g[i] + grad_decay * p[i];
      const float param = p[i] * shrink;
      pm[i] = b1 * pm[i] + one_minus_b1 * grad;
      pv[i] = b2 * pv[i] + one_minus_b2 * grad * grad;
      p[i] = param - step_size * pm[i] / (std::sqrt(pv[i]) * inv_sqrt_c2 + eps);
    }
  }
  return true;
}

}  // namespace

void register_optim_fused_omp_cpu() {
  const char* d = "float math with hoisted constants, one vectorisable loop per case, OpenMP above 32k elements";
  register_kernel(keys::sgd_step, DeviceType::cpu, "fused_omp", Priority::portable, d, sgd_step_fused_omp);
  register_kernel(keys::adam_step, DeviceType::cpu, "fused_omp", Priority::portable, d, adam_step_fused_omp);
}

}  // namespace minidl
