// cuda/register.cu — registers every CUDA kernel: calls each function of the list in cuda/kernel_files.h.
#include "cuda/register.h"

namespace minidl {

void register_cuda_kernels() {
#define MINIDL_KERNEL_FILE(function) function();
#include "cuda/kernel_files.h"
#undef MINIDL_KERNEL_FILE
}

}  // namespace minidl
