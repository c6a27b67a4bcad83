// cuda/backend.cu — the CUDA DeviceBackend: a caching allocator (cuda/allocator.h says how it works and
// why reuse is safe) and copies on the device's one stream.
//
// Block sizes: requests are rounded up to 512 B up to 1 MiB ("small") and to 2 MiB above ("large"). A
// request takes the smallest cached block that is large enough and not much larger: at most twice the
// rounded size for small blocks (few bytes at stake, and it saves cudaMalloc calls), at most 1/8 larger
// for large ones (bytes matter). Blocks are never split or merged: simple, and training loops ask for
// the same sizes every iteration, so they settle into exact reuse after the first one.
//
// cudaMalloc/cudaFree synchronise the device, which is why we keep blocks. cudaFree only happens when the
// cache is emptied (cuda_empty_cache, or to make room before an out-of-memory error).
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>

#include "core/backend.h"
#include "core/settings.h"
#include "cuda/allocator.h"
#include "cuda/cuda_common.h"
#include "cuda/register.h"

namespace minidl {

namespace cuda {
std::string format_bytes(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0) return str_cat(bytes, " B");
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f %s", v, units[u]);
  return buf;
}
}  // namespace cuda

namespace {

// The roofline peaks of a GPU from its properties: FP32 lanes per SM (a table by architecture, below) x
// SMs x 2 (FMA) x the peak SM clock, and bus width x 2 (double data rate) x the peak memory clock. For
// GPUs whose datasheet we state (H100/H200 SXM), the datasheet numbers are used and the derived ones shown.
DeviceSpec cuda_device_spec(int device) {
  const cudaDeviceProp& p = cuda::properties(device);
  int clock_khz = 0, memory_clock_khz = 0, bus_bits = 0;
  MINIDL_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  MINIDL_CUDA_CHECK(cudaDeviceGetAttribute(&memory_clock_khz, cudaDevAttrMemoryClockRate, device));
  MINIDL_CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
  // FP32 lanes ("CUDA cores") per SM: 64 on sm_60/70/75/80, 128 on sm_61, 86, 89, 90 and later.
  const int cc = p.major * 10 + p.minor;
  const int lanes = (cc == 60 || cc == 70 || cc == 72 || cc == 75 || cc == 80) ? 64 : 128;
  DeviceSpec s;
  s.name = p.name;
  s.cache_bytes = static_cast<size_t>(p.l2CacheSize);
  const double derived_flops = 2.0 * lanes * p.multiProcessorCount * clock_khz * 1e3;
  const double derived_bandwidth = 2.0 * memory_clock_khz * 1e3 * bus_bits / 8.0;
  s.peak_flops = derived_flops;
  s.peak_bytes_per_second = derived_bandwidth;
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "FP32 peak %d SMs x %d lanes x 2 x %.2f GHz = %.1f TFLOP/s (no tensor cores); bandwidth %d-bit bus x "
                "2 x %.3f GHz = %.2f TB/s (from device properties)",
                p.multiProcessorCount, lanes, clock_khz * 1e-6, derived_flops * 1e-12, bus_bits,
                memory_clock_khz * 1e-6, derived_bandwidth * 1e-12);
  s.how = buf;
  struct Datasheet {
    const char* name;
    double tflops, tb_per_s;
  };
  // NVIDIA's datasheets (SXM parts): FP32 without tensor cores, HBM bandwidth.
  for (const Datasheet& d : {Datasheet{"H200", 67.0, 4.8}, Datasheet{"H100 80GB HBM3", 67.0, 3.35}})
    if (std::string(p.name).find(d.name) != std::string::npos) {
      s.peak_flops = d.tflops * 1e12;
      s.peak_bytes_per_second = d.tb_per_s * 1e12;
      s.how = str_cat("datasheet ", d.name, " SXM: ", d.tflops, " TFLOP/s FP32, ", d.tb_per_s, " TB/s; derived: ", buf);
    }
  return s;
}

constexpr size_t kSmallStep = 512;
constexpr size_t kSmallMax = size_t(1) << 20;  // 1 MiB
constexpr size_t kLargeStep = size_t(2) << 20;  // 2 MiB
constexpr int kMaxDevices = 64;

