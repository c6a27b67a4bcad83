// tools/settings.h — the "Settings" part of `minidl info`: the environment variables that change what
// the programs compute or how (kernel selection, the fused ReLU epilogues, the numerics check), each with
// its value as the programs read it, and for the fusion, the devices that have its kernels.
#pragma once
#include <string>

namespace minidl {

// Lines such as "  MINIDL_FUSE_RELU       on: ..."; a value the programs would refuse is shown as
// "INVALID: <the error> (programs refuse to start)".
std::string settings_report();

}  // namespace minidl
