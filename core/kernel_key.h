// core/kernel_key.h — a kernel key as a typed object: its name and the signature of its kernels.
//
// Each key is declared once, next to its signature (ops/kernel_signatures.h, core/tensor_kernels.h):
//
//     inline const KernelKey<Conv2dKernel> conv2d{"conv2d"};          // in namespace minidl::keys
//
// register_kernel(keys::conv2d, ...) and dispatch(keys::conv2d, ...) (core/dispatch.h) take the object, so
// a kernel or a call of the wrong signature does not compile, and "find references" on keys::conv2d lists
// every kernel and every call of the key. The name ("conv2d", "conv2d.backward_input") is what users and
// logs see: `minidl kernels`, MINIDL_KERNELS, --kernel, MINIDL_LOG_DISPATCH.
//
// The key also remembers, per device type, where its entry in the dispatch table is (set once, on the
// first dispatch), so a dispatch finds its kernel list by reading one pointer: no lock, no string.
#pragma once
#include <atomic>

#include "core/device.h"

namespace minidl {

struct KeySlot;  // one (key, device) entry of the dispatch table (core/dispatch.cpp)

class KernelKeyBase {
 public:
  explicit constexpr KernelKeyBase(const char* name) : name_(name) {}
  KernelKeyBase(const KernelKeyBase&) = delete;  // a key is one object: its cached slots are its own
  KernelKeyBase& operator=(const KernelKeyBase&) = delete;

  // "conv2d.backward_input"
  const char* name() const { return name_; }
  // The table entry of this key on `device`, or null before the first dispatch there.
  KeySlot* cached_slot(DeviceType device) const {
    return slots_[static_cast<int>(device)].load(std::memory_order_acquire);
  }
  // Remembers the table entry (entries are never freed, so the pointer stays valid).
  void cache_slot(DeviceType device, KeySlot* slot) const {
    slots_[static_cast<int>(device)].store(slot, std::memory_order_release);
  }

 private:
  const char* name_;
  mutable std::atomic<KeySlot*> slots_[kNumDeviceTypes] = {};
};

// A key whose kernels have the function type Fn, e.g. KernelKey<Conv2dKernel>.
template <class Fn>
class KernelKey : public KernelKeyBase {
 public:
  using Signature = Fn;
  explicit constexpr KernelKey(const char* name) : KernelKeyBase(name) {}
};

}  // namespace minidl
