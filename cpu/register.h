// cpu/register.h — the CPU kernels' registration functions, declared from the one list in
// cpu/kernel_files.h (one function per kernel file, defined in that file). cpu/register.cpp calls them all.
#pragma once
#include "core/dispatch.h"

namespace minidl {

void register_cpu_kernels();  // every function of cpu/kernel_files.h, in its order

#define MINIDL_KERNEL_FILE(function) void function();
#include "cpu/kernel_files.h"
#undef MINIDL_KERNEL_FILE

}  // namespace minidl
