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
// The bytes a new allocation of `device` may get now: the driver's free memory (cudaMemGetInfo) plus the
// cached blocks (released to serve a request that needs them), and no more than the limit less in_use.
size_t cuda_memory_available(int device);

// ---- private pools, for CUDA graphs (cuda/graph.h)
// A captured graph replays its kernels on the addresses they had at capture, so every block the graph
// touches must stay the graph's for as long as it may be replayed. While a private pool is active on a
// device (between begin and end), every allocation of that device is served from the pool (its own free
// blocks first, then the shared cache, then cudaMalloc) and the block becomes the pool's; a block freed
// while the pool is active becomes the pool's too (it was allocated before the capture, and the graph may
// still use it). A pool's blocks, when freed (during or after the capture), go back to the pool's free
// list, never to the shared cache, until the pool is released: then the pool's free blocks go to the
// shared cache (after the stream has drained), and its blocks still in use go there when they are freed.
// Every allocation of the device goes to the pool while it is active, from any thread.
int cuda_begin_private_pool(int device);  // returns the pool's id (> 0); one active pool per device
void cuda_end_private_pool(int device);   // stops routing allocations to the active pool
void cuda_release_private_pool(int device, int pool_id);

// parse_cuda_memory_limit (the syntax of MINIDL_CUDA_MEMORY_LIMIT) is in core/backend.h, so that a build
// without CUDA checks the variable too.

// ---- page-locked host memory (cuda/pinned_host.cu): what Tensor::pin_memory allocates
struct PinnedHostStats {
  size_t in_use = 0;              // bytes in blocks handed out (rounded to 4 KiB pages)
  size_t cached = 0;              // bytes in released blocks kept for reuse
  uint64_t host_alloc_calls = 0;  // cudaHostAlloc calls that succeeded
  uint64_t reuses = 0;            // requests served by a released block whose copies had all run
};
PinnedHostStats cuda_pinned_host_stats();

namespace cuda {
// "1.50 GiB", "512.0 KiB", "17 B": for messages and `minidl info`.
std::string format_bytes(size_t bytes);
// The pinned cache itself (the CUDA backend's allocate_pinned_host / deallocate_pinned_host).
void* allocate_pinned_host(size_t nbytes);
void deallocate_pinned_host(void* ptr);
}  // namespace cuda

}  // namespace minidl
