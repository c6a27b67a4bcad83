// core/device.h — where a tensor's memory lives: the CPU or one CUDA GPU.
//
// The tensor carries its device; there is no global "mode". DeviceGuard sets the default device that
// factories use inside a scope, like `with tf.device('/GPU:0')`.
#pragma once
#include <string>

namespace minidl {

enum class DeviceType { cpu = 0, cuda = 1 };
constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static Device cpu() { return {DeviceType::cpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::cuda, index}; }

  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }

  // "cpu", "cuda:0"
  std::string str() const;
  // Parses "cpu", "cuda", "cuda:1", "gpu" (alias of cuda:0). Throws minidl::Error on anything else.
  static Device parse(const std::string& text);
};

const char* device_type_name(DeviceType t);

// The device factories use when none is given (cpu unless a DeviceGuard is active on this thread).
Device default_device();

class DeviceGuard {
 public:
  explicit DeviceGuard(Device d);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  Device previous_;
};

}  // namespace minidl
