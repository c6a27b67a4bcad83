// tools/bench/machine.cpp — the roofline's peaks, the cache flush and the load calibration of
// tools/bench/machine.h.
//
// CPU peak compute is measured, not assumed: every OpenMP thread runs a loop of independent FMAs on the
// widest vector unit the CPU has (AVX-512, else AVX2, else scalar), chosen at run time. The estimate from
// the datasheet formula (FMA units x lanes x 2 x clock) is printed next to it, because the number of
// FMA units and the turbo clock are exactly what a formula has to guess. CPU bandwidth is a 256 MiB
// copy split across the threads. A GPU's peaks come from its backend (device properties or datasheet,
// cuda/backend.cu), and its copy is measured too.
#include "tools/bench/machine.h"

#include <immintrin.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/block_cache.h"
#include "core/cpu_load.h"
#include "core/error.h"
#include "core/tensor.h"
#ifdef MINIDL_WITH_CUDA
#include "cuda/allocator.h"
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

namespace minidl {
namespace bench {

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int cpu_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// ---------------------------------------------------------------- the FMA loop
// acc = acc * a + b on independent registers: enough of them in flight (16 x 4-cycle latency over two
// FMA units needs 8) that the loop runs at the FMA units' throughput. The result depends on every FMA,
// so the compiler keeps them all.
__attribute__((target("avx512f"))) float fma_loop_avx512(int64_t iterations) {
  __m512 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  __m512 sum = acc[0];
  for (int i = 1; i < 16; ++i) sum = _mm512_add_ps(sum, acc[i]);
  float lanes[16];
  _mm512_storeu_ps(lanes, sum);
  float total = 0;
  for (float v : lanes) total += v;
  return total;
}

__attribute__((target("avx2,fma"))) float fma_loop_avx2(int64_t iterations) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(0.001f * static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  float lanes[8];
  __m256 sum = acc[0];
  for (int i = 1; i < 12; ++i) sum = _mm256_add_ps(sum, acc[i]);
  _mm256_storeu_ps(lanes, sum);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3] + lanes[4] + lanes[5] + lanes[6] + lanes[7];
}

float fma_loop_scalar(int64_t iterations) {
  float acc[8];
  for (int i = 0; i < 8; ++i) acc[i] = 0.001f * static_cast<float>(i);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 8; ++i) acc[i] = acc[i] * 0.999999f + 1e-7f;
  return acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];
}

struct FmaUnit {
  const char* name;
  int lanes;                   // float32 lanes of one vector
  double flops_per_iteration;  // per thread
  float (*loop)(int64_t);
};

FmaUnit widest_fma_unit() {
  if (__builtin_cpu_supports("avx512f")) return {"AVX-512", 16, 16 * 16 * 2, fma_loop_avx512};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {"AVX2", 8, 12 * 8 * 2, fma_loop_avx2};
  return {"scalar", 1, 8 * 2, fma_loop_scalar};
}

volatile float fma_sink = 0;  // keeps the loops' results alive

// Seconds for every thread to run `iterations` of the FMA loop at once.
double time_fma_loop(const FmaUnit& unit, int threads, int64_t iterations) {
  const double start = now_seconds();
  float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
  total += unit.loop(iterations);
  const double seconds = now_seconds() - start;
  fma_sink = total;
  return seconds;
}

constexpr int64_t kFmaIterations = 1 << 21;  // ~1 GFLOP per thread with AVX-512: ~5 ms at 230 GFLOP/s

// ---------------------------------------------------------------- /proc
std::string cpuinfo_field(const std::string& field) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, field.size(), field) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  return "";
}

// The load line of the report, with core/cpu_load.h's warning when the threads exceed the free cores.
std::string load_average() {
  const CpuLoad load = read_cpu_load();
  const std::string warning = oversubscription_warning(load);
  return describe_load(load) + (warning.empty() ? "" : " -- WARNING: " + warning);
}

size_t l2_bytes() {
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return l2 > 0 ? static_cast<size_t>(l2) : size_t(1) << 20;
}

// ---------------------------------------------------------------- copies
constexpr size_t kCpuCopyBytes = size_t(256) << 20;
constexpr int64_t kGpuCopyFloats = int64_t(128) << 20;  // 512 MiB

