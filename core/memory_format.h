// core/memory_format.h — memory formats of 4-D tensors: contiguous (NCHW) and channels-last (NHWC).
//
// A channels-last tensor keeps its logical shape [N, C, H, W] (every op, index and gradient sees the same
// shape as before); only its strides change, to PyTorch's channels_last convention:
//
//   contiguous     strides [C*H*W, H*W, W, 1]     memory order n, c, h, w
//   channels_last  strides [H*W*C, 1,   W*C, C]   memory order n, h, w, c
//
// Why: cuDNN's fastest convolutions on tensor cores (and minidl's implicit-GEMM kernels) read NHWC, so
// an NCHW network pays a transpose inside cuDNN on every call. Keeping the activations NHWC between ops
// removes those transposes; elementwise ops, bias + ReLU and batch norm read the same memory either way
// (batch norm's per-channel statistics of an NHWC tensor are those of rows [N*H*W, C]).
//
// Which format an op's output takes: the format of its input (suggest_memory_format), as in PyTorch.
// Which kernels may receive a channels-last tensor: only those declared here beside their registration
// (declare_channels_last_kernel); the op front ends call dispatch_channels_last, which tries only those,
// and fall back to NCHW copies (visible as "copy" rows of MINIDL_PROFILE) where none serves the call.
// Kernels never declared keep receiving contiguous NCHW tensors, as their signatures promise.
#pragma once
#include <string>
#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace minidl {

enum class MemoryFormat { contiguous, channels_last };

// "nchw" or "nhwc": the names of the programs' --memory-format flag.
const char* memory_format_name(MemoryFormat format);
// "nchw" (or "contiguous") and "nhwc" (or "channels_last"); anything else throws, naming both.
MemoryFormat parse_memory_format(const std::string& name);

// The channels-last strides of a 4-D shape: [H*W*C, 1, W*C, C].
Shape channels_last_strides(const Shape& shape);

// True when t is 4-D and its elements lie densely in memory in the order n, h, w, c (the strides of
// size-1 dims ignored, as is_contiguous() does): what a kernel reading NHWC memory needs.
bool is_channels_last(const Tensor& t);

// The format an op keeps for its output: channels_last when t is 4-D, dense in NHWC order and either
// not NCHW-contiguous or carrying exactly the channels-last strides (a [N, 1, H, W] image is both; it
// counts as channels-last once to_memory_format gave it those strides, as in PyTorch); contiguous
// otherwise.
MemoryFormat suggest_memory_format(const Tensor& t);

// An uninitialised tensor of logical shape [N, C, H, W] stored channels-last.
Tensor empty_channels_last(const Shape& shape, TensorOptions options);
// An uninitialised tensor of `shape` in `format` (contiguous for shapes that are not 4-D).
Tensor empty_in_format(const Shape& shape, TensorOptions options, MemoryFormat format);

// Views without autograd history (make_view). nhwc_view: a 4-D tensor of any strides seen as
// [N, H, W, C] (contiguous when t is channels-last). nchw_view: the inverse, an [N, H, W, C] tensor seen
// as [N, C, H, W] (channels-last when it was contiguous).
Tensor nhwc_view(const Tensor& t);
Tensor nchw_view(const Tensor& nhwc);

// t in `format` without autograd history: t itself when it is already in it, a view with that format's
// strides when its memory is already in that order (a [N, 1, H, W] image is), else a copy.
Tensor copy_in_format(const Tensor& t, MemoryFormat format);

// ---- which kernels serve channels-last tensors
// Declares that kernel `name` of `key` on `device` accepts channels-last tensors wherever its signature
// has an activation [N, C, H, W] (x, y and their gradients; weights stay in their usual layout). Called
// beside the kernel's registration.
void declare_channels_last_kernel(const KernelKeyBase& key, DeviceType device, const std::string& name);
bool serves_channels_last(const std::string& key, DeviceType device, const std::string& name);
// The kernels of key on device, in dispatch order, that are declared to serve channels-last tensors.
std::vector<const KernelInfo*> channels_last_candidates(const KernelKeyBase& key, DeviceType device);

// Calls the first channels-last kernel of `key` on `device` that accepts the call; false when none is
// declared or every one declines (the caller then runs the key on NCHW copies). `auto` selection does
// not apply here: the declared kernels are tried in the usual order.
template <class Fn, class... Args>
bool dispatch_channels_last(const KernelKey<Fn>& key, Device device, Args&&... args) {
  const std::vector<const KernelInfo*> kernels = channels_last_candidates(key, device.type);
  if (kernels.empty()) return false;
  const CallWatch watch = KernelRegistry::instance().watch(kernels);
  const std::string shape = watch.shape ? describe_call(args...) : std::string();
  DeclinedKernels declined;
  for (const KernelInfo* k : kernels)
    if (try_kernel<Fn>(*k, device, watch, shape, declined, args...)) return true;
  return false;
}

}  // namespace minidl
