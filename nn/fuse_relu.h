// nn/fuse_relu.h — the ReLU fusion pass: inside a Sequential, a layer followed directly by a ReLU runs
// as one fused op when the device has the fused kernels.
//
// Why: after a layer, the bias add (or the normalisation) and the ReLU are memory-bound; each pass over
// the activation costs its bytes. Unfused, a biased layer and its ReLU take four passes (add, relu,
// relu_backward, a sum for the bias gradient); fused they take two (ops/bias_relu.cpp says how).
//
// What it fuses, layer then ReLU:
//   Linear or Conv2d with a bias   the product without its bias, then bias_relu (ops/ops.h), which adds
//                                  the bias and applies the ReLU in one pass (both gradients in one pass);
//                                  a Conv2d through conv2d_bias_relu, which on a GPU may do both inside the
//                                  convolution's own call (cuDNN's graph API), else runs these two
//   BatchNorm1d or BatchNorm2d     batch_norm_relu: the ReLU applied as the normalised values are
//                                  written (in training; in evaluation, batch_norm then relu)
// And a Conv2d with a bias, its ReLU and a MaxPool2d after them: conv2d_bias_relu_max_pool2d, whose one
// backward applies the ReLU's mask and sums the bias gradient on the pooled grid (a quarter of the
// activation for 2x2 windows) before the pool's scatter (ops/conv_bias_relu.cpp says why that is exact).
// Only exactly these classes and exactly ReLU, not subclasses: a subclass may override forward, which
// fusing would skip. A pair runs fused only where the device has kernels for both stages of its fused
// key (keys::bias_relu and keys::bias_relu_backward, keys::batch_norm_relu and its backward); elsewhere
// the two modules run apart, as they would with the pass off.
//
// The values are those of the unfused layers up to the float rounding of sums in the gradients, and the
// model's modules and parameter names do not change (checkpoints load either way). The pass is on by
// default; MINIDL_FUSE_RELU=0 (core/settings.h, read once per process, at first use) or
// set_relu_fusion(false) turns it off, to compare or to profile the unfused ops.
//
// Sequential::forward (nn/layers.cpp) asks fused_relu_max_pool_forward for each layer that has two modules
// after it, and fused_relu_forward for each that has one.
#pragma once
#include "core/kernel_key.h"
#include "core/tensor.h"
#include "nn/module.h"

namespace minidl {

// relu(layer(x)) computed by one fused op, when `next` is exactly a ReLU, the pass is on, and `layer`
// has a fused form on x's device (see the top of this file); otherwise an undefined Tensor, and the
// caller runs `layer` and `next` as usual.
Tensor fused_relu_forward(Module& layer, const Module& next, const Tensor& x);

// pool(relu(layer(x))) computed by one fused op, when `layer` is exactly a Conv2d with a bias, `relu`
// exactly a ReLU and `pool` exactly a MaxPool2d, the pass is on and x's device has bias_relu's kernels;
// otherwise an undefined Tensor (the caller then tries fused_relu_forward for the first two).
Tensor fused_relu_max_pool_forward(Module& layer, const Module& relu, const Module& pool, const Tensor& x);

// Whether `device` has kernels for both stages of a fused op: has_fused_kernels(keys::bias_relu,
// keys::bias_relu_backward, DeviceType::cuda). The pass runs a pair apart on a device without them.
bool has_fused_kernels(const KernelKeyBase& forward, const KernelKeyBase& backward, DeviceType device);

// Whether the pass is on: MINIDL_FUSE_RELU at first use, then whatever set_relu_fusion set.
bool relu_fusion();
void set_relu_fusion(bool on);
// Throws an Error when MINIDL_FUSE_RELU is set to anything but 0 or 1 (programs call it at start, with
// check_environment, so that a typo fails before any work).
void check_fusion_environment();

}  // namespace minidl
