// exercises/08-sgd-momentum/solution/sgd_momentum.cpp — the reference solution of exercise 8 (the SGD update).
// Read first: docs/course/08-training-mnist.md. Check your work: `make exercise N=8`.
//
// optimizer.step() in a training loop (nn/optim.h) makes one call of the key "sgd_step" over every
// parameter: a fused update, the same math as PyTorch's torch.optim.SGD (ops/kernel_signatures.h). For
// each parameter p, its gradient g and its momentum buffer b, element by element:
//   g' = g + weight_decay * p                                   (L2 weight decay, through the gradient)
//   b  = first_step ? g' : momentum * b + (1 - dampening) * g'  (only when momentum > 0; b is unused otherwise)
//   d  = nesterov ? g' + momentum * b : (momentum > 0 ? b : g')
//   p -= lr * d
// All tensors are contiguous float32; params and buffers are updated in place.
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
      const float decayed = g[i] + static_cast<float>(h.weight_decay) * p[i];
      float direction = decayed;
      if (use_momentum) {
        const float m = static_cast<float>(h.momentum);
        b[i] = h.first_step ? decayed : m * b[i] + static_cast<float>(1 - h.dampening) * decayed;
        direction = h.nesterov ? decayed + m * b[i] : b[i];
      }
      p[i] -= static_cast<float>(h.lr) * direction;
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
