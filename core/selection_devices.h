// core/selection_devices.h — whether a kernel selection can matter to a run. `--kernel matmul=cublas` in a
// run on the CPU selects a kernel nothing will call: select_kernels_from_spec accepts it (the name exists,
// on cuda), so without this check the run would go on with the default kernels and the user would
// believe cuBLAS was measured. The programs ask it once they know their device (examples/run_environment.h).
#pragma once
#include <string>
#include <vector>

#include "core/device.h"

namespace minidl {

// One line for each OP=NAME of `spec` ("matmul=naive,conv2d=im2col_blas") whose kernel NAME of OP is
// registered only on device types outside `used`, e.g. "matmul=cublas selects a cuda kernel; this run uses
// cpu only". Items that select nothing ("OP=default", malformed or unknown ones, which the selection itself
// refuses) give no line.
std::vector<std::string> selections_unused_by(const std::string& spec, const std::vector<DeviceType>& used);

}  // namespace minidl
