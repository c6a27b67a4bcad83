// cuda/kernel_helpers.h — small helpers shared by the dense CUDA kernel files (matmul, conv, pooling,
// batch norm): the MINIDL_TF32 switch, scratch buffers from the caching allocator, and owning wrappers
// of the cuDNN descriptors, so that every early return or thrown error still destroys them (each
// constructor delegates to one that only creates, so a failing cudnnSet* still runs the destructor).
#pragma once
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/precision.h"
#include "cuda/cuda_common.h"

namespace minidl {
namespace cuda {

// TF32 precision (core/precision.h: `--precision tf32`, or MINIDL_TF32=1) lets cuBLAS and cuDNN use TF32
// tensor cores for float32 (about 10 mantissa bits in the products: faster, less exact), and lets our own
// tf32_* kernels serve calls (cuda/sgemm_common.cuh). Off by default so float32 results match the CPU to
// float32 rounding.
inline bool tf32_enabled() { return float32_precision() == Precision::tf32; }

// BF16 precision (`--precision bf16`): cuBLAS's matmul (cuda/matmul_cublas.cu) and cuDNN's convolutions and RNN
// (cuda/conv_cudnn.cu, cuda/rnn_cudnn.cu) cast their float32 operands to bfloat16, multiply on BF16 tensor
// cores with float32 accumulation and write float32 results; the matmul and the convolutions run a shape
// in TF32 instead where that is faster (cuda/bf16_choice.h). Every other kernel computes in float32 as
// before: our GEMM and convolution ladders have no BF16 path, and serve in strict float32 when chosen
// (by_shape keeps MNIST's 9-term first convolution on implicit_gemm, in float32).
inline bool bf16_enabled() { return float32_precision() == Precision::bf16; }

// True when v can be passed where an API takes an int (cuBLAS, cuDNN and grid sizes).
inline bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

// Declines that kernels' contracts share: whether any of the tensors is not float32, and whether any of them
// starts off a 16-byte boundary (float4 loads, cuDNN's vectorised engines). any_not_float32(x, w, y).
template <class... Tensors>
bool any_not_float32(const Tensors&... t) {
  return ((t.dtype() != DType::float32) || ...);
}
inline bool aligned_16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }
template <class... Tensors>
bool any_unaligned_16(const Tensors&... t) {
  return (!aligned_16(t.raw_data()) || ...);
}

// A scratch buffer of at least `bytes` bytes on a GPU, served by the caching allocator. It is a tensor:
// freeing it when it goes out of scope is safe even while kernels that use it are still queued,
// because every kernel of a device runs on that device's one stream, in order.
inline Tensor scratch_bytes(size_t bytes, int device) {
  const int64_t words = static_cast<int64_t>((bytes + sizeof(float) - 1) / sizeof(float));
  return empty({words}, TensorOptions(DType::float32, Device::cuda(device)));
}

}  // namespace cuda
}  // namespace minidl

#ifdef MINIDL_WITH_CUDNN
namespace minidl {
namespace cuda {

// A cuDNN NCHW tensor descriptor, float32 unless told (or, default-constructed, an unset one to be filled
// by cudnnDeriveBNTensorDescriptor).
class CudnnTensorDesc {
 public:
  CudnnTensorDesc() { MINIDL_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc_)); }
  CudnnTensorDesc(int n, int c, int h, int w, cudnnDataType_t type = CUDNN_DATA_FLOAT) : CudnnTensorDesc() {
    MINIDL_CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, type, n, c, h, w));
  }
  ~CudnnTensorDesc() { cudnnDestroyTensorDescriptor(desc_); }
  CudnnTensorDesc(const CudnnTensorDesc&) = delete;
  CudnnTensorDesc& operator=(const CudnnTensorDesc&) = delete;
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

// A cuDNN filter descriptor for weights [O, C, KH, KW], float32 unless told.
class CudnnFilterDesc {
 public:
  CudnnFilterDesc(int o, int c, int kh, int kw, cudnnDataType_t type = CUDNN_DATA_FLOAT) : CudnnFilterDesc() {
    MINIDL_CUDNN_CHECK(cudnnSetFilter4dDescriptor(desc_, type, CUDNN_TENSOR_NCHW, o, c, kh, kw));
  }
  ~CudnnFilterDesc() { cudnnDestroyFilterDescriptor(desc_); }
  CudnnFilterDesc(const CudnnFilterDesc&) = delete;
  CudnnFilterDesc& operator=(const CudnnFilterDesc&) = delete;
  cudnnFilterDescriptor_t get() const { return desc_; }

 private:
  CudnnFilterDesc() { MINIDL_CUDNN_CHECK(cudnnCreateFilterDescriptor(&desc_)); }
  cudnnFilterDescriptor_t desc_ = nullptr;
};

// A 2-D cross-correlation (what deep learning calls convolution), float32 arithmetic (also for bfloat16
// tensors: products of bfloat16 values summed in float32), no dilation.
class CudnnConvDesc {
 public:
  CudnnConvDesc(int pad_h, int pad_w, int stride_h, int stride_w) : CudnnConvDesc() {
    MINIDL_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(desc_, pad_h, pad_w, stride_h, stride_w, 1, 1,
                                                       CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  }
  ~CudnnConvDesc() { cudnnDestroyConvolutionDescriptor(desc_); }
  CudnnConvDesc(const CudnnConvDesc&) = delete;
  CudnnConvDesc& operator=(const CudnnConvDesc&) = delete;
  cudnnConvolutionDescriptor_t get() const { return desc_; }

 private:
  CudnnConvDesc() { MINIDL_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&desc_)); }
  cudnnConvolutionDescriptor_t desc_ = nullptr;
};

// A 2-D pooling window.
class CudnnPoolDesc {
 public:
  CudnnPoolDesc(cudnnPoolingMode_t mode, int kh, int kw, int pad_h, int pad_w, int stride_h, int stride_w)
      : CudnnPoolDesc() {
    MINIDL_CUDNN_CHECK(cudnnSetPooling2dDescriptor(desc_, mode, CUDNN_NOT_PROPAGATE_NAN, kh, kw, pad_h, pad_w,
                                                   stride_h, stride_w));
  }
  ~CudnnPoolDesc() { cudnnDestroyPoolingDescriptor(desc_); }
  CudnnPoolDesc(const CudnnPoolDesc&) = delete;
  CudnnPoolDesc& operator=(const CudnnPoolDesc&) = delete;
  cudnnPoolingDescriptor_t get() const { return desc_; }

 private:
  CudnnPoolDesc() { MINIDL_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&desc_)); }
  cudnnPoolingDescriptor_t desc_ = nullptr;
};

}  // namespace cuda
}  // namespace minidl
#endif  // MINIDL_WITH_CUDNN
