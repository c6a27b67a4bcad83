// core/kernel_contract.cpp — the store of kernel contracts (core/kernel_contract.h): the declines per
// (key, device, kernel) and the stages per (op, device, kernel), behind one lock. Dispatch never reads it;
// the tests' kernel sweeps do.
#include "core/kernel_contract.h"

#include <map>
#include <mutex>
#include <tuple>

#include "core/error.h"
#include "core/selection_target.h"
#include "core/strings.h"

namespace minidl {

namespace {

struct ContractStore {
  std::mutex mutex;
  // (key, device, kernel) -> its declines
  std::map<std::tuple<std::string, int, std::string>, std::shared_ptr<const StoredContract>> declines;
  // (op, device, kernel) -> the stages it serves, and the key whose contract declared them
  std::map<std::tuple<std::string, int, std::string>, std::pair<std::vector<std::string>, std::string>> stages;
};

ContractStore& store() {
  static ContractStore* s = new ContractStore();  // never destroyed: registration may run at any time
  return *s;
}

}  // namespace

std::string stage_of_key(const std::string& key) {
  return is_stage_target(key) ? key.substr(key.find('.') + 1) : "forward";
}

void store_kernel_contract(const std::string& key, DeviceType device, const std::string& name,
                           const std::vector<std::string>& stages, StoredContract stored) {
  ContractStore& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  const int dev = static_cast<int>(device);
  if (!stages.empty()) {
    auto& declared = s.stages[{op_of_key(key), dev, name}];
    MINIDL_CHECK(declared.first.empty() || declared.first == stages, "kernel contract of '", name, "' (",
                 device_type_name(device), "): the contract of ", key, " says it serves ", join(stages, ", "),
                 ", the contract of ", declared.second, " said ", join(declared.first, ", "));
    declared = {stages, key};
  }
  s.declines[{key, dev, name}] = std::make_shared<const StoredContract>(std::move(stored));
}

std::shared_ptr<const StoredContract> find_kernel_contract(const std::string& key, DeviceType device,
                                                           const std::string& name) {
  ContractStore& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.declines.find({key, static_cast<int>(device), name});
  return it == s.declines.end() ? nullptr : it->second;
}

void forget_kernel_contract(const std::string& key, DeviceType device, const std::string& name) {
  ContractStore& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  const int dev = static_cast<int>(device);
  s.declines.erase({key, dev, name});
  auto stages = s.stages.find({op_of_key(key), dev, name});
  if (stages != s.stages.end() && stages->second.second == key) s.stages.erase(stages);
}

std::vector<std::string> declared_stages(const std::string& op, DeviceType device, const std::string& name) {
  ContractStore& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.stages.find({op, static_cast<int>(device), name});
  return it == s.stages.end() ? std::vector<std::string>{} : it->second.first;
}

void throw_contract_signature_mismatch(const std::string& key, const std::string& name) {
  throw Error(str_cat("kernel contract of '", name, "' for ", key, ": declared with another signature than the key's"));
}

}  // namespace minidl
