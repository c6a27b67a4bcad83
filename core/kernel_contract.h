// core/kernel_contract.h — what a partial kernel promises: the stages of its op it serves and the call
// shapes it declines, declared next to its registration line so the tests can hold it to them.
//
// A full kernel serves every stage of its op (conv2d: forward, backward_input, backward_weight) and
// every documented call of each; it needs no contract. A kernel written to study one idea may serve the
// forward only, or only stride 1: it says so once, beside its registration,
//
//     register_kernel(keys::conv2d, DeviceType::cpu, "direct_s1", Priority::portable - 5, "...", conv2d_direct_s1);
//     declare_kernel_contract(keys::conv2d, DeviceType::cpu, "direct_s1",
//                             {{"forward"},
//                              {{"stride != 1", [](const Tensor&, const Tensor&, Tensor&, const Conv2dParams& p) {
//                                  return p.stride_h != 1 || p.stride_w != 1;
//                                }}}});
//
// and the kernel sweeps of the tests (tests/kernel_contract_check.h) then check it where it accepts, skip
// the stages it does not serve, and check that it declines exactly the calls its contract lists: a
// decline the contract does not list, or a call served that the contract says is declined, is a failure
// naming the kernel and the shape. The stages a kernel serves are the keys it is registered for; the
// contract's list states them on purpose, so that a forgotten registration is caught too.
//
// A decline is a predicate over the kernel's own arguments (the key's signature, ops/kernel_signatures.h)
// and a one-line description a user can read ("stride != 1", "channels not a multiple of 4"). Dispatch
// never reads a contract: a kernel still declines by returning false, and the next kernel serves.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <typeindex>
#include <vector>

#include "core/device.h"
#include "core/kernel_key.h"

namespace minidl {

// One class of calls a kernel declines: `applies` is true for the calls of the class, given the
// kernel's own arguments.
template <class Fn>
struct DeclinedShape {
  std::string description;  // one line: "stride != 1"
  std::function<Fn> applies;
};

// A kernel's contract for one key. `stages`: the stages of the key's op the kernel serves, named as
// `minidl kernels` lists them ("forward", "backward_input"); empty leaves them to its registrations (or
// to another key's contract of the same kernel). `declines`: the calls of this key it declines.
template <class Fn>
struct KernelContract {
  std::vector<std::string> stages;
  std::vector<DeclinedShape<Fn>> declines;
};

// The stage of a key, as `minidl kernels` lists it: "forward" for "conv2d", "backward_input" for
// "conv2d.backward_input".
std::string stage_of_key(const std::string& key);

// The type-erased part the store keeps: the descriptions, and the declines behind a pointer of the
// key's signature type (checked on every read).
struct StoredContract {
  std::type_index signature = typeid(void);
  std::vector<std::string> descriptions;
  std::shared_ptr<const void> declines;  // a std::vector<DeclinedShape<Fn>>
};
// Stores a contract; throws when the kernel's stages were declared differently before.
void store_kernel_contract(const std::string& key, DeviceType device, const std::string& name,
                           const std::vector<std::string>& stages, StoredContract stored);
// Thrown by contract_declines when the contract was declared with another signature than the caller's.
[[noreturn]] void throw_contract_signature_mismatch(const std::string& key, const std::string& name);
// The stored declines of (key, device, name); null when it declared none.
std::shared_ptr<const StoredContract> find_kernel_contract(const std::string& key, DeviceType device,
                                                           const std::string& name);

// Declares kernel `name`'s contract for (key, device), the key named at run time (tests that register a
// kernel for a while: declare_kernel_contract<Conv2dKernel>("conv2d", ...)). Register the kernel too.
template <class Fn>
void declare_kernel_contract(const std::string& key, DeviceType device, const std::string& name,
                             KernelContract<Fn> contract) {
  StoredContract stored;
  stored.signature = typeid(Fn);
  for (const DeclinedShape<Fn>& d : contract.declines) stored.descriptions.push_back(d.description);
  stored.declines = std::make_shared<const std::vector<DeclinedShape<Fn>>>(std::move(contract.declines));
  store_kernel_contract(key, device, name, contract.stages, std::move(stored));
}
// The same by key object, next to a kernel's register_kernel line.
template <class Fn>
void declare_kernel_contract(const KernelKey<Fn>& key, DeviceType device, const std::string& name,
                             KernelContract<Fn> contract) {
  declare_kernel_contract<Fn>(std::string(key.name()), device, name, std::move(contract));
}
// Forgets kernel `name`'s contract for (key, device), and its declared stages (for tests).
void forget_kernel_contract(const std::string& key, DeviceType device, const std::string& name);

// The stages kernel `name` of `op` on `device` declared ({} when none did).
std::vector<std::string> declared_stages(const std::string& op, DeviceType device, const std::string& name);

// The description of the first decline of kernel `name`'s contract for (key, device) that applies to
// these arguments; "" when the contract accepts them (or the kernel declared none). Throws when the
// contract was declared with another signature.
template <class Fn, class... Args>
std::string contract_declines(const std::string& key, DeviceType device, const std::string& name,
                              Args&&... args) {
  const std::shared_ptr<const StoredContract> stored = find_kernel_contract(key, device, name);
  if (!stored) return "";
  if (stored->signature != typeid(Fn)) throw_contract_signature_mismatch(key, name);
  const auto& declines = *static_cast<const std::vector<DeclinedShape<Fn>>*>(stored->declines.get());
  for (const DeclinedShape<Fn>& d : declines)
    if (d.applies(args...)) return d.description;
  return "";
}

}  // namespace minidl
