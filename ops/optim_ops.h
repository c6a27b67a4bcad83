// ops/optim_ops.h — fused, in-place optimizer updates over a list of parameters (no autograd).
// The math is in ops/kernel_signatures.h (SgdStepKernel, AdamStepKernel). All tensors of one call live
// on one device; params, grads and buffers are contiguous float32 of matching shapes.
#pragma once
#include <vector>

#include "ops/kernel_signatures.h"

namespace minidl {

void sgd_step(std::vector<Tensor>& params, const std::vector<Tensor>& grads, std::vector<Tensor>& momentum_buffers,
              const SgdParams& h);
void adam_step(std::vector<Tensor>& params, const std::vector<Tensor>& grads, std::vector<Tensor>& m,
               std::vector<Tensor>& v, const AdamParams& h);

}  // namespace minidl
