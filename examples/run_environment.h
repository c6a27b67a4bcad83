// examples/run_environment.h — what `train` and `bench` of both programs say before they measure
// anything: one line naming what the run measures with (device, precision, OpenMP threads, the machine's
// load), then a warning for each thing that makes the measurement mislead: more OpenMP threads than free
// cores on a CPU run (core/cpu_load.h), and a --kernel or MINIDL_KERNELS selection of a kernel that only
// a device the run does not use has (core/selection_devices.h).
#pragma once
#include <string>
#include <vector>

#include "core/device.h"

namespace examples {

// "strict FP32", "TF32 allowed" or "BF16 products (...)" (core/precision.h); the CPU is always strict.
std::string precision_text(minidl::Device device);

// "device cpu, strict FP32, 2 OpenMP thread(s); load average 0.52 0.61 0.70 on 2 cores".
std::string run_environment_line(minidl::Device device);

// The warnings above, one line each, without the program's name; none when all is well.
std::vector<std::string> run_environment_warnings(minidl::Device device, const std::vector<std::string>& kernel_flags);

// Prints "<program>: measured with <run_environment_line>" on stdout and "<program>: warning: ..." for each
// warning on stderr. `program` is "mnist train", "captcha bench", ...
void print_run_environment(const std::string& program, minidl::Device device,
                           const std::vector<std::string>& kernel_flags);

}  // namespace examples
