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
void register_matmul_naive_cpu();         // cpu/matmul_naive.cpp
void register_matmul_blocked_cpu();       // cpu/matmul_blocked.cpp
void register_matmul_blas_cpu();          // cpu/matmul_blas.cpp (nothing without OpenBLAS)
void register_conv_naive_cpu();           // cpu/conv_naive.cpp
void register_conv_im2col_cpu();          // cpu/conv_im2col.cpp (nothing without OpenBLAS)
void register_pool_naive_cpu();           // cpu/pool_naive.cpp
void register_pool_planes_cpu();          // cpu/pool_planes.cpp
void register_ctc_kernels_cpu();          // cpu/ctc_naive.cpp
void register_gru_kernels_cpu();          // cpu/gru_naive.cpp, cpu/gru_fast.cpp
void register_gru_sequence_kernels_cpu(); // cpu/gru_sequence_naive.cpp

}  // namespace minidl
