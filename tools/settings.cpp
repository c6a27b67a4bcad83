#include "tools/settings.h"

#include <cstdlib>
#include <exception>
#include <sstream>

#include "core/numerics.h"
#include "nn/layers.h"

namespace minidl {

namespace {

// The device types with kernels for both stages of a fused op, as "cpu" or "cpu, cuda"; "none" if none.
std::string devices_with(const std::string& op) {
  std::string out;
  for (const DeviceType type : {DeviceType::cpu, DeviceType::cuda}) {
    if (!has_fused_kernels(op, type)) continue;
    out += (out.empty() ? "" : ", ") + std::string(device_type_name(type));
  }
  return out.empty() ? "none" : out;
}

}  // namespace

std::string settings_report() {
  std::ostringstream os;
  os << "Settings (environment)\n";
  const char* kernels = std::getenv("MINIDL_KERNELS");
  os << "  MINIDL_KERNELS         "
     << (kernels && *kernels ? std::string(kernels) + " (tried first for those ops)" : std::string("none set"))
     << "\n";
  os << "  MINIDL_FUSE_RELU       ";
  try {
    check_fusion_environment();
    if (relu_fusion())
      os << "on: a Linear or Conv2d with a bias, or a BatchNorm, followed by a ReLU runs fused (bias_relu: "
         << devices_with("bias_relu") << "; batch_norm_relu: " << devices_with("batch_norm_relu")
         << "; other devices unfused)\n";
    else
      os << "off: layers and ReLUs run as separate ops\n";
  } catch (const std::exception& e) {
    os << "INVALID: " << e.what() << " (programs refuse to start)\n";
  }
  os << "  MINIDL_CHECK_NUMERICS  ";
  try {
    check_numerics_environment();
    os << (numerics_checking() ? "on: every kernel output is checked for NaN and infinity\n" : "off\n");
  } catch (const std::exception& e) {
    os << "INVALID: " << e.what() << " (programs refuse to start)\n";
  }
  return os.str();
}

}  // namespace minidl