// Best of three 256 MiB copies split across the threads, in bytes read + written per second.
double measure_cpu_copy(int threads) {
  std::vector<char> from(kCpuCopyBytes, 1), to(kCpuCopyBytes, 0);
  double best = 0;
  for (int run = 0; run < 3; ++run) {
    const double start = now_seconds();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; ++t) {
      const size_t lo = kCpuCopyBytes * t / threads, hi = kCpuCopyBytes * (t + 1) / threads;
      std::memcpy(to.data() + lo, from.data() + lo, hi - lo);
    }
    best = std::max(best, 2.0 * kCpuCopyBytes / (now_seconds() - start));
  }
  return best;
}

// Seconds of one 512 MiB device-to-device copy, on the device's clock.
double time_device_copy(Device d, const Tensor& from, const Tensor& to) {
  return backend_for(d.type).time_on_device([&] { copy_(to, from); }, d.index);
}

// The CPU's roofline peaks from the measurements, and how they were found.
void describe_cpu_peaks(MachineInfo& m) {
  const FmaUnit unit = widest_fma_unit();
  const double mhz = std::atof(cpuinfo_field("cpu MHz").c_str());
  const double estimate = 2.0 * unit.lanes * 2 * mhz * 1e6;  // per core, assuming two FMA units
  m.spec.peak_flops = m.measured_flops;
  m.spec.peak_bytes_per_second = m.measured_bandwidth;
  char buf[640];
  std::snprintf(buf, sizeof(buf),
                "peak %.1f GFLOP/s measured by an %s FMA loop on %d thread(s), %.1f per thread (the best run); the "
                "formula for comparison: 2 FMA units x %d lanes x 2 x %.2f GHz (cpu MHz of /proc/cpuinfo, no turbo) = "
                "%.1f GFLOP/s per core; bandwidth %.1f GB/s measured by a %zu MiB copy on %d thread(s) (read + write)",
                m.measured_flops * 1e-9, unit.name, m.threads, m.measured_flops * 1e-9 / m.threads, unit.lanes,
                mhz * 1e-3, estimate * 1e-9, m.measured_bandwidth * 1e-9, kCpuCopyBytes >> 20, m.threads);
  m.spec.how = buf;
}

}  // namespace

std::string cpu_model_name() { return cpuinfo_field("model name"); }

FreeMemory free_memory(Device d) {
  FreeMemory m;
  if (!d.is_cpu()) {
#ifdef MINIDL_WITH_CUDA
    m.bytes = static_cast<double>(cuda_memory_available(d.index));
    m.how = str_cat("free on ", d.str(), " (the driver's free memory, the allocator's cache, MINIDL_CUDA_MEMORY_LIMIT)");
#else
    m.bytes = 0;
    m.how = str_cat("on ", d.str(), " (this build has no CUDA)");
#endif
    return m;
  }
  // MemAvailable: what the kernel can give without swapping; the physical memory when /proc says nothing.
  std::ifstream in("/proc/meminfo");
  std::string line;
  double kib = 0;
  while (std::getline(in, line))
    if (std::sscanf(line.c_str(), "MemAvailable: %lf kB", &kib) == 1) {
      m.bytes = kib * 1024;
      m.how = "available on the CPU (MemAvailable of /proc/meminfo)";
      break;
    }
  if (m.how.empty()) {
    m.bytes = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
    m.how = "of physical memory on the CPU";
  }
  const size_t cgroup = cgroup_memory_limit();
  if (cgroup > 0 && static_cast<double>(cgroup) < m.bytes) {
    m.bytes = static_cast<double>(cgroup);
    m.how = "the process may use on the CPU (its cgroup's memory limit)";
  }
  return m;
}

