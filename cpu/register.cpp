// cpu/register.cpp — registers every CPU kernel: calls each function of the list in cpu/kernel_files.h.
#include "cpu/register.h"

namespace minidl {

void register_cpu_kernels() {
#define MINIDL_KERNEL_FILE(function) function();
#include "cpu/kernel_files.h"
#undef MINIDL_KERNEL_FILE
}

}  // namespace minidl
