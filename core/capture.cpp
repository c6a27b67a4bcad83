// core/capture.cpp — the per-device offset shift of a running CUDA graph capture (core/capture.h).
#include "core/capture.h"

#include <map>
#include <mutex>
#include <utility>

namespace minidl {

namespace {

std::mutex& shifts_mutex() {
  static std::mutex m;
  return m;
}

std::map<std::pair<int, int>, Tensor>& shifts() {
  static auto* m = new std::map<std::pair<int, int>, Tensor>();  // never destroyed: used at exit
  return *m;
}

std::pair<int, int> key(Device device) { return {static_cast<int>(device.type), device.index}; }

}  // namespace

Tensor capture_offset_shift(Device device) {
  std::lock_guard<std::mutex> lock(shifts_mutex());
  auto it = shifts().find(key(device));
  return it == shifts().end() ? Tensor() : it->second;
}

void set_capture_offset_shift(Device device, const Tensor& shift) {
  std::lock_guard<std::mutex> lock(shifts_mutex());
  if (shift.defined())
    shifts()[key(device)] = shift;
  else
    shifts().erase(key(device));
}

}  // namespace minidl
