#include "cpu/register.h"

namespace minidl {

void register_cpu_kernels() {
  register_copy_kernels_cpu();
  register_elementwise_kernels_cpu();
  register_reduce_kernels_cpu();
  register_softmax_kernels_cpu();
  register_loss_kernels_cpu();
  register_norm_kernels_cpu();
  register_dropout_kernels_cpu();
  register_optim_kernels_cpu();
  register_matmul_naive_cpu();
  register_matmul_blocked_cpu();
  register_matmul_blas_cpu();
  register_conv_naive_cpu();
  register_conv_im2col_cpu();
  register_pool_naive_cpu();
  register_pool_planes_cpu();
  register_ctc_kernels_cpu();
  register_gru_kernels_cpu();
  register_gru_sequence_kernels_cpu();
}

}  // namespace minidl
