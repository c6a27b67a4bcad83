#include "tools/settings.h"

#include <cstdio>
#include <exception>
#include <sstream>

#include "core/numerics.h"
#include "core/settings.h"
#include "nn/fuse_relu.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// The device types with kernels for both stages of a fused op, as "cpu" or "cpu, cuda"; "none" if none.
std::string devices_with(const KernelKeyBase& forward, const KernelKeyBase& backward) {
  std::string out;
  for (const DeviceType type : {DeviceType::cpu, DeviceType::cuda}) {
    if (!has_fused_kernels(forward, backward, type)) continue;
    out += (out.empty() ? "" : ", ") + std::string(device_type_name(type));
  }
  return out.empty() ? "none" : out;
}

// What a valid setting does in this process, where the value alone does not say it (the fusion can also
// be switched by the API; the numerics check names its cost). "" for the others.
std::string effect(const Setting& s) {
  if (&s == &settings::fuse_relu) {
    if (!relu_fusion()) return "off: layers and ReLUs run as separate ops";
    return "on: a Linear or Conv2d with a bias, or a BatchNorm, followed by a ReLU runs fused (bias_relu: " +
           devices_with(keys::bias_relu, keys::bias_relu_backward) +
           "; batch_norm_relu: " + devices_with(keys::batch_norm_relu, keys::batch_norm_relu_backward) +
           "; other devices unfused)";
  }
  if (&s == &settings::check_numerics)
    return numerics_checking() ? "on: every kernel output is checked for NaN and infinity" : "off";
  return "";
}

}  // namespace

std::string settings_report() {
  std::ostringstream os;
  os << "Settings (environment variables, core/settings.h)\n";
  for (const Setting* s : all_settings()) {
    std::string value = describe_setting(*s);
    if (value.rfind("INVALID", 0) != 0) {
      const std::string what = effect(*s);
      if (!what.empty()) value = what;
    }
    char name[40];
    std::snprintf(name, sizeof name, "  %-26s ", s->name());
    os << name << value << "\n" << std::string(29, ' ') << s->meaning() << "\n";
  }
  return os.str();
}

}  // namespace minidl
