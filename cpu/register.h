// cpu/register.h — the CPU kernels' one entry point, called once from core/registry_init.cpp. The kernel
// files' own registration functions are declared only in cpu/register.cpp, from the list in
// cpu/kernel_files.h: adding a line there recompiles that one file, not every kernel file.
#pragma once

namespace minidl {

void register_cpu_kernels();  // every function of cpu/kernel_files.h, in its order

}  // namespace minidl
