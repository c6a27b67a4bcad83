// tests/kernel_contract_check.h — the kernel sweeps' side of core/kernel_contract.h: a sweep that runs
// every kernel of a key checks each one where it accepts, skips the stages it does not serve, and
// checks that it declines exactly the calls its contract lists. A kernel without a contract is a full
// kernel: it serves every stage it is registered for and declines none of the sweep's calls.
//
//     for_each_kernel("conv2d", [&](Device d, const std::string& name) {
//       const ContractCall call = call_under_contract<Conv2dKernel>("conv2d", d, name, xd, wd, y, p);
//       CHECK(call.verdict == "");
//       if (call.served) CHECK(compare(y, ref, ...) == "");
//     });
//
// The verdicts are strings ("" when the kernel kept its contract) so that a test can also check that a
// broken kernel is reported (tests/test_kernel_contract.cpp).
#pragma once
#include <string>
#include <utility>

#include "core/call_shape.h"
#include "core/dispatch.h"
#include "core/kernel_contract.h"

namespace minidl {
namespace testing {

// Whether kernel `name` serves stage `key` on `device`: whether it is registered for that key.
bool serves_stage(const std::string& key, DeviceType device, const std::string& name);

// "" when the stages kernel `name` of `op` declared in its contract (if it declared any) are the keys it
// is registered for on `device`; otherwise a failure naming the kernel and both lists.
std::string stages_verdict(const std::string& op, DeviceType device, const std::string& name);

// The verdict on the last call of (key, device), made with kernel `name` selected (for_each_kernel):
// `declined_as` is what its contract says of the call (contract_declines: "" for a call it must serve,
// else the decline's description) and `shape` describes the call for the message. "" when the kernel
// served a call its contract accepts, declined one its contract declines, or does not serve the stage
// (another kernel then serves it); otherwise a failure naming the kernel and the shape.
std::string contract_verdict(const std::string& key, DeviceType device, const std::string& name,
                             const std::string& declined_as, const std::string& shape);

// One call of a sweep: whether kernel `name` served it, and contract_verdict's verdict.
struct ContractCall {
  bool served = false;
  std::string verdict;
};

// Dispatches one call of `key` on `device` (kernel `name` selected by the caller) and judges it against
// the contract. The outputs hold the result of whichever kernel served.
template <class Fn, class... Args>
ContractCall call_under_contract(const std::string& key, Device device, const std::string& name, Args&&... args) {
  const std::string declined_as = contract_declines<Fn>(key, device.type, name, args...);
  dispatch<Fn>(key, device, args...);
  ContractCall call;
  call.served = last_kernel(key, device.type) == name;
  call.verdict = contract_verdict(key, device.type, name, declined_as, describe_call(args...));
  return call;
}

}  // namespace testing
}  // namespace minidl
