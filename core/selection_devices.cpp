// core/selection_devices.cpp — selections_unused_by (core/selection_devices.h): the devices that have a
// kernel of the selected name, from the dispatch table, against the devices the run uses.
#include "core/selection_devices.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "core/dispatch.h"
#include "core/selection_target.h"
#include "core/strings.h"

namespace minidl {

std::vector<std::string> selections_unused_by(const std::string& spec, const std::vector<DeviceType>& used) {
  std::vector<std::string> lines;
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 >= item.size()) continue;
    const std::string op = item.substr(0, eq), name = item.substr(eq + 1);
    if (name == "default") continue;
    std::set<std::string> where;  // device types that have kernel `name` of `op` (an op or one stage)
    bool on_used_device = false;
    for (const KernelInfo* k : KernelRegistry::instance().all()) {
      if (!key_in_target(k->key, op) || k->name != name) continue;
      where.insert(device_type_name(k->device));
      if (std::find(used.begin(), used.end(), k->device) != used.end()) on_used_device = true;
    }
    if (where.empty() || on_used_device) continue;
    lines.push_back(str_cat(item, " selects a ", join(where, " and "), " kernel; this run uses ",
                            join(used, " and ", [](DeviceType d) { return std::string(device_type_name(d)); }),
                            " only, so the selection changes nothing"));
  }
  return lines;
}

}  // namespace minidl