MachineInfo describe_machine(Device d) {
  MachineInfo m;
  m.device = d;
  m.threads = cpu_threads();
  m.load = load_average();
  if (!d.is_cpu()) {
    m.spec = backend_for(d.type).spec(d.index);
    const TensorOptions o(DType::float32, d);
    const Tensor from = zeros({kGpuCopyFloats}, o), to = empty({kGpuCopyFloats}, o);
    double best = 1e30;
    for (int run = 0; run < 3; ++run) best = std::min(best, time_device_copy(d, from, to));
    m.measured_bandwidth = 2.0 * kGpuCopyFloats * 4 / best;
    m.spec.how += str_cat("; measured copy: ", m.measured_bandwidth * 1e-9, " GB/s (512 MiB, read + write)");
    return m;
  }
  const FmaUnit unit = widest_fma_unit();
  double best = 1e30;
  for (int run = 0; run < 5; ++run) best = std::min(best, time_fma_loop(unit, m.threads, kFmaIterations));
  m.measured_flops = m.threads * kFmaIterations * unit.flops_per_iteration / best;
  m.measured_bandwidth = measure_cpu_copy(m.threads);
  m.spec.name = cpuinfo_field("model name");
  m.spec.cache_bytes = l2_bytes();
  describe_cpu_peaks(m);
  return m;
}

bool revise_peak(MachineInfo& m, const Calibration& c) {
  if (!m.device.is_cpu() || c.best_rate <= m.measured_flops) return false;
  m.measured_flops = c.best_rate;
  describe_cpu_peaks(m);
  return true;
}

// ---------------------------------------------------------------- the flush
struct CacheFlush::Buffer {
  Device device;
  int threads = 1;
  size_t bytes_per_thread = 0;
  std::vector<char> host;  // CPU: threads x bytes_per_thread
  Tensor gpu;              // GPU: twice its L2
  unsigned char value = 0;
};

CacheFlush::CacheFlush(const MachineInfo& machine) : buffer_(std::make_unique<Buffer>()) {
  Buffer& b = *buffer_;
  b.device = machine.device;
  b.threads = machine.threads;
  if (machine.device.is_cpu()) {
    b.bytes_per_thread = 2 * std::max<size_t>(machine.spec.cache_bytes, size_t(1) << 20);
    b.host.assign(b.bytes_per_thread * b.threads, 0);
  } else {
    const size_t bytes = 2 * std::max<size_t>(machine.spec.cache_bytes, size_t(4) << 20);
    b.gpu = empty({static_cast<int64_t>(bytes / 4)}, TensorOptions(DType::float32, machine.device));
  }
}

CacheFlush::~CacheFlush() = default;

void CacheFlush::run() {
  Buffer& b = *buffer_;
  ++b.value;
  if (b.device.is_cpu()) {
    char* base = b.host.data();
    const size_t chunk = b.bytes_per_thread;
    const int value = b.value;
    // Each thread writes its own chunk: its own core's L2 is what it evicts.
#pragma omp parallel for num_threads(b.threads) schedule(static)
    for (int t = 0; t < b.threads; ++t) std::memset(base + t * chunk, value, chunk);
  } else {
    fill_(b.gpu, static_cast<double>(b.value));
  }
}

std::string CacheFlush::describe() const {
  const Buffer& b = *buffer_;
  if (b.device.is_cpu())
    return str_cat("each thread writes ", (b.bytes_per_thread >> 20), " MiB (twice its core's L2) before each timed call");
  return str_cat("writes ", (b.gpu.numel() * 4) >> 20, " MiB (twice the L2) on the device before each timed call");
}

// ---------------------------------------------------------------- calibration
Calibration calibrate(const MachineInfo& machine, int runs) {
  std::vector<double> times;
  if (machine.device.is_cpu()) {
    const FmaUnit unit = widest_fma_unit();
    for (int i = 0; i < runs; ++i) times.push_back(time_fma_loop(unit, machine.threads, kFmaIterations));
  } else {
    const TensorOptions o(DType::float32, machine.device);
    const Tensor from = zeros({kGpuCopyFloats}, o), to = empty({kGpuCopyFloats}, o);
    for (int i = 0; i < runs; ++i) times.push_back(time_device_copy(machine.device, from, to));
  }
  std::sort(times.begin(), times.end());
  Calibration c;
  c.median_s = times[times.size() / 2];
  c.spread = (times.back() - times.front()) / times.front();
  c.best_rate = machine.device.is_cpu()
                    ? machine.threads * kFmaIterations * widest_fma_unit().flops_per_iteration / times.front()
                    : 2.0 * kGpuCopyFloats * 4 / times.front();
  return c;
}

}  // namespace bench
}  // namespace minidl
