#include "core/backend.h"

#include <cstdio>

#include "core/error.h"

namespace minidl {

void ensure_registered();  // core/registry_init.cpp

namespace {
DeviceBackend* backends[kNumDeviceTypes] = {nullptr, nullptr};
}

void register_backend(DeviceType type, DeviceBackend* backend) { backends[static_cast<int>(type)] = backend; }

bool has_backend(DeviceType type) {
  ensure_registered();
  return backends[static_cast<int>(type)] != nullptr;
}

DeviceBackend& backend_for(DeviceType type) {
  ensure_registered();
  DeviceBackend* b = backends[static_cast<int>(type)];
  MINIDL_CHECK(b != nullptr, device_type_name(type),
               ": this build of minidl has no CUDA support (CUDA toolkit not found at configure time); "
               "rebuild on a machine with nvcc, or use --device cpu");
  return *b;
}

void check_device_usable(const Device& d) {
  DeviceBackend& b = backend_for(d.type);
  const int n = b.device_count();
  if (n == 0) throw Error(str_cat(d.str(), ": no usable device: ", b.unavailable_reason()));
  MINIDL_CHECK(d.index >= 0 && d.index < n, d.str(), ": device index out of range; ", n, " ",
               device_type_name(d.type), " device(s) found");
}

Device choose_device(const std::string& flag, const std::string& program) {
  const char* name = program.c_str();
  if (flag != "auto") {
    const Device d = Device::parse(flag);
    check_device_usable(d);  // a clear error when the build or the machine has no such device
    std::printf("%s: device %s (--device %s)\n", name, d.str().c_str(), flag.c_str());
    return d;
  }
  std::string why;
  if (!has_backend(DeviceType::cuda)) {
    why = "this build has no CUDA support";
  } else {
    DeviceBackend& cuda = backend_for(DeviceType::cuda);
    if (cuda.device_count() > 0) {
      std::printf("%s: device cuda:0 (--device auto: a CUDA GPU is usable; --device cpu to use the CPU)\n", name);
      return Device::cuda(0);
    }
    why = "no usable CUDA GPU: " + cuda.unavailable_reason();
  }
  std::printf("%s: device cpu (--device auto: %s)\n", name, why.c_str());
  return Device::cpu();
}

}  // namespace minidl
