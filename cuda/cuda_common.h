// cuda/cuda_common.h — what every CUDA kernel file needs: checked calls, the device's stream and
// library handles, launch-size helpers.
//
// Rules of the CUDA backend:
//   - one stream per device (stream(d)); every kernel, cuBLAS and cuDNN call goes on it, so ops never
//     need a device-wide synchronisation; only copies to the host wait (core/backend.h);
//   - temporary buffers are tensors (empty(..., Device::cuda(d))), served by the caching allocator;
//   - every CUDA/cuBLAS/cuDNN call and every launch is checked with the macros below, which throw a
//     minidl::Error naming the file, line and call.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

#ifdef MINIDL_WITH_CUDNN
#include <cudnn.h>
#endif

namespace minidl {
namespace cuda {

[[noreturn]] void throw_cuda_error(const char* what, const char* call, const char* file, int line,
                                   const char* message);
const char* cublas_status_name(cublasStatus_t s);

// Makes `device` current on this thread (cheap when it already is).
void set_device(int device);
// The one stream of a device.
cudaStream_t stream(int device);
// The devices whose stream this process has created so far (the devices it uses), in index order.
std::vector<int> devices_with_stream();
// Library handles, created lazily per device and bound to stream(device).
cublasHandle_t cublas_handle(int device);
#ifdef MINIDL_WITH_CUDNN
cudnnHandle_t cudnn_handle(int device);
#endif
const cudaDeviceProp& properties(int device);

// Blocks of `block` threads to cover n items, capped so the grid stays in range (kernels then use
// grid-stride loops).
inline unsigned int grid_for(int64_t n, int block) {
  int64_t g = (n + block - 1) / block;
  if (g < 1) g = 1;
  if (g > 65535LL * 32) g = 65535LL * 32;
  return static_cast<unsigned int>(g);
}

// Up to this many dimensions travel to a kernel by value (shape + strides of a strided tensor).
constexpr int kMaxDims = 8;
struct StridedDesc {
  int ndim;
  int64_t shape[kMaxDims];
  int64_t strides[kMaxDims];
};
// Describes t for a kernel; returns false when t has more than kMaxDims dims (the kernel then declines).
bool make_strided_desc(const Tensor& t, StridedDesc& desc);

}  // namespace cuda
}  // namespace minidl

#define MINIDL_CUDA_CHECK(call)                                                                     \
  do {                                                                                              \
    cudaError_t err_ = (call);                                                                      \
    if (err_ != cudaSuccess)                                                                        \
      ::minidl::cuda::throw_cuda_error("CUDA", #call, __FILE__, __LINE__, cudaGetErrorString(err_)); \
  } while (0)

#define MINIDL_CUBLAS_CHECK(call)                                                                            \
  do {                                                                                                       \
    cublasStatus_t st_ = (call);                                                                             \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                                                        \
      ::minidl::cuda::throw_cuda_error("cuBLAS", #call, __FILE__, __LINE__, ::minidl::cuda::cublas_status_name(st_)); \
  } while (0)

#define MINIDL_CUDNN_CHECK(call)                                                                      \
  do {                                                                                                \
    auto st_ = (call);                                                                                \
    if (st_ != CUDNN_STATUS_SUCCESS)                                                                  \
      ::minidl::cuda::throw_cuda_error("cuDNN", #call, __FILE__, __LINE__, cudnnGetErrorString(st_)); \
  } while (0)

// After every kernel launch: catches bad launch configurations at the launch site.
#define MINIDL_LAUNCH_CHECK() MINIDL_CUDA_CHECK(cudaGetLastError())
