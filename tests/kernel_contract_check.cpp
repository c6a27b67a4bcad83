// tests/kernel_contract_check.cpp — the verdicts of tests/kernel_contract_check.h: a kernel's stages
// against its registrations, and one call against its contract.
#include "tests/kernel_contract_check.h"

#include <algorithm>
#include <set>

#include "core/strings.h"

namespace minidl {
namespace testing {

namespace {

std::string kernel_id(const std::string& key, DeviceType device, const std::string& name) {
  return str_cat("kernel '", name, "' of ", key, " on ", device_type_name(device));
}

}  // namespace

bool serves_stage(const std::string& key, DeviceType device, const std::string& name) {
  for (const KernelInfo* k : KernelRegistry::instance().candidates(key, device))
    if (k->name == name) return true;
  return false;
}

std::string stages_verdict(const std::string& op, DeviceType device, const std::string& name) {
  const std::vector<std::string> declared = declared_stages(op, device, name);
  if (declared.empty()) return "";
  std::set<std::string> registered;
  for (const KernelInfo* k : KernelRegistry::instance().all())
    if (k->op == op && k->device == device && k->name == name) registered.insert(stage_of_key(k->key));
  if (std::set<std::string>(declared.begin(), declared.end()) == registered) return "";
  return str_cat(kernel_id(op, device, name), ": its contract says it serves ", join(declared, ", "),
                 "; it is registered for ", registered.empty() ? "none" : join(registered, ", "));
}

std::string contract_verdict(const std::string& key, DeviceType device, const std::string& name,
                             const std::string& declined_as, const std::string& shape) {
  if (!serves_stage(key, device, name)) return "";  // a stage it does not serve: the sweep skips it
  const std::vector<std::string> declined = last_declined_kernels(key, device);
  const bool served = last_kernel(key, device) == name;
  const bool did_decline = std::find(declined.begin(), declined.end(), name) != declined.end();
  if (served && declined_as.empty()) return "";
  if (did_decline && !declined_as.empty()) return "";
  if (served)
    return str_cat(kernel_id(key, device, name), " served ", shape, ", which its contract says it declines (",
                   declined_as, ")");
  if (did_decline) {
    const std::shared_ptr<const StoredContract> contract = find_kernel_contract(key, device, name);
    const bool lists_some = contract && !contract->descriptions.empty();
    const std::string listed = lists_some ? join(contract->descriptions, "; ") : "none";
    return str_cat(kernel_id(key, device, name), " declined ", shape,
                   ", which its contract does not list (declines listed: ", listed, ")");
  }
  return str_cat(kernel_id(key, device, name), " was not tried on ", shape, " (served by '", last_kernel(key, device),
                 "'): is it selected?");
}

}  // namespace testing
}  // namespace minidl
