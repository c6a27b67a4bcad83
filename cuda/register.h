// cuda/register.h — the CUDA backend's entry points, called from core/registry_init.cpp when the build
// has CUDA. One registration function per CUDA kernel file; cuda/register.cu calls them all.
#pragma once
#include "core/backend.h"
#include "core/dispatch.h"

namespace minidl {

DeviceBackend* make_cuda_backend();  // cuda/backend.cu
void register_cuda_kernels();        // cuda/register.cu: all of the per-file functions
void register_cuda_dense_kernels();  // cuda/register_dense.cu: matmul, conv2d, pooling, batch norm

}  // namespace minidl
