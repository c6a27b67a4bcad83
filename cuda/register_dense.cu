// cuda/register_dense.cu — registers the dense CUDA kernels: matmul, conv2d (three stages), pooling and
// batch norm, each file's own kernels and their cuBLAS/cuDNN peers. cuDNN entries exist only in builds
// with cuDNN (MINIDL_WITH_CUDNN); without it our own kernels serve every key.
#include "cuda/register.h"

namespace minidl {

// One registration function per kernel file (defined there).
void register_matmul_kernels_cuda();       // cuda/matmul.cu
void register_conv_direct_kernels_cuda();  // cuda/conv_direct.cu
void register_conv_im2col_kernels_cuda();  // cuda/conv_im2col.cu
#ifdef MINIDL_WITH_CUDNN
void register_conv_cudnn_kernels_cuda();  // cuda/conv_cudnn.cu
#endif
void register_pool_kernels_cuda();       // cuda/pool.cu (cuDNN entries inside, under MINIDL_WITH_CUDNN)
void register_batchnorm_kernels_cuda();  // cuda/batchnorm.cu (likewise)

void register_cuda_dense_kernels() {
  register_matmul_kernels_cuda();
  register_conv_direct_kernels_cuda();
  register_conv_im2col_kernels_cuda();
#ifdef MINIDL_WITH_CUDNN
  register_conv_cudnn_kernels_cuda();
#endif
  register_pool_kernels_cuda();
  register_batchnorm_kernels_cuda();
}

}  // namespace minidl
