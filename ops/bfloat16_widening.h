// ops/bfloat16_widening.h — dispatch_widening_bf16: a kernel call that holds bfloat16 activations, served
// by a bfloat16 kernel where the device has one, else by the float32 kernels on widened copies.
//
// With `--activations bf16` (meant for `--precision bf16`, core/precision.h) the captcha model keeps its
// CNN's activations in bfloat16 between ops: conv2d, batch_norm (+ReLU) and max_pool2d take bfloat16 x and
// write bfloat16 y. A
// device's fast kernels serve those calls directly (the CUDA ones); every other kernel reads float32 only
// and declines them. Then this is the reference path, on any device:
//
//     every bfloat16 tensor argument        -> a float32 copy (exact: bfloat16 is float32's top half)
//     the key's float32 kernels run on the copies, as for any float32 call
//     every bfloat16 output (a Tensor& of the signature) <- its float32 copy, rounded to nearest even
//
// so a bfloat16 call computes exactly "the float32 op on the bfloat16 values, its results rounded to
// bfloat16": the reference the CUDA bfloat16 kernels are tested against (tests/test_bfloat16_activations.cpp).
// The copies keep each tensor's memory format (channels-last stays channels-last). Float32 tensors among
// the arguments (batch norm's gamma, beta and statistics) are passed as they are. MINIDL_LOG_DISPATCH shows
// the widened call as the float32 call it is, after the declines of the bfloat16 one.
#pragma once
#include <atomic>
#include <cstdint>
#include <tuple>
#include <utility>

#include "core/dispatch.h"
#include "core/memory_format.h"
#include "core/tensor.h"

namespace minidl {

namespace widening {

// Calls served on widened copies since the process started: the tests check with it that a device's
// bfloat16 kernels served a call (the count stays) rather than this path.
inline std::atomic<int64_t> widened_calls{0};

// A float32 copy of a bfloat16 tensor in the same memory format; any other tensor itself.
inline Tensor widened(const Tensor& t) {
  if (!t.defined() || t.dtype() != DType::bfloat16) return t;
  Tensor out = empty_in_format(t.shape(), TensorOptions(DType::float32, t.device()), suggest_memory_format(t));
  copy_(out, t);
  return out;
}

// One argument of the kernel's signature as the widened call passes it. The general case passes the
// value through (double eps, const Conv2dParams&); tensors get the two specialisations below.
template <class P>
struct Slot {
  P value;
  explicit Slot(P v) : value(std::forward<P>(v)) {}
  P get() { return std::forward<P>(value); }
  void narrow() {}
};
// An input: its float32 copy.
template <>
struct Slot<const Tensor&> {
  Tensor copy;
  explicit Slot(const Tensor& t) : copy(widened(t)) {}
  const Tensor& get() { return copy; }
  void narrow() {}
};
// An output: a float32 tensor the kernel writes (kernels overwrite their outputs, so nothing is copied in),
// rounded into the bfloat16 tensor afterwards.
inline Tensor widened_output(const Tensor& t) {
  if (!t.defined() || t.dtype() != DType::bfloat16) return t;
  return empty_in_format(t.shape(), TensorOptions(DType::float32, t.device()), suggest_memory_format(t));
}
template <>
struct Slot<Tensor&> {
  Tensor& original;
  Tensor copy;
  explicit Slot(Tensor& t) : original(t), copy(widened_output(t)) {}
  Tensor& get() { return copy; }
  void narrow() {
    if (original.defined() && original.dtype() == DType::bfloat16) copy_(original, copy);
  }
};

template <class A>
bool is_bfloat16(const A&) { return false; }
inline bool is_bfloat16(const Tensor& t) { return t.defined() && t.dtype() == DType::bfloat16; }

template <class... P, class... Args>
void dispatch_widened(const KernelKey<bool(P...)>& key, Device device, Args&&... args) {
  std::tuple<Slot<P>...> slots(Slot<P>(std::forward<Args>(args))...);
  std::apply([&](auto&... s) { dispatch(key, device, s.get()...); }, slots);
  std::apply([](auto&... s) { (s.narrow(), ...); }, slots);
}

}  // namespace widening

// dispatch(key, device, args...), except that a call holding a bfloat16 tensor which every kernel declines
// runs on float32 copies (the header comment). A call without bfloat16 tensors is dispatch itself.
template <class Fn, class... Args>
void dispatch_widening_bf16(const KernelKey<Fn>& key, Device device, Args&&... args) {
  if (!(widening::is_bfloat16(args) || ...)) {
    dispatch(key, device, std::forward<Args>(args)...);
    return;
  }
  if (try_dispatch(key, device, args...)) return;
  ++widening::widened_calls;
  widening::dispatch_widened(key, device, std::forward<Args>(args)...);
}

}  // namespace minidl
