// core/backend.h — what a device must provide to the core: memory and copies.
//
// The CPU backend is always registered. The CUDA backend registers itself from cuda/ when the build has
// CUDA (see core/registry_init.cpp); without it, asking for a cuda tensor is an error that says why.
// Kernels never go through this interface: they are found through the dispatch table (core/dispatch.h).
#pragma once
#include <cstddef>
#include <functional>
#include <string>

#include "core/device.h"

namespace minidl {

// What a benchmark needs to know about a device (`minidl bench`, tools/bench/): the cache a timed call
// must not find warm and the peaks of its roofline. 0 means unknown; `how` says where each number came from.
struct DeviceSpec {
  std::string name;
  size_t cache_bytes = 0;            // the last cache level a flush must evict (a GPU's L2)
  double peak_flops = 0;             // float32 FLOP/s (an FMA counts 2), without tensor cores
  double peak_bytes_per_second = 0;  // memory bandwidth
  std::string how;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  // Returns memory for nbytes (nbytes may be 0). Throws OutOfMemoryError when it cannot.
  virtual void* allocate(size_t nbytes, int device_index) = 0;
  virtual void deallocate(void* ptr, size_t nbytes, int device_index) = 0;

  // Page-locked ("pinned") host memory, what Tensor::pin_memory allocates: copies from it to this backend's
  // devices do not make the host wait for the device's queue. nullptr from a backend that has none (the
  // default, and the CPU's). A released block is reused only after the copies queued before its release
  // have read it.
  virtual void* allocate_pinned_host(size_t nbytes);
  virtual void deallocate_pinned_host(void* ptr);

  // Copies of raw bytes. "host" means CPU memory. Copies to the host are complete when they return; the
  // others may be asynchronous with respect to the host, ordered with the device's kernels. A copy from
  // ordinary host memory has read it when it returns; one from pinned memory may read it later, so the
  // source must not be changed until the device has run the copy (synchronize), only released.
  virtual void copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index) = 0;
  virtual void copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index) = 0;
  virtual void copy_on_device(void* dst, const void* src, size_t nbytes, int device_index) = 0;

  // Waits until all work queued on the device is done.
  virtual void synchronize(int device_index) = 0;

  // For benchmarks: the seconds the device spends on the work `work` queues, measured on the device's own
  // clock where it has one. The default waits for queued work, then reads the host clock around work()
  // and a synchronisation (exact for the CPU); the CUDA backend records events on its stream instead,
  // so the launch cost on the host is not counted.
  virtual double time_on_device(const std::function<void()>& work, int device_index);
  // For benchmarks: what the backend knows of the device (the default knows nothing; tools/bench measures
  // the CPU itself).
  virtual DeviceSpec spec(int device_index);

  // How many devices of this type are usable; 0 with reason() saying why.
  virtual int device_count() = 0;
  virtual std::string unavailable_reason() = 0;
};

// Registration (done once by core/registry_init.cpp). Looking up a type that has no backend throws an
// Error saying that this build has no kernels for it.
void register_backend(DeviceType type, DeviceBackend* backend);
DeviceBackend& backend_for(DeviceType type);
bool has_backend(DeviceType type);

// Throws a clear Error when `d` cannot be used (no backend in this build, no driver, index too large).
void check_device_usable(const Device& d);

// ---- environment variables with values to parse, checked up front so a typo fails before any work.

// Parses a GPU memory limit: plain bytes ("4000000000"), with a binary suffix K/M/G/T ("512M", "4G",
// "1.5G"; a trailing "B"/"iB" is accepted), or a percentage of `total_bytes` ("50%"). Throws an Error
// naming MINIDL_CUDA_MEMORY_LIMIT and the text when it cannot. (The CUDA allocator's limit:
// cuda/allocator.h; parsed here so a build without CUDA checks the variable too.)
size_t parse_cuda_memory_limit(const std::string& text, size_t total_bytes);
// For reports (`minidl info`): "none set", "MINIDL_CUDA_MEMORY_LIMIT=4G", or "INVALID: <the error>".
std::string describe_cuda_memory_limit_environment();
// Checks every MINIDL_* variable (core/settings.h), and applies MINIDL_KERNELS to the dispatch table (an
// unknown op or kernel is refused there). The programs call it before doing anything else.
void check_environment();

// "" when cuda:0 is usable; otherwise why not ("this build has no CUDA support", "no usable CUDA GPU: <the
// runtime's reason>"). What --device auto and `minidl compare` decide by.
std::string why_no_gpu();

// The device a program's --device flag names ("auto", "cpu", "cuda", "cuda:N"). "auto" picks cuda:0 when a
// GPU is usable and the CPU otherwise; the choice is printed as "<program>: device ...", without a GPU with
// a short reason the first time in a process (why_no_gpu()'s whole text is in `minidl info`, under CUDA).
Device choose_device(const std::string& flag, const std::string& program);

}  // namespace minidl
