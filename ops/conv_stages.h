// ops/conv_stages.h — conv2d's argument checks and three stages on detached tensors, in the activations'
// memory format: what the front ends conv2d (ops/conv.cpp) and conv2d_bias_relu (ops/conv_bias_relu.cpp) share.
//
// Each stage first offers a channels-last call to the kernels declared to serve channels-last
// activations (core/memory_format.h); where none does, it runs on NCHW copies and the result comes back
// in the caller's format. w (and the weight gradient) is always [O, C, KH, KW] contiguous.
#pragma once
#include "core/tensor.h"
#include "ops/kernel_signatures.h"

namespace minidl {

// Checks the arguments of a convolution front end `op` (floating tensors on one device and of one dtype,
// x [N, C, H, W], w [O, C, KH, KW] that fits it, a bias [O] when defined) and returns y's shape.
// `bfloat16_allowed`: x and w may also be bfloat16 (conv2d's stages serve it; the fused front ends do not).
Shape conv2d_checked_output_shape(const char* op, const Tensor& x, const Tensor& w, const Tensor& bias,
                                  const Conv2dParams& p, bool bfloat16_allowed = false);

// y = conv(x, w), channels-last when `nhwc`. `x` becomes the tensor the kernel read (an NCHW copy when no
// channels-last kernel served it): the one to save for the weight gradient.
Tensor conv2d_forward_stage(Tensor& x, const Tensor& w, const Shape& y_shape, const Conv2dParams& p, bool nhwc);

// dL/dx from g = dL/dy (in the format `nhwc` says) and w.
Tensor conv2d_input_grad_stage(const Tensor& g, const Tensor& w, const Shape& x_shape, const Conv2dParams& p,
                               bool nhwc);

// dL/dw from x (as conv2d_forward_stage left it) and g.
Tensor conv2d_weight_grad_stage(const Tensor& x, const Tensor& g, const Shape& w_shape, const Conv2dParams& p,
                                bool nhwc);

}  // namespace minidl
