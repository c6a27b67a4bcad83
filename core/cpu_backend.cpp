// core/cpu_backend.cpp — the CPU's memory: 64-byte aligned blocks (one cache line, enough for AVX-512
// loads), copies with memcpy.
//
// Large blocks are cached: a training step allocates the same activation and gradient sizes every
// step, and returning tens of megabytes to the OS only to fault them back in a few milliseconds later
// (glibc serves big requests with mmap/munmap) costs more than the arithmetic on them. Freed blocks of
// at least kCacheMin bytes are kept in a free list keyed by their (rounded) size and handed out again
// for the same size; at most kCacheMax bytes are kept.
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "core/backend.h"
#include "core/error.h"

namespace minidl {

class CpuBackend final : public DeviceBackend {
 public:
  void* allocate(size_t nbytes, int) override {
    const size_t size = rounded(nbytes);
    if (size >= kCacheMin) {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_blocks_.find(size);
      if (it != free_blocks_.end()) {
        void* p = it->second;
        free_blocks_.erase(it);
        cached_bytes_ -= size;
        return p;
      }
    }
    void* p = std::aligned_alloc(kAlign, size);
    if (!p) {
      OutOfMemoryInfo info;
      info.device = "cpu";
      info.requested = nbytes;
      throw OutOfMemoryError(str_cat("cpu: cannot allocate ", nbytes, " bytes"), info);
    }
    return p;
  }

  void deallocate(void* ptr, size_t nbytes, int) override {
    const size_t size = rounded(nbytes);
    if (size >= kCacheMin) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_bytes_ + size <= kCacheMax) {
        free_blocks_.emplace(size, ptr);
        cached_bytes_ += size;
        return;
      }
    }
    std::free(ptr);
  }

  void copy_to_host(void* dst, const void* src, size_t n, int) override { std::memcpy(dst, src, n); }
  void copy_from_host(void* dst, const void* src, size_t n, int) override { std::memcpy(dst, src, n); }
  void copy_on_device(void* dst, const void* src, size_t n, int) override { std::memcpy(dst, src, n); }
  void synchronize(int) override {}
  int device_count() override { return 1; }
  std::string unavailable_reason() override { return ""; }

 private:
  static constexpr size_t kAlign = 64;
  static constexpr size_t kCacheMin = size_t(1) << 16;  // 64 KiB
  static constexpr size_t kCacheMax = size_t(1) << 30;  // 1 GiB kept at most
  static constexpr size_t kPage = 4096;

  // Small sizes round to the alignment; cached sizes to whole pages so near sizes share blocks.
  static size_t rounded(size_t nbytes) {
    if (nbytes == 0) return kAlign;
    const size_t unit = nbytes >= kCacheMin ? kPage : kAlign;
    return (nbytes + unit - 1) / unit * unit;
  }

  std::mutex mutex_;
  std::multimap<size_t, void*> free_blocks_;
  size_t cached_bytes_ = 0;
};

// Never destroyed: tensors held by static objects may be freed after main() returns.
DeviceBackend* make_cpu_backend() {
  static CpuBackend* backend = new CpuBackend();
  return backend;
}

}  // namespace minidl
