// ops/pool_stages.h — max_pool2d's two stages on detached tensors, in the input's memory format: what the
// front ends max_pool2d (ops/pool.cpp) and conv2d_bias_relu_max_pool2d (ops/conv_bias_relu.cpp) share.
//
// Each stage first offers a channels-last call to the kernels declared to serve channels-last tensors
// (core/memory_format.h); where none does, it runs on NCHW copies.
#pragma once
#include <utility>

#include "core/tensor.h"
#include "ops/kernel_signatures.h"

namespace minidl {

// y = max_pool2d(x) into y (y in x's memory format, of the pooled shape). Returns x and y as the kernel
// read and wrote them (NCHW copies where no channels-last kernel served a channels-last x): the pair the
// input-gradient stage takes.
std::pair<Tensor, Tensor> max_pool2d_forward_stage(const Tensor& x, Tensor& y, const Pool2dParams& p);

// dL/dx from g = dL/dy and the pair max_pool2d_forward_stage returned: each window's g goes to the first
// position where x equals y. Channels-last when x and y are and a kernel serves them, else NCHW.
Tensor max_pool2d_input_grad_stage(const Tensor& x, const Tensor& y, const Tensor& g, const Pool2dParams& p);

}  // namespace minidl
