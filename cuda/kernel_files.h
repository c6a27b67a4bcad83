// cuda/kernel_files.h — the list of CUDA kernel files: one line per file, naming the function that file
// defines to register its kernels in the dispatch table. cuda/register.cu, the only file that includes
// it, turns this list into declarations and into calls (the same shape as cpu/kernel_files.h).
//
// Adding a kernel file is one new file plus one line here (docs/adding-a-kernel.md walks through it).
// Files that need cuDNN are listed under MINIDL_WITH_CUDNN, the sm_90a-only files under MINIDL_WITH_SM90A
// (CMakeLists.txt); a file that holds a cuDNN peer beside its own kernels (softmax.cu) guards those
// entries inside.
// No include guard: this file is meant to be included more than once, with MINIDL_KERNEL_FILE defined.
MINIDL_KERNEL_FILE(register_copy_cuda)         // cuda/copy.cu
MINIDL_KERNEL_FILE(register_elementwise_cuda)  // cuda/elementwise.cu
MINIDL_KERNEL_FILE(register_bias_relu_cuda)    // cuda/bias_relu.cu (bias_relu, bias_relu.backward)
MINIDL_KERNEL_FILE(register_reduce_cuda)       // cuda/reduce.cu
MINIDL_KERNEL_FILE(register_softmax_cuda)      // cuda/softmax.cu
MINIDL_KERNEL_FILE(register_dropout_cuda)      // cuda/dropout.cu
MINIDL_KERNEL_FILE(register_optim_cuda)        // cuda/optim.cu
MINIDL_KERNEL_FILE(register_gru_cell_cuda)     // cuda/gru_cell.cu
MINIDL_KERNEL_FILE(register_lstm_cell_cuda)    // cuda/lstm_cell.cu
MINIDL_KERNEL_FILE(register_ctc_cuda)          // cuda/ctc.cu
#ifdef MINIDL_WITH_CUDNN
MINIDL_KERNEL_FILE(register_rnn_cudnn_cuda)    // cuda/rnn_cudnn.cu (gru_sequence, lstm_sequence)
MINIDL_KERNEL_FILE(register_ctc_cudnn_cuda)    // cuda/ctc_cudnn.cu
#endif
MINIDL_KERNEL_FILE(register_matmul_v1_naive_cuda)            // cuda/matmul_v1_naive.cu
MINIDL_KERNEL_FILE(register_matmul_v2_smem_tiled_cuda)       // cuda/matmul_v2_smem_tiled.cu
MINIDL_KERNEL_FILE(register_matmul_v3_register_blocked_cuda) // cuda/matmul_v3_register_blocked.cu
MINIDL_KERNEL_FILE(register_matmul_cublas_cuda)              // cuda/matmul_cublas.cu
MINIDL_KERNEL_FILE(register_matmul_v4_warptiled_cuda)        // cuda/matmul_v4_warptiled.cu
MINIDL_KERNEL_FILE(register_matmul_v5_double_buffered_cuda)  // cuda/matmul_v5_double_buffered.cu
MINIDL_KERNEL_FILE(register_matmul_v6_cp_async_cuda)         // cuda/matmul_v6_cp_async.cu
MINIDL_KERNEL_FILE(register_matmul_splitk_cuda)              // cuda/matmul_splitk.cu
MINIDL_KERNEL_FILE(register_matmul_v7_autotuned_cuda)        // cuda/matmul_v7_autotuned.cu
MINIDL_KERNEL_FILE(register_matmul_tf32_mma_cuda)            // cuda/matmul_tf32_mma.cu
#ifdef MINIDL_WITH_SM90A
MINIDL_KERNEL_FILE(register_matmul_tf32_wgmma_cuda)          // cuda/matmul_tf32_wgmma.cu (sm_90a builds only)
MINIDL_KERNEL_FILE(register_matmul_tf32_wgmma_v2_cuda)       // cuda/matmul_tf32_wgmma_v2.cu (sm_90a builds only)
MINIDL_KERNEL_FILE(register_matmul_tf32_wgmma_v3_cuda)       // cuda/matmul_tf32_wgmma_v3.cu (sm_90a builds only)
MINIDL_KERNEL_FILE(register_matmul_bf16_wgmma_cuda)          // cuda/matmul_bf16_wgmma.cu (sm_90a builds only)
#endif
MINIDL_KERNEL_FILE(register_conv_direct_cuda)  // cuda/conv_direct.cu
MINIDL_KERNEL_FILE(register_conv_im2col_cuda)  // cuda/conv_im2col.cu
MINIDL_KERNEL_FILE(register_conv_implicit_gemm_cuda)       // cuda/conv_implicit_gemm.cu
MINIDL_KERNEL_FILE(register_conv_implicit_gemm_tf32_cuda)  // cuda/conv_implicit_gemm_tf32.cu
MINIDL_KERNEL_FILE(register_conv_wgrad_nhwc_3x3_cuda)  // cuda/conv_wgrad_nhwc_3x3.cu (channels-last weight gradients)
MINIDL_KERNEL_FILE(register_conv_wgrad_nchw_small_filter_cuda)  // cuda/conv_wgrad_nchw_small_filter.cu (small filters, NCHW)
#ifdef MINIDL_WITH_CUDNN
MINIDL_KERNEL_FILE(register_conv_cudnn_cuda)   // cuda/conv_cudnn.cu
MINIDL_KERNEL_FILE(register_conv_cudnn_graph_cuda)  // cuda/conv_cudnn_graph.cu (channels-last, TF32/BF16)
MINIDL_KERNEL_FILE(register_conv_bias_relu_cudnn_graph_cuda)  // cuda/conv_bias_relu_cudnn_graph.cu (fused epilogue)
MINIDL_KERNEL_FILE(register_conv_by_shape_cuda)  // cuda/conv_by_shape.cu (cuDNN or implicit_gemm, per shape)
#endif
MINIDL_KERNEL_FILE(register_pool_v2_2x2_cuda)      // cuda/pool_v2_2x2.cu
MINIDL_KERNEL_FILE(register_pool_v1_direct_cuda)    // cuda/pool_v1_direct.cu (+ cuda/pool_v1_direct.cuh)
#ifdef MINIDL_WITH_CUDNN
MINIDL_KERNEL_FILE(register_pool_cudnn_cuda)        // cuda/pool_cudnn.cu
#endif
MINIDL_KERNEL_FILE(register_batchnorm_v1_two_pass_cuda)  // cuda/batchnorm_v1_two_pass.cu
MINIDL_KERNEL_FILE(register_batchnorm_v2_split_cuda)     // cuda/batchnorm_v2_split.cu
MINIDL_KERNEL_FILE(register_batchnorm_running_stats_cuda)  // cuda/batchnorm_running_stats.cu
#ifdef MINIDL_WITH_CUDNN
MINIDL_KERNEL_FILE(register_batchnorm_cudnn_cuda)        // cuda/batchnorm_cudnn.cu
#endif
MINIDL_KERNEL_FILE(register_matmul_v8_tuned_cuda)            // cuda/matmul_v8_tuned.cu
