// core/backend.h — what a device must provide to the core: memory and copies.
//
// The CPU backend is always registered. The CUDA backend registers itself from cuda/ when the build has
// CUDA (see core/registry_init.cpp); without it, asking for a cuda tensor is an error that says why.
// Kernels never go through this interface: they are found through the dispatch table (core/dispatch.h).
#pragma once
#include <cstddef>
#include <string>

#include "core/device.h"

namespace minidl {

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  // Returns memory for nbytes (nbytes may be 0). Throws OutOfMemoryError when it cannot.
  virtual void* allocate(size_t nbytes, int device_index) = 0;
  virtual void deallocate(void* ptr, size_t nbytes, int device_index) = 0;

  // Copies of raw bytes. "host" means ordinary CPU memory. Copies to the host are complete when they
  // return; the others may be asynchronous with respect to the host, ordered with the device's kernels.
  virtual void copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index) = 0;
  virtual void copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index) = 0;
  virtual void copy_on_device(void* dst, const void* src, size_t nbytes, int device_index) = 0;

  // Waits until all work queued on the device is done.
  virtual void synchronize(int device_index) = 0;

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
// Throws that Error when MINIDL_CUDA_MEMORY_LIMIT is set to something unparsable (whatever the device).
void check_cuda_memory_limit_environment();
// For reports (`minidl info`): "none set", "MINIDL_CUDA_MEMORY_LIMIT=4G", or "INVALID: <the error>".
std::string describe_cuda_memory_limit_environment();
// Checks every such variable: MINIDL_CUDA_MEMORY_LIMIT and MINIDL_CHECK_NUMERICS (core/numerics.h). The
// programs call it before doing anything else.
void check_environment();

// The device a program's --device flag names ("auto", "cpu", "cuda", "cuda:N"). "auto" picks cuda:0 when a
// GPU is usable and the CPU otherwise; the choice and its reason are printed as "<program>: device ...".
Device choose_device(const std::string& flag, const std::string& program);

}  // namespace minidl
