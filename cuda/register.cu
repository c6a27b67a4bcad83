// cuda/register.cu — registers the CUDA kernels: one function per kernel file, all called here
// (from core/registry_init.cpp, through register_cuda_kernels, when the build has CUDA).
#include "cuda/register.h"

namespace minidl {

void register_copy_kernels_cuda();         // cuda/copy.cu
void register_elementwise_kernels_cuda();  // cuda/elementwise.cu
void register_reduce_kernels_cuda();       // cuda/reduce.cu
void register_softmax_kernels_cuda();      // cuda/softmax.cu (and the cuDNN softmax/activation peers)
void register_dropout_kernels_cuda();      // cuda/dropout.cu
void register_optim_kernels_cuda();        // cuda/optim.cu
void register_gru_kernels_cuda();          // cuda/gru_cell.cu
void register_ctc_kernels_cuda();          // cuda/ctc.cu
#ifdef MINIDL_WITH_CUDNN
void register_gru_sequence_kernels_cuda();  // cuda/gru_cudnn.cu
void register_ctc_cudnn_kernels_cuda();  // cuda/ctc_cudnn.cu
#endif
// register_cuda_dense_kernels (cuda/register.h): matmul, conv2d, pooling, batch norm (cuda/register_dense.cu)

void register_cuda_kernels() {
  register_copy_kernels_cuda();
  register_elementwise_kernels_cuda();
  register_reduce_kernels_cuda();
  register_softmax_kernels_cuda();
  register_dropout_kernels_cuda();
  register_optim_kernels_cuda();
  register_gru_kernels_cuda();
  register_ctc_kernels_cuda();
#ifdef MINIDL_WITH_CUDNN
  register_gru_sequence_kernels_cuda();
  register_ctc_cudnn_kernels_cuda();
#endif
  register_cuda_dense_kernels();
}

}  // namespace minidl
