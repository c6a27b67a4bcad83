#include "core/device.h"

#include "core/error.h"

namespace minidl {

namespace {
thread_local Device current_default = Device::cpu();
}

const char* device_type_name(DeviceType t) { return t == DeviceType::cpu ? "cpu" : "cuda"; }

std::string Device::str() const {
  if (type == DeviceType::cpu) return "cpu";
  return "cuda:" + std::to_string(index);
}

Device Device::parse(const std::string& text) {
  if (text == "cpu") return cpu();
  if (text == "cuda" || text == "gpu") return cuda(0);
  if (text.rfind("cuda:", 0) == 0) {
    const std::string num = text.substr(5);
    MINIDL_CHECK(!num.empty() && num.find_first_not_of("0123456789") == std::string::npos,
                 "device: cannot parse '", text, "'; expected cpu, cuda or cuda:N");
    return cuda(std::stoi(num));
  }
  throw Error("device: cannot parse '" + text + "'; expected cpu, cuda or cuda:N");
}

Device default_device() { return current_default; }

DeviceGuard::DeviceGuard(Device d) : previous_(current_default) { current_default = d; }
DeviceGuard::~DeviceGuard() { current_default = previous_; }

}  // namespace minidl
