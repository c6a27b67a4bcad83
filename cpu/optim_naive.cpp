// cpu/optim_naive.cpp — reference optimizer updates: one element at a time, each computed in double and
// stored back as float32. The lists are checked by the front end (ops/optim_ops.cpp): contiguous float32,
// matching shapes. Accumulation convention: params and state are updated in place (p -= ..., b = ...).
//
// sgd_step, per element (g' is the decayed gradient, b the momentum buffer):
//   g' = g + weight_decay * p
//   b  = first_step ? g' : momentum * b + (1 - dampening) * g'          (only when momentum > 0)
//   d  = nesterov ? g' + momentum * b : (momentum > 0 ? b : g')
//   p -= lr * d
// adam_step, per element, at step t with c1 = 1 - beta1^t, c2 = 1 - beta2^t:
//   Adam:  g += weight_decay * p            AdamW (decoupled):  p -= lr * weight_decay * p
//   m = beta1 * m + (1 - beta1) * g,   v = beta2 * v + (1 - beta2) * g^2
//   p -= lr * (m / c1) / (sqrt(v / c2) + eps)
#include <cmath>

#include "core/dispatch.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

bool sgd_step_naive(std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                    std::vector<Tensor>& momentum_buffers, const SgdParams& h) {
  const bool use_momentum = h.momentum > 0;
  for (size_t k = 0; k < params.size(); ++k) {
    float* p = params[k].data<float>();
    const float* g = grads[k].data<float>();
    float* b = use_momentum ? momentum_buffers[k].data<float>() : nullptr;
    const int64_t n = params[k].numel();
    for (int64_t i = 0; i < n; ++i) {
      const double decayed = g[i] + h.weight_decay * p[i];
      double direction = decayed;
      if (use_momentum) {
        const double buffer = h.first_step ? decayed : h.momentum * b[i] + (1 - h.dampening) * decayed;
        b[i] = static_cast<float>(buffer);
        direction = h.nesterov ? decayed + h.momentum * buffer : buffer;
      }
      p[i] = static_cast<float>(p[i] - h.lr * direction);
    }
  }
  return true;
}

bool adam_step_naive(std::vector<Tensor>& params, const std::vector<Tensor>& grads, std::vector<Tensor>& m,
                     std::vector<Tensor>& v, const AdamParams& h) {
  const double c1 = 1 - std::pow(h.beta1, static_cast<double>(h.step));
  const double c2 = 1 - std::pow(h.beta2, static_cast<double>(h.step));
  for (size_t k = 0; k < params.size(); ++k) {
    float* p = params[k].data<float>();
    const float* g = grads[k].data<float>();
    float* pm = m[k].data<float>();
    float* pv = v[k].data<float>();
    const int64_t n = params[k].numel();
    for (int64_t i = 0; i < n; ++i) {
      double param = p[i], grad = g[i];
      if (h.decoupled_weight_decay)
        param -= h.lr * h.weight_decay * param;
      else
        grad += h.weight_decay * param;
      const double first = h.beta1 * pm[i] + (1 - h.beta1) * grad;
      const double second = h.beta2 * pv[i] + (1 - h.beta2) * grad * grad;
      param -= h.lr * (first / c1) / (std::sqrt(second / c2) + h.eps);
      pm[i] = static_cast<float>(first);
      pv[i] = static_cast<float>(second);
      p[i] = static_cast<float>(param);
    }
  }
  return true;
}

}  // namespace

void register_optim_naive_cpu() {
  const char* d = "reference: one element at a time, computed in double";
  register_kernel(keys::sgd_step, DeviceType::cpu, "naive", Priority::reference, d, sgd_step_naive);
  register_kernel(keys::adam_step, DeviceType::cpu, "naive", Priority::reference, d, adam_step_naive);
}

}  // namespace minidl
