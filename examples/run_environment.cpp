// examples/run_environment.cpp — the start line and warnings of examples/run_environment.h.
#include "examples/run_environment.h"

#include <cstdio>

#include "core/cpu_load.h"
#include "core/precision.h"
#include "core/selection_devices.h"
#include "core/settings.h"

namespace examples {

std::string precision_text(minidl::Device device) {
  if (!device.is_cuda()) return "strict FP32";
  switch (minidl::float32_precision()) {
    case minidl::Precision::tf32: return "TF32 allowed";
    case minidl::Precision::bf16: return "BF16 products (float32 weights, activations and losses)";
    case minidl::Precision::fp32: break;
  }
  return "strict FP32";
}

std::string run_environment_line(minidl::Device device) {
  const minidl::CpuLoad load = minidl::read_cpu_load();
  return "device " + device.str() + ", " + precision_text(device) + ", " + std::to_string(load.threads) +
         " OpenMP thread(s); " + minidl::describe_load(load);
}

std::vector<std::string> run_environment_warnings(minidl::Device device, const std::vector<std::string>& kernel_flags) {
  std::vector<std::string> warnings;
  // On a GPU run the OpenMP threads only prepare data; the GPU's time is what is measured.
  if (device.is_cpu()) {
    const std::string crowded = minidl::oversubscription_warning(minidl::read_cpu_load());
    if (!crowded.empty()) warnings.push_back(crowded);
  }
  const std::vector<minidl::DeviceType> used{device.type};
  for (const std::string& line : minidl::selections_unused_by(minidl::settings::kernels.read(), used))
    warnings.push_back("MINIDL_KERNELS: " + line);
  for (const std::string& spec : kernel_flags)
    for (const std::string& line : minidl::selections_unused_by(spec, used)) warnings.push_back("--kernel " + line);
  return warnings;
}

void print_run_environment(const std::string& program, minidl::Device device,
                           const std::vector<std::string>& kernel_flags) {
  std::printf("%s: measured with %s\n", program.c_str(), run_environment_line(device).c_str());
  std::fflush(stdout);
  for (const std::string& w : run_environment_warnings(device, kernel_flags))
    std::fprintf(stderr, "%s: warning: %s\n", program.c_str(), w.c_str());
}

}  // namespace examples
