// tools/bench/machine.h — what `minidl bench` learns about the device before timing kernels: the peaks of
// the roofline (measured on the CPU, from the device's properties on a GPU), how to flush its cache
// between timed calls, and whether the machine is busy with other work (a calibration run repeated).
#pragma once
#include <memory>
#include <string>

#include "core/backend.h"
#include "core/device.h"

namespace minidl {
namespace bench {

struct MachineInfo {
  Device device;
  DeviceSpec spec;                // name, cache size, the roofline's peaks and how they were found
  int threads = 1;                // OpenMP threads the CPU kernels may use
  double measured_flops = 0;      // CPU: an FMA loop on every thread (FLOP/s); 0 on a GPU
  double measured_bandwidth = 0;  // a large copy on the device (bytes read + written per second)
  std::string load;               // "load average 0.52 0.61 0.70 on 2 cores"
};

// The CPU's "model name" in /proc/cpuinfo ("Intel(R) Xeon(R) Processor"), or "" when there is none.
std::string cpu_model_name();

// The bytes a new allocation on `d` may get now, and where the number comes from (for messages). The CPU:
// the smaller of MemAvailable (/proc/meminfo) and the memory limit of the process's cgroup
// (core/block_cache.h, the limit the CPU block cache is sized by). A GPU: the driver's free memory plus
// the allocator's cache, within MINIDL_CUDA_MEMORY_LIMIT (cuda/allocator.h cuda_memory_available).
struct FreeMemory {
  double bytes = 0;
  std::string how;  // "MemAvailable of /proc/meminfo", "the cgroup's memory limit", "cudaMemGetInfo ..."
};
FreeMemory free_memory(Device d);

// Measures and describes `d` (a second or so on the CPU: the FMA loop and a 256 MiB copy).
MachineInfo describe_machine(Device d);

// Evicts the operands of the last call from the device's caches: each CPU thread writes twice its core's
// L2 (the 2 MiB L2 of each core here; an L3 is not flushed: it may hold gigabytes on a server), a GPU
// writes twice its L2 (60 MiB on an H200).
class CacheFlush {
 public:
  CacheFlush(const MachineInfo& machine);
  ~CacheFlush();
  void run();
  std::string describe() const;

 private:
  struct Buffer;
  std::unique_ptr<Buffer> buffer_;
};

// A fixed workload timed several times (the CPU's FMA loop; a GPU's copy). spread = (max - min) / min: on
// an idle machine a few percent; more than kLoadedSpread means other work competes for the device.
struct Calibration {
  double median_s = 0;
  double spread = 0;
  double best_rate = 0;  // of the fastest run: FLOP/s (the CPU's FMA loop) or bytes/s (a GPU's copy)
};
Calibration calibrate(const MachineInfo& machine, int runs);

// On the CPU, raises the measured peak to a calibration's best FMA loop when that was faster (the peak
// is measured first, and a busy moment then would understate it). True when it changed.
bool revise_peak(MachineInfo& machine, const Calibration& c);
constexpr double kLoadedSpread = 0.10;

}  // namespace bench
}  // namespace minidl