size_t round_up(size_t n, size_t step) { return (n + step - 1) / step * step; }

// Zero-byte requests get a real (smallest) block, so every tensor has a valid, distinct pointer.
size_t rounded_size(size_t n) {
  if (n == 0) n = 1;
  return n <= kSmallMax ? round_up(n, kSmallStep) : round_up(n, kLargeStep);
}

// The largest cached block that may serve a request of `rounded` bytes (see the header comment).
size_t largest_acceptable(size_t rounded) { return rounded <= kSmallMax ? 2 * rounded : rounded + rounded / 8; }

struct DevicePool {
  std::mutex mutex;
  bool limit_initialised = false;
  std::string limit_source;                   // where the limit came from, for messages
  std::multimap<size_t, void*> free_blocks;   // size -> block, for best fit (the shared cache)
  std::unordered_map<void*, size_t> in_use;   // block -> size
  CudaMemoryStats stats;
  // Private pools (cuda/allocator.h): the active one (0: none), each block's pool, each pool's free blocks.
  int active_pool = 0;
  int last_pool_id = 0;
  std::unordered_map<void*, int> owner;                     // block -> pool id, for pool blocks only
  std::map<int, std::multimap<size_t, void*>> pool_free;    // pool id -> its free blocks (size -> block)
};

DevicePool& pool(int device) {
  MINIDL_CHECK(device >= 0 && device < kMaxDevices, "cuda allocator: device index ", device, " out of range");
  // Never destroyed: tensors freed from static destructors at exit must still find their pool.
  static DevicePool* pools = new DevicePool[kMaxDevices];
  return pools[device];
}

// Reads MINIDL_CUDA_MEMORY_LIMIT the first time a device allocates (unless an API call set a limit).
void init_limit(DevicePool& p, int device) {
  if (p.limit_initialised) return;
  const std::string env = settings::cuda_memory_limit.read();  // core/settings.h
  if (!env.empty()) {
    // A malformed value throws here, and again on the next allocation: it is never silently ignored.
    p.stats.limit = parse_cuda_memory_limit(env, cuda::properties(device).totalGlobalMem);
    p.limit_source = str_cat("MINIDL_CUDA_MEMORY_LIMIT=", env);
  }
  p.limit_initialised = true;
}

// Gives every cached block of the device back to the driver. Caller holds p.mutex.
void release_cached(DevicePool& p, int device) {
  if (p.free_blocks.empty()) return;
  cuda::set_device(device);
  // Blocks in the cache may still be read by queued work of the stream; wait for it.
  MINIDL_CUDA_CHECK(cudaStreamSynchronize(cuda::stream(device)));
  for (const auto& block : p.free_blocks) {
    MINIDL_CUDA_CHECK(cudaFree(block.second));
    p.stats.cached -= block.first;  // private pools' free blocks stay cached
  }
  p.free_blocks.clear();
}

// Takes a block of at least `rounded` bytes (best fit) from `blocks` (the shared cache or a private pool's
// free list), or returns nullptr. Caller holds p.mutex.
void* take_from(DevicePool& p, std::multimap<size_t, void*>& blocks, size_t rounded) {
  auto it = blocks.lower_bound(rounded);
  if (it == blocks.end() || it->first > largest_acceptable(rounded)) return nullptr;
  const size_t size = it->first;
  void* ptr = it->second;
  blocks.erase(it);
  p.stats.cached -= size;
  p.in_use[ptr] = size;
  p.stats.in_use += size;
  if (p.stats.in_use > p.stats.peak_in_use) p.stats.peak_in_use = p.stats.in_use;
  ++p.stats.cache_hits;
  return ptr;
}

// A cached block for a request: while a private pool is active, from its free list first, then from the
// shared cache (the block then joins the pool). Caller holds p.mutex.
void* take_cached(DevicePool& p, size_t rounded) {
  if (p.active_pool == 0) return take_from(p, p.free_blocks, rounded);
  void* ptr = take_from(p, p.pool_free[p.active_pool], rounded);
  if (ptr == nullptr && (ptr = take_from(p, p.free_blocks, rounded)) != nullptr) p.owner[ptr] = p.active_pool;
  return ptr;
}

