// exercises/08-sgd-momentum/sgd_momentum.cpp — EXERCISE 8, no scaffolding: the SGD update with momentum.
// Read first: docs/course/08-training-mnist.md. Check your work: `make exercise N=8`.
//
// Contract:
//   sgd_step_student updates every parameter p (and its momentum buffer b, when momentum > 0) in place,
//   element by element, as torch.optim.SGD:
//     g' = g + weight_decay * p
//     b  = first_step ? g' : momentum * b + (1 - dampening) * g'      (only when momentum > 0)
//     d  = nesterov ? g' + momentum * b : (momentum > 0 ? b : g')
//     p -= lr * d
//   On the first step b holds nothing meaningful (the checker fills it with NaN).
#include "exercises/08-sgd-momentum/sgd_momentum.h"

#include "core/dispatch.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

bool sgd_step_student(std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                      std::vector<Tensor>& momentum_buffers, const SgdParams& h) {
  const bool use_momentum = h.momentum > 0;
  for (size_t k = 0; k < params.size(); ++k) {
    float* p = params[k].data<float>();
    const float* g = grads[k].data<float>();
    float* b = use_momentum ? momentum_buffers[k].data<float>() : nullptr;  // null without momentum
    const int64_t n = params[k].numel();
    for (int64_t i = 0; i < n; ++i) {
      (void)p;
      (void)g;
      (void)b;
    }
  }
  return true;
}

}  // namespace

// Priority -10: serves only when selected (the checker selects it).
void register_student_sgd() {
  register_kernel(keys::sgd_step, DeviceType::cpu, "student", Priority::reference - 10,
                  "exercise 8: one element at a time, in float", sgd_step_student);
}

}  // namespace minidl
