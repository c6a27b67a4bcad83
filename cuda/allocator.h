// cuda/allocator.h — the public face of the CUDA caching allocator (cuda/backend.cu): statistics, the
// cache, and the memory limit. Plain C++ (no CUDA headers), so tests and programs can include it.
//
// How the allocator works: requests are rounded up (512 B steps up to 1 MiB, then 2 MiB steps) and served
// from per-device free lists of earlier blocks (best fit) before asking cudaMalloc. Freed blocks go back
// to the free list, not to the driver. Reuse is safe without events because every kernel and copy of a
// device runs on its one stream: work queued after the free runs after the work that used the block.
//
// The limit (environment MINIDL_CUDA_MEMORY_LIMIT, or set_cuda_memory_limit) caps in_use + cached of a
// device. A request that would pass it, or that cudaMalloc refuses, first releases the cache and retries
// once, then throws minidl::OutOfMemoryError (core/error.h) with the numbers, in its message and in
// info(): requested, in use, cached (before the release), the device's free memory and the limit. A
// failed request changes nothing else, so a program can catch the error, free something or use a smaller
// batch, and continue.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/backend.h"

namespace minidl {

struct CudaMemoryStats {
  size_t in_use = 0;          // bytes in blocks handed out (rounded sizes)
  size_t cached = 0;          // bytes in free blocks kept for reuse
  size_t peak_in_use = 0;     // highest in_use since start (or the last reset_cuda_peak_memory)
  uint64_t malloc_calls = 0;  // cudaMalloc calls that succeeded
  uint64_t cache_hits = 0;    // requests served from the free lists
  size_t limit = 0;           // cap on in_use + cached; 0 = none
};

// Statistics of one device (all zero for a device the allocator never used).
CudaMemoryStats cuda_memory_stats(int device);
// Returns every cached block of every device to the driver (synchronises each device first).
void cuda_empty_cache();
// Sets the cap of in_use + cached for `device` in bytes; 0 removes it. Overrides MINIDL_CUDA_MEMORY_LIMIT.
void set_cuda_memory_limit(int device, size_t bytes);
// Sets peak_in_use to the current in_use.
void reset_cuda_peak_memory(int device);

// parse_cuda_memory_limit (the syntax of MINIDL_CUDA_MEMORY_LIMIT) is in core/backend.h, so that a build
// without CUDA checks the variable too.

namespace cuda {
// "1.50 GiB", "512.0 KiB", "17 B": for messages and `minidl info`.
std::string format_bytes(size_t bytes);
}  // namespace cuda

}  // namespace minidl
