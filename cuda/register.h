// cuda/register.h — the CUDA backend's entry points, called from core/registry_init.cpp when the build
// has CUDA, and the kernels' registration functions, declared from the one list in cuda/kernel_files.h
// (one function per kernel file, defined in that file). cuda/register.cu calls them all.
#pragma once
#include "core/backend.h"
#include "core/dispatch.h"

namespace minidl {

DeviceBackend* make_cuda_backend();  // cuda/backend.cu
void register_cuda_kernels();        // every function of cuda/kernel_files.h, in its order

#define MINIDL_KERNEL_FILE(function) void function();
#include "cuda/kernel_files.h"
#undef MINIDL_KERNEL_FILE

}  // namespace minidl
