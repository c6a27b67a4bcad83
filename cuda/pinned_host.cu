// cuda/pinned_host.cu — page-locked ("pinned") host memory for CPU tensors that are copied to a GPU
// (Tensor::pin_memory, core/tensor.h; the data loader's pin_memory option, nn/data.h), kept in a cache.
//
// Why pinned memory. A copy from ordinary (pageable) host memory cannot be done by the GPU's copy engine
// directly: the driver copies it into a page-locked buffer of its own, piece by piece, and the copy engine
// takes it from there. Each piece waits for the stream's earlier work, so cudaMemcpyAsync from pageable
// memory returns only when the kernels queued before it have run: the host waits for the GPU at every
// batch, and the GPU idles while the host prepares the next launch. From page-locked memory the copy
// engine reads the bytes itself: cudaMemcpyAsync returns at once and the copy runs in stream order.
//
// Why a cache. cudaHostAlloc and cudaFreeHost are slow (they map pages for the device; cudaFreeHost also
// waits for the device), and a training loop asks for the same batch sizes at every step. So freed
// blocks are kept and handed out again.
//
// When a block may be reused. Its last copy may still be queued when its tensor is released (that is the
// point: the host ran ahead). So the release records an event on the stream of every device this process
// uses, and the block is handed out again only once those events have completed: the copies queued
// before the release have read it. Releases during a CUDA graph capture on one of those streams cannot
// record a real event (it would become part of the graph): such blocks wait in `unrecorded` until a later
// call, outside the capture, records their events.
//
// Sizes: requests are rounded up to 4 KiB pages; a request takes the smallest ready free block that is
// large enough and at most 1/8 larger (a batch's tensors repeat exactly, so reuse is exact in practice).
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cuda/allocator.h"
#include "cuda/cuda_common.h"

namespace minidl {
namespace cuda {

namespace {

constexpr size_t kPage = 4096;

struct PinnedBlock {
  void* ptr = nullptr;
  size_t bytes = 0;
  std::vector<cudaEvent_t> events;  // recorded at its release, one per device in use; reusable when all done
};

struct PinnedCache {
  std::mutex mutex;
  std::multimap<size_t, PinnedBlock> free_blocks;  // by size
  std::vector<PinnedBlock> unrecorded;             // released during a capture: no events yet
  std::unordered_map<void*, size_t> in_use;        // ptr -> rounded bytes
  std::vector<cudaEvent_t> spare_events;           // completed events, recorded again at the next release
  PinnedHostStats stats;
};

PinnedCache& cache() {
  static PinnedCache* c = new PinnedCache;  // never destroyed: blocks may outlive static destructors
  return *c;
}

bool completed(const PinnedBlock& b) {
  for (cudaEvent_t e : b.events) {
    const cudaError_t st = cudaEventQuery(e);
    if (st == cudaErrorNotReady) return false;
    if (st != cudaSuccess) MINIDL_CUDA_CHECK(st);
  }
  return true;
}

cudaEvent_t take_event(PinnedCache& c) {
  if (!c.spare_events.empty()) {
    cudaEvent_t e = c.spare_events.back();
    c.spare_events.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  MINIDL_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

// Whether any device in use is capturing a CUDA graph on its stream now.
bool any_capture(const std::vector<int>& devices) {
  for (int d : devices) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    MINIDL_CUDA_CHECK(cudaStreamIsCapturing(stream(d), &status));
    if (status != cudaStreamCaptureStatusNone) return true;
  }
  return false;
}

// Records b's events on every device's stream and puts it on the free list (caller holds the mutex).
void record_and_free(PinnedCache& c, PinnedBlock b, const std::vector<int>& devices) {
  for (int d : devices) {
    set_device(d);
    cudaEvent_t e = take_event(c);
    MINIDL_CUDA_CHECK(cudaEventRecord(e, stream(d)));
    b.events.push_back(e);
  }
  c.free_blocks.emplace(b.bytes, std::move(b));
}

// Blocks released during a capture get their events now, if no capture is running (caller holds the mutex).
void record_unrecorded(PinnedCache& c, const std::vector<int>& devices) {
  if (c.unrecorded.empty() || any_capture(devices)) return;
  std::vector<PinnedBlock> waiting;
  waiting.swap(c.unrecorded);
  for (PinnedBlock& b : waiting) record_and_free(c, std::move(b), devices);
}

}  // namespace

void* allocate_pinned_host(size_t nbytes) {
  PinnedCache& c = cache();
  const size_t rounded = (std::max<size_t>(nbytes, 1) + kPage - 1) / kPage * kPage;
  std::lock_guard<std::mutex> lock(c.mutex);
  record_unrecorded(c, devices_with_stream());
  for (auto it = c.free_blocks.lower_bound(rounded); it != c.free_blocks.end() && it->first <= rounded + rounded / 8;
       ++it) {
    if (!completed(it->second)) continue;
    PinnedBlock b = std::move(it->second);
    c.free_blocks.erase(it);
    c.spare_events.insert(c.spare_events.end(), b.events.begin(), b.events.end());
    c.in_use[b.ptr] = b.bytes;
    c.stats.in_use += b.bytes;
    c.stats.cached -= b.bytes;
    ++c.stats.reuses;
    return b.ptr;
  }
  void* ptr = nullptr;
  const cudaError_t err = cudaHostAlloc(&ptr, rounded, cudaHostAllocPortable);
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state of this thread
    throw OutOfMemoryError(str_cat("pin_memory: cudaHostAlloc of ", format_bytes(rounded), " failed: ",
                                   cudaGetErrorString(err), " (", format_bytes(c.stats.in_use), " pinned in use, ",
                                   format_bytes(c.stats.cached), " cached)"));
  }
  c.in_use[ptr] = rounded;
  c.stats.in_use += rounded;
  ++c.stats.host_alloc_calls;
  return ptr;
}

void deallocate_pinned_host(void* ptr) {
  if (ptr == nullptr) return;
  PinnedCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.in_use.find(ptr);
  MINIDL_CHECK(it != c.in_use.end(), "pinned host memory: release of a block it did not hand out");
  PinnedBlock b;
  b.ptr = ptr;
  b.bytes = it->second;
  c.in_use.erase(it);
  c.stats.in_use -= b.bytes;
  c.stats.cached += b.bytes;
  const std::vector<int> devices = devices_with_stream();
  if (any_capture(devices)) {
    c.unrecorded.push_back(std::move(b));
    return;
  }
  record_unrecorded(c, devices);
  record_and_free(c, std::move(b), devices);
}

}  // namespace cuda

PinnedHostStats cuda_pinned_host_stats() {
  cuda::PinnedCache& c = cuda::cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.stats;
}

}  // namespace minidl
