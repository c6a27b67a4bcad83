// tools/settings.h — the "Settings" part of `minidl info`: every MINIDL_* environment variable of the
// table in core/settings.h, with its value as the programs read it (or INVALID and why) and its meaning;
// for the fusion, the devices that have its kernels.
#pragma once
#include <string>

namespace minidl {

// Two lines per setting: "  MINIDL_FUSE_RELU           on: ..." and its meaning; a value the programs
// would refuse is shown as "INVALID: <the error> (programs refuse to start)".
std::string settings_report();

}  // namespace minidl
