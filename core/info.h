// core/info.h — what `minidl info` prints: the build, the CPU side and (when built) the CUDA side.
#pragma once
#include <string>

namespace minidl {

// A human-readable multi-line report. Works on a machine without a GPU (then says why none is usable).
std::string system_info_report();

// The CUDA part of the report; defined in cuda/ when the build has CUDA.
std::string cuda_info_report();

}  // namespace minidl
