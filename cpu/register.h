// cpu/register.h — one registration function per CPU kernel file; cpu/register.cpp calls them all.
#pragma once
#include "core/dispatch.h"

namespace minidl {

void register_cpu_kernels();  // all of the below

void register_copy_kernels_cpu();         // cpu/copy_naive.cpp
void register_elementwise_kernels_cpu();  // cpu/elementwise_naive.cpp, cpu/elementwise_fast.cpp
void register_reduce_kernels_cpu();       // cpu/reduce_naive.cpp
void register_ctc_kernels_cpu();          // cpu/ctc_naive.cpp

}  // namespace minidl
