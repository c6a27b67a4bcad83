// nn/fuse_relu.cpp — the ReLU fusion pass (nn/fuse_relu.h): which layer-then-ReLU pairs run as one fused
// op, the check that the device has the fused kernels, and the MINIDL_FUSE_RELU switch.
#include "nn/fuse_relu.h"

#include <typeinfo>

#include "core/dispatch.h"
#include "core/settings.h"
#include "nn/layers.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// MINIDL_FUSE_RELU, a switch that is on by default (core/settings.h); a malformed value is an error naming
// the variable.
bool fusion_from_environment() { return settings::fuse_relu.read(); }

bool& fusion_flag() {
  static bool on = fusion_from_environment();
  return on;
}

// Exactly a T, not a subclass: a subclass may override forward, which fusing would skip.
template <class T>
T* exactly(Module& m) {
  return typeid(m) == typeid(T) ? static_cast<T*>(&m) : nullptr;
}
template <class T>
bool is_exactly(const Module& m) {
  return typeid(m) == typeid(T);
}

// `layer` then ReLU as one fused call, or an undefined tensor when `layer` has no fused form here (not
// exactly a Linear, Conv2d, BatchNorm1d or BatchNorm2d; a Linear or Conv2d without a bias; no kernels for
// the device).
Tensor forward_then_relu(Module& layer, const Tensor& x) {
  const DeviceType device = x.device().type;
  if (Linear* l = exactly<Linear>(layer); l != nullptr && l->bias.defined()) {
    if (has_fused_kernels(keys::bias_relu, keys::bias_relu_backward, device)) return l->forward_relu(x);
  } else if (Conv2d* c = exactly<Conv2d>(layer); c != nullptr && c->bias.defined()) {
    if (has_fused_kernels(keys::bias_relu, keys::bias_relu_backward, device)) return c->forward_relu(x);
  } else if (is_exactly<BatchNorm1d>(layer) || is_exactly<BatchNorm2d>(layer)) {
    if (has_fused_kernels(keys::batch_norm_relu, keys::batch_norm_relu_backward, device))
      return static_cast<BatchNorm&>(layer).forward_relu(x);
  }
  return Tensor();
}

}  // namespace

Tensor fused_relu_forward(Module& layer, const Module& next, const Tensor& x) {
  if (!relu_fusion() || !is_exactly<ReLU>(next)) return Tensor();
  return forward_then_relu(layer, x);
}

Tensor fused_relu_max_pool_forward(Module& layer, const Module& relu, const Module& pool, const Tensor& x) {
  if (!relu_fusion() || !is_exactly<ReLU>(relu) || !is_exactly<MaxPool2d>(pool)) return Tensor();
  Conv2d* c = exactly<Conv2d>(layer);
  if (c == nullptr || !c->bias.defined() ||
      !has_fused_kernels(keys::bias_relu, keys::bias_relu_backward, x.device().type))
    return Tensor();
  return c->forward_relu_max_pool(x, static_cast<const MaxPool2d&>(pool).params);
}

bool has_fused_kernels(const KernelKeyBase& forward, const KernelKeyBase& backward, DeviceType device) {
  KernelRegistry& registry = KernelRegistry::instance();
  return !registry.candidates(forward, device).empty() && !registry.candidates(backward, device).empty();
}

bool relu_fusion() { return fusion_flag(); }
void set_relu_fusion(bool on) { fusion_flag() = on; }
void check_fusion_environment() { fusion_from_environment(); }

}  // namespace minidl
