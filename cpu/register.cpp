// cpu/register.cpp — registers every CPU kernel: declares each function of the list in cpu/kernel_files.h
// (each defined in its kernel file) and calls them in order. The only file that reads the list, so that
// adding a kernel file recompiles this one and the new file.
#include "cpu/register.h"

namespace minidl {

#define MINIDL_KERNEL_FILE(function) void function();
#include "cpu/kernel_files.h"
#undef MINIDL_KERNEL_FILE

void register_cpu_kernels() {
#define MINIDL_KERNEL_FILE(function) function();
#include "cpu/kernel_files.h"
#undef MINIDL_KERNEL_FILE
}

}  // namespace minidl
