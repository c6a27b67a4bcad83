// cpu/kernel_files.h — the list of CPU kernel files: one line per file, naming the function that file
// defines to register its kernels in the dispatch table. cpu/register.cpp, the only file that includes
// it, turns this list into declarations and into calls (an "X-macro": the list is written once and read
// twice), so a new line recompiles that one file.
//
// Adding a kernel file is one new file plus one line here (docs/adding-a-kernel.md walks through it).
// The order does not decide dispatch: two kernels of one key and device may not share a priority
// (registration refuses it, naming both).
// No include guard: this file is meant to be included more than once, with MINIDL_KERNEL_FILE defined.
MINIDL_KERNEL_FILE(register_copy_naive_cpu)          // cpu/copy_naive.cpp
MINIDL_KERNEL_FILE(register_fill_contiguous_omp_cpu) // cpu/fill_contiguous_omp.cpp
MINIDL_KERNEL_FILE(register_elementwise_naive_cpu)   // cpu/elementwise_naive.cpp
MINIDL_KERNEL_FILE(register_elementwise_vectorized_cpu) // cpu/elementwise_vectorized.cpp
MINIDL_KERNEL_FILE(register_reduce_naive_cpu)        // cpu/reduce_naive.cpp
MINIDL_KERNEL_FILE(register_softmax_naive_cpu)       // cpu/softmax_naive.cpp
MINIDL_KERNEL_FILE(register_softmax_rows_omp_cpu)    // cpu/softmax_rows_omp.cpp
MINIDL_KERNEL_FILE(register_loss_naive_cpu)          // cpu/loss_naive.cpp
MINIDL_KERNEL_FILE(register_loss_rows_omp_cpu)       // cpu/loss_rows_omp.cpp
MINIDL_KERNEL_FILE(register_norm_naive_cpu)          // cpu/norm_naive.cpp
MINIDL_KERNEL_FILE(register_norm_channels_omp_cpu)   // cpu/norm_channels_omp.cpp
MINIDL_KERNEL_FILE(register_dropout_naive_cpu)       // cpu/dropout_naive.cpp
MINIDL_KERNEL_FILE(register_optim_naive_cpu)         // cpu/optim_naive.cpp
MINIDL_KERNEL_FILE(register_optim_fused_omp_cpu)     // cpu/optim_fused_omp.cpp
MINIDL_KERNEL_FILE(register_matmul_naive_cpu)        // cpu/matmul_naive.cpp
MINIDL_KERNEL_FILE(register_matmul_ikj_cpu)          // cpu/matmul_ikj.cpp (docs/adding-a-kernel.md)
MINIDL_KERNEL_FILE(register_matmul_blocked_cpu)      // cpu/matmul_blocked.cpp
MINIDL_KERNEL_FILE(register_matmul_packed_avx2_cpu)  // cpu/matmul_packed_avx2.cpp (+ cpu/matmul_packed.cpp)
MINIDL_KERNEL_FILE(register_matmul_packed_avx512_cpu) // cpu/matmul_packed_avx512.cpp
MINIDL_KERNEL_FILE(register_matmul_packed_omp_cpu)   // cpu/matmul_packed_omp.cpp
MINIDL_KERNEL_FILE(register_matmul_blas_cpu)         // cpu/matmul_blas.cpp (registers nothing without OpenBLAS)
MINIDL_KERNEL_FILE(register_conv_naive_cpu)          // cpu/conv_naive.cpp
MINIDL_KERNEL_FILE(register_conv_im2col_cpu)         // cpu/conv_im2col.cpp (registers nothing without OpenBLAS)
MINIDL_KERNEL_FILE(register_pool_naive_cpu)          // cpu/pool_naive.cpp
MINIDL_KERNEL_FILE(register_pool_planes_cpu)         // cpu/pool_planes.cpp
MINIDL_KERNEL_FILE(register_ctc_naive_cpu)           // cpu/ctc_naive.cpp
MINIDL_KERNEL_FILE(register_gru_naive_cpu)           // cpu/gru_naive.cpp
MINIDL_KERNEL_FILE(register_gru_rows_omp_cpu)        // cpu/gru_rows_omp.cpp
MINIDL_KERNEL_FILE(register_gru_sequence_naive_cpu)  // cpu/gru_sequence_naive.cpp
MINIDL_KERNEL_FILE(register_lstm_naive_cpu)          // cpu/lstm_naive.cpp
MINIDL_KERNEL_FILE(register_lstm_rows_omp_cpu)       // cpu/lstm_rows_omp.cpp
MINIDL_KERNEL_FILE(register_lstm_sequence_naive_cpu) // cpu/lstm_sequence_naive.cpp
MINIDL_KERNEL_FILE(register_bias_relu_naive_cpu)     // cpu/bias_relu_naive.cpp
MINIDL_KERNEL_FILE(register_bias_relu_omp_cpu)       // cpu/bias_relu_omp.cpp
MINIDL_KERNEL_FILE(register_copy_strided_cpu)        // cpu/copy_strided.cpp