bool within_limit(const DevicePool& p, size_t rounded) {
  return p.stats.limit == 0 || p.stats.in_use + p.stats.cached + rounded <= p.stats.limit;
}

// `cached` is what the cache held when the request came (it has been released since, to retry).
[[noreturn]] void throw_out_of_memory(DevicePool& p, int device, size_t requested, size_t rounded, size_t cached,
                                      const std::string& cause) {
  OutOfMemoryInfo info;
  info.device = str_cat("cuda:", device);
  info.requested = requested;
  info.in_use = p.stats.in_use;
  info.cached = cached;
  info.limit = p.stats.limit;
  size_t total_bytes = 0;
  std::string device_memory;
  if (cudaSetDevice(device) == cudaSuccess && cudaMemGetInfo(&info.device_free, &total_bytes) == cudaSuccess)
    device_memory = str_cat("; the device has ", cuda::format_bytes(info.device_free), " free of ",
                            cuda::format_bytes(total_bytes));
  else
    cudaGetLastError();  // clear the error so later launch checks do not report it
  const std::string limit =
      p.stats.limit == 0
          ? std::string("no limit set")
          : str_cat("limit ", cuda::format_bytes(p.stats.limit), " (",
                    p.limit_source.empty() ? std::string("set_cuda_memory_limit") : p.limit_source, ")");
  throw OutOfMemoryError(str_cat(info.device, ": out of memory: cannot allocate ", cuda::format_bytes(requested),
                                 " (", requested, " bytes requested, ", rounded, " rounded); ", cause,
                                 ". In use by minidl: ", cuda::format_bytes(p.stats.in_use), ", cached: ",
                                 cuda::format_bytes(cached), " (released to retry), ", limit, device_memory,
                                 ". Try a smaller batch size, or raise MINIDL_CUDA_MEMORY_LIMIT."),
                         info);
}

class CudaBackend final : public DeviceBackend {
 public:
  void* allocate(size_t nbytes, int device) override {
    DevicePool& p = pool(device);
    std::lock_guard<std::mutex> lock(p.mutex);
    init_limit(p, device);
    const size_t rounded = rounded_size(nbytes);
    if (void* ptr = take_cached(p, rounded)) return ptr;

    // A new block. Over the limit, or refused by the driver: release the cache and try once more.
    const size_t cached_before = p.stats.cached;
    std::string cause;
    for (int attempt = 0; attempt < 2; ++attempt) {
      // Releasing the cache waits for the stream, which a graph capture forbids: then fail at once.
      if (attempt == 1 && p.active_pool != 0) break;
      if (attempt == 1) release_cached(p, device);
      if (!within_limit(p, rounded)) {
        cause = "the allocation would pass the memory limit";
        continue;
      }
      cuda::set_device(device);
      void* ptr = nullptr;
      const cudaError_t err = cudaMalloc(&ptr, rounded);
      if (err == cudaSuccess) {
        ++p.stats.malloc_calls;
        if (p.active_pool != 0) p.owner[ptr] = p.active_pool;
        p.in_use[ptr] = rounded;
        p.stats.in_use += rounded;
        if (p.stats.in_use > p.stats.peak_in_use) p.stats.peak_in_use = p.stats.in_use;
        return ptr;
      }
      cudaGetLastError();  // an out-of-memory error is not sticky; clear it so launch checks do not see it
      if (err != cudaErrorMemoryAllocation)
        cuda::throw_cuda_error("CUDA", "cudaMalloc", __FILE__, __LINE__, cudaGetErrorString(err));
      cause = str_cat("cudaMalloc failed: ", cudaGetErrorString(err));
    }
    throw_out_of_memory(p, device, nbytes, rounded, cached_before, cause);
  }

