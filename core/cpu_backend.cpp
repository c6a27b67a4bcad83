// core/cpu_backend.cpp — the CPU's memory: 64-byte aligned blocks (one cache line, and enough for AVX-512
// loads), copies with memcpy.
#include <cstdlib>
#include <cstring>

#include "core/backend.h"
#include "core/error.h"

namespace minidl {

class CpuBackend final : public DeviceBackend {
 public:
  void* allocate(size_t nbytes, int) override {
    constexpr size_t kAlign = 64;
    const size_t rounded = (nbytes + kAlign - 1) / kAlign * kAlign;
    void* p = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
    if (!p) throw OutOfMemoryError(str_cat("cpu: cannot allocate ", nbytes, " bytes"));
    return p;
  }
  void deallocate(void* ptr, size_t, int) override { std::free(ptr); }
  void copy_to_host(void* dst, const void* src, size_t n, int) override { std::memcpy(dst, src, n); }
  void copy_from_host(void* dst, const void* src, size_t n, int) override { std::memcpy(dst, src, n); }
  void copy_on_device(void* dst, const void* src, size_t n, int) override { std::memcpy(dst, src, n); }
  void synchronize(int) override {}
  int device_count() override { return 1; }
  std::string unavailable_reason() override { return ""; }
};

DeviceBackend* make_cpu_backend() {
  static CpuBackend backend;
  return &backend;
}

}  // namespace minidl
