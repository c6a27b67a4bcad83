// cuda/register.h — the CUDA backend's entry points, called from core/registry_init.cpp when the build
// has CUDA. The kernel files' own registration functions are declared only in cuda/register.cu, from the
// list in cuda/kernel_files.h (the same shape as cpu/register.h).
#pragma once
#include "core/backend.h"

namespace minidl {

DeviceBackend* make_cuda_backend();  // cuda/backend.cu
void register_cuda_kernels();        // every function of cuda/kernel_files.h, in its order

}  // namespace minidl