  // Called from Storage's destructor: must not throw.
  void deallocate(void* ptr, size_t, int device) override {
    if (ptr == nullptr) return;
    DevicePool& p = pool(device);
    std::lock_guard<std::mutex> lock(p.mutex);
    auto it = p.in_use.find(ptr);
    if (it == p.in_use.end()) {
      std::fprintf(stderr, "minidl: cuda:%d: freeing a pointer the allocator does not know (%p); ignored\n", device,
                   ptr);
      return;
    }
    const size_t size = it->second;
    p.in_use.erase(it);
    p.stats.in_use -= size;
    p.stats.cached += size;
    // A block freed while a pool is active may still be used by the graph being captured: it joins the pool.
    if (p.active_pool != 0) p.owner.emplace(ptr, p.active_pool);
    auto owned = p.owner.find(ptr);
    if (owned != p.owner.end())
      p.pool_free[owned->second].emplace(size, ptr);
    else
      p.free_blocks.emplace(size, ptr);
  }

  // Synchronous for the host: the stream is drained before returning, so host_dst is ready.
  void copy_to_host(void* host_dst, const void* src, size_t nbytes, int device) override {
    if (nbytes == 0) return;
    cuda::set_device(device);
    cudaStream_t s = cuda::stream(device);
    MINIDL_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, nbytes, cudaMemcpyDeviceToHost, s));
    MINIDL_CUDA_CHECK(cudaStreamSynchronize(s));
  }

  // From pageable host memory (what the CPU backend allocates) cudaMemcpyAsync returns once the bytes are
  // staged in the driver's buffer, so the caller may free or change host_src right after the call. From
  // page-locked memory (Tensor::pin_memory) it returns at once and the copy runs in stream order: the
  // caller may release host_src (the pinned cache reuses it only after the copy), not change it.
  void copy_from_host(void* dst, const void* host_src, size_t nbytes, int device) override {
    if (nbytes == 0) return;
    cuda::set_device(device);
    MINIDL_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, nbytes, cudaMemcpyHostToDevice, cuda::stream(device)));
  }

  // Page-locked host memory from the cache of cuda/pinned_host.cu.
  void* allocate_pinned_host(size_t nbytes) override { return cuda::allocate_pinned_host(nbytes); }
  void deallocate_pinned_host(void* ptr) override { cuda::deallocate_pinned_host(ptr); }

  void copy_on_device(void* dst, const void* src, size_t nbytes, int device) override {
    if (nbytes == 0) return;
    cuda::set_device(device);
    MINIDL_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, cuda::stream(device)));
  }

  void synchronize(int device) override {
    cuda::set_device(device);
    MINIDL_CUDA_CHECK(cudaDeviceSynchronize());
  }

  // Events recorded on the device's one stream around the work: the GPU's own time, launches excluded.
  double time_on_device(const std::function<void()>& work, int device) override {
    cuda::set_device(device);
    cudaStream_t s = cuda::stream(device);
    cudaEvent_t start = nullptr, stop = nullptr;
    MINIDL_CUDA_CHECK(cudaEventCreate(&start));
    MINIDL_CUDA_CHECK(cudaEventCreate(&stop));
    float ms = 0;
    try {
      MINIDL_CUDA_CHECK(cudaEventRecord(start, s));
      work();
      MINIDL_CUDA_CHECK(cudaEventRecord(stop, s));
      MINIDL_CUDA_CHECK(cudaEventSynchronize(stop));
      MINIDL_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    } catch (...) {
      cudaEventDestroy(start);
      cudaEventDestroy(stop);
      throw;
    }
    MINIDL_CUDA_CHECK(cudaEventDestroy(start));
    MINIDL_CUDA_CHECK(cudaEventDestroy(stop));
    return ms * 1e-3;
  }

  DeviceSpec spec(int device) override { return cuda_device_spec(device); }

  int device_count() override {
    probe();
    return count_;
  }

  std::string unavailable_reason() override {
    probe();
    return reason_;
  }

 private:
  // Asks the runtime once how many devices there are; on failure explains why none is usable.
  void probe() {
    std::lock_guard<std::mutex> lock(probe_mutex_);
    if (probed_) return;
    probed_ = true;
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err == cudaSuccess && count > 0) {
      count_ = count;
      return;
    }
    cudaGetLastError();
    count_ = 0;
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    const auto version = [](int v) { return str_cat(v / 1000, ".", (v % 1000) / 10); };
    const std::string detail =
        err == cudaSuccess ? std::string("cudaGetDeviceCount found 0 devices")
                           : str_cat(cudaGetErrorName(err), ": ", cudaGetErrorString(err));
    if (err == cudaErrorInsufficientDriver && driver == 0)
      reason_ = str_cat("no NVIDIA driver found (the CUDA driver library libcuda.so could not be loaded; ", detail,
                        ")");
    else if (err == cudaErrorInsufficientDriver)
      reason_ = str_cat("the NVIDIA driver is too old: it supports CUDA ", version(driver),
                        ", this build needs CUDA ", version(runtime), " (", detail, ")");
    else if (err == cudaErrorNoDevice || err == cudaSuccess)
      reason_ = str_cat("no CUDA-capable device found (", detail, ")");
    else
      reason_ = str_cat("the CUDA runtime cannot use the GPU (", detail, ")");
    if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"))
      reason_ += str_cat("; note CUDA_VISIBLE_DEVICES='", visible, "'");
  }

  std::mutex probe_mutex_;
  bool probed_ = false;
  int count_ = 0;
  std::string reason_;
};

}  // namespace

