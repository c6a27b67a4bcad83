#include "core/backend.h"

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "core/dispatch.h"
#include "core/numerics.h"
#include "core/settings.h"

namespace minidl {

void ensure_registered();  // core/registry_init.cpp

namespace {
DeviceBackend* backends[kNumDeviceTypes] = {nullptr, nullptr};
}

double DeviceBackend::time_on_device(const std::function<void()>& work, int device_index) {
  synchronize(device_index);
  const auto start = std::chrono::steady_clock::now();
  work();
  synchronize(device_index);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

DeviceSpec DeviceBackend::spec(int) { return {}; }

void* DeviceBackend::allocate_pinned_host(size_t) { return nullptr; }
void DeviceBackend::deallocate_pinned_host(void*) {}

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

std::string why_no_gpu() {
  if (!has_backend(DeviceType::cuda)) return "this build has no CUDA support";
  DeviceBackend& cuda = backend_for(DeviceType::cuda);
  if (cuda.device_count() > 0) return "";
  return "no usable CUDA GPU: " + cuda.unavailable_reason();
}

Device choose_device(const std::string& flag, const std::string& program) {
  const char* name = program.c_str();
  if (flag != "auto") {
    const Device d = Device::parse(flag);
    check_device_usable(d);  // a clear error when the build or the machine has no such device
    std::printf("%s: device %s (--device %s)\n", name, d.str().c_str(), flag.c_str());
    return d;
  }
  const std::string why = why_no_gpu();
  if (why.empty()) {
    std::printf("%s: device cuda:0 (--device auto: a CUDA GPU is usable; --device cpu to use the CPU)\n", name);
    return Device::cuda(0);
  }
  // The reason can be a paragraph (driver and runtime versions, the CUDA error): `minidl info` prints it
  // under CUDA, so a run says it once, short, and points there.
  static std::atomic<bool> said_why{false};
  const bool first = !said_why.exchange(true);
  const std::string short_why = has_backend(DeviceType::cuda) ? "no usable GPU" : "this build has no CUDA support";
  if (first)
    std::printf("%s: device cpu (--device auto: %s; `minidl info` says why)\n", name, short_why.c_str());
  else
    std::printf("%s: device cpu (--device auto)\n", name);
  return Device::cpu();
}

// ------------------------------------------------------------------ environment

size_t parse_cuda_memory_limit(const std::string& text, size_t total_bytes) {
  const std::string usage = str_cat("MINIDL_CUDA_MEMORY_LIMIT: cannot parse '", text,
                                    "'; expected bytes (4000000000), a size with a suffix (512M, 4G, 1.5G) or "
                                    "a percentage of the device memory (50%)");
  size_t pos = 0;
  while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  const size_t start = pos;
  while (pos < text.size() && (std::isdigit(static_cast<unsigned char>(text[pos])) || text[pos] == '.')) ++pos;
  MINIDL_CHECK(pos > start, usage);
  double number = 0;
  try {
    number = std::stod(text.substr(start, pos - start));
  } catch (const std::exception&) {
    throw Error(usage);
  }
  std::string suffix;
  for (; pos < text.size(); ++pos)
    if (!std::isspace(static_cast<unsigned char>(text[pos])))
      suffix += static_cast<char>(std::toupper(static_cast<unsigned char>(text[pos])));
  double bytes = 0;
  if (suffix == "%") {
    MINIDL_CHECK(number <= 100.0, usage, " (a percentage above 100)");
    bytes = number / 100.0 * static_cast<double>(total_bytes);
  } else {
    // Accept "G", "GB" and "GiB" alike, all binary (1G = 2^30 bytes).
    if (suffix.size() == 3 && suffix.substr(1) == "IB") suffix = suffix.substr(0, 1);
    if (suffix.size() == 2 && suffix[1] == 'B') suffix = suffix.substr(0, 1);
    double scale = 0;
    if (suffix.empty() || suffix == "B") scale = 1;
    else if (suffix == "K") scale = 1024.0;
    else if (suffix == "M") scale = 1024.0 * 1024.0;
    else if (suffix == "G") scale = 1024.0 * 1024.0 * 1024.0;
    else if (suffix == "T") scale = 1024.0 * 1024.0 * 1024.0 * 1024.0;
    MINIDL_CHECK(scale != 0, usage);
    bytes = number * scale;
  }
  MINIDL_CHECK(bytes >= 1.0 && bytes < 1.8e19, usage, " (out of range)");
  return static_cast<size_t>(bytes);
}

std::string describe_cuda_memory_limit_environment() {
  if (!settings::cuda_memory_limit.is_set()) return "none set";
  const std::string described = describe_setting(settings::cuda_memory_limit);
  if (described.rfind("INVALID", 0) == 0) return described;
  return str_cat("MINIDL_CUDA_MEMORY_LIMIT=", described);
}

void check_environment() {
  check_settings();
  // MINIDL_KERNELS names ops and kernels: the dispatch table, built here, applies it and refuses an
  // unknown op or kernel name, listing what exists.
  if (settings::kernels.is_set()) KernelRegistry::instance();
}

}  // namespace minidl
