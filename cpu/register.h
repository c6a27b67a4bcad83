// cpu/register.h — one registration function per CPU kernel file; cpu/register.cpp calls them all.
#pragma once
#include "core/dispatch.h"

namespace minidl {

void register_cpu_kernels();  // all of the below

void register_copy_kernels_cpu();         // cpu/copy_naive.cpp
void register_elementwise_kernels_cpu();  // cpu/elementwise_naive.cpp, cpu/elementwise_fast.cpp
void register_reduce_kernels_cpu();       // cpu/reduce_naive.cpp
void register_softmax_kernels_cpu();      // cpu/softmax_naive.cpp, cpu/softmax_fast.cpp
void register_loss_kernels_cpu();         // cpu/loss_naive.cpp, cpu/loss_fast.cpp
void register_norm_kernels_cpu();         // cpu/norm_naive.cpp, cpu/norm_fast.cpp
void register_dropout_kernels_cpu();      // cpu/dropout_naive.cpp
void register_optim_kernels_cpu();        // cpu/optim_naive.cpp, cpu/optim_fast.cpp

}  // namespace minidl