CudaMemoryStats cuda_memory_stats(int device) {
  DevicePool& p = pool(device);
  std::lock_guard<std::mutex> lock(p.mutex);
  return p.stats;
}

void cuda_empty_cache() {
  for (int d = 0; d < kMaxDevices; ++d) {
    DevicePool& p = pool(d);
    std::lock_guard<std::mutex> lock(p.mutex);
    release_cached(p, d);
  }
}

void set_cuda_memory_limit(int device, size_t bytes) {
  DevicePool& p = pool(device);
  std::lock_guard<std::mutex> lock(p.mutex);
  p.limit_initialised = true;  // the API call wins over the environment
  p.stats.limit = bytes;
  p.limit_source.clear();
}

void reset_cuda_peak_memory(int device) {
  DevicePool& p = pool(device);
  std::lock_guard<std::mutex> lock(p.mutex);
  p.stats.peak_in_use = p.stats.in_use;
}

size_t cuda_memory_available(int device) {
  DevicePool& p = pool(device);
  std::lock_guard<std::mutex> lock(p.mutex);
  init_limit(p, device);
  size_t free_bytes = 0, total_bytes = 0;
  cuda::set_device(device);
  MINIDL_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const size_t available = free_bytes + p.stats.cached;
  if (p.stats.limit == 0) return available;
  const size_t under_limit = p.stats.limit > p.stats.in_use ? p.stats.limit - p.stats.in_use : 0;
  return available < under_limit ? available : under_limit;
}

int cuda_begin_private_pool(int device) {
  DevicePool& p = pool(device);
  std::lock_guard<std::mutex> lock(p.mutex);
  MINIDL_CHECK(p.active_pool == 0, "cuda:", device, ": a private memory pool (", p.active_pool,
               ") is already active: one graph capture at a time per device");
  p.active_pool = ++p.last_pool_id;
  p.pool_free[p.active_pool];  // an empty free list
  return p.active_pool;
}

void cuda_end_private_pool(int device) {
  DevicePool& p = pool(device);
  std::lock_guard<std::mutex> lock(p.mutex);
  p.active_pool = 0;
}

void cuda_release_private_pool(int device, int pool_id) {
  DevicePool& p = pool(device);
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.active_pool == pool_id) p.active_pool = 0;
  auto it = p.pool_free.find(pool_id);
  if (it == p.pool_free.end()) return;
  // The graph may still be running: its blocks join the shared cache only after the stream has drained.
  cuda::set_device(device);
  MINIDL_CUDA_CHECK(cudaStreamSynchronize(cuda::stream(device)));
  for (const auto& block : it->second) p.free_blocks.insert(block);
  p.pool_free.erase(it);
  // Blocks of the pool still in use join the shared cache when they are freed.
  for (auto o = p.owner.begin(); o != p.owner.end();)
    o = o->second == pool_id ? p.owner.erase(o) : std::next(o);
}

DeviceBackend* make_cuda_backend() {
  // Never destroyed, like the pools: storage freed during static destruction still needs it.
  static CudaBackend* backend = new CudaBackend();
  return backend;
}

}  // namespace minidl
