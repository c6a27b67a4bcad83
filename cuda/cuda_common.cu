// cuda/cuda_common.cu — checked-call errors, the per-device stream, the library handles and the cached
// device properties (declared in cuda/cuda_common.h).
//
// Everything per device is created lazily on first use, under a per-device mutex (not std::call_once,
// which some libstdc++ versions deadlock on after a throwing initialiser: a failed creation simply throws
// and the next call tries again). Streams and handles live until the process ends: destroying them from
// static destructors would race with the CUDA runtime's own teardown.
#include <atomic>
#include <cstdint>
#include <mutex>

#include "cuda/cuda_common.h"

namespace minidl {
namespace cuda {

namespace {

// More devices than any single host we target; indices are checked against it.
constexpr int kMaxDevices = 64;

// Bit d is set once device d's stream exists (streams live as long as the process): devices_with_stream,
// called on every pinned-memory allocation and release, reads it without taking 64 locks.
std::atomic<uint64_t> g_devices_with_stream{0};
static_assert(kMaxDevices <= 64, "one bit per device");

struct DeviceState {
  std::mutex mutex;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
#ifdef MINIDL_WITH_CUDNN
  cudnnHandle_t cudnn = nullptr;
#endif
  bool have_properties = false;
  cudaDeviceProp properties{};
};

DeviceState& state(int device) {
  MINIDL_CHECK(device >= 0 && device < kMaxDevices, "cuda: device index ", device, " out of range");
  // Never destroyed (see the header comment): a plain array allocated once.
  static DeviceState* states = new DeviceState[kMaxDevices];
  return states[device];
}

}  // namespace

void throw_cuda_error(const char* what, const char* call, const char* file, int line, const char* message) {
  const std::string text = str_cat(what, " error at ", file, ":", line, ": ", call, ": ", message);
  throw Error(text);
}

const char* cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED (library not initialised)";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED (resource allocation failed)";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE (an unsupported value or parameter)";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH (feature absent on this GPU)";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR (access to GPU memory failed)";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED (the GPU program failed)";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED (functionality not supported)";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "unknown cuBLAS status";
}

void set_device(int device) {
  int current = -1;
  MINIDL_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device) MINIDL_CUDA_CHECK(cudaSetDevice(device));
}

// Non-blocking: the stream does not wait for the legacy default stream (nor the reverse), so every
// operation of minidl must go on this stream, copies and memsets included (the *Async variants).
cudaStream_t stream(int device) {
  DeviceState& s = state(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.stream == nullptr) {
    set_device(device);
    cudaStream_t created = nullptr;
    MINIDL_CUDA_CHECK(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking));
    s.stream = created;
    g_devices_with_stream.fetch_or(uint64_t{1} << device, std::memory_order_release);
  }
  return s.stream;
}

std::vector<int> devices_with_stream() {
  const uint64_t bits = g_devices_with_stream.load(std::memory_order_acquire);
  std::vector<int> out;
  for (int d = 0; d < kMaxDevices; ++d)
    if (bits & (uint64_t{1} << d)) out.push_back(d);
  return out;
}

cublasHandle_t cublas_handle(int device) {
  cudaStream_t st = stream(device);  // before taking the lock: stream() takes it too
  DeviceState& s = state(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.cublas == nullptr) {
    set_device(device);
    cublasHandle_t h = nullptr;
    MINIDL_CUBLAS_CHECK(cublasCreate(&h));
    const cublasStatus_t bound = cublasSetStream(h, st);
    if (bound != CUBLAS_STATUS_SUCCESS) {
      cublasDestroy(h);
      throw_cuda_error("cuBLAS", "cublasSetStream(h, st)", __FILE__, __LINE__, cublas_status_name(bound));
    }
    s.cublas = h;
  }
  return s.cublas;
}

#ifdef MINIDL_WITH_CUDNN
cudnnHandle_t cudnn_handle(int device) {
  cudaStream_t st = stream(device);
  DeviceState& s = state(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.cudnn == nullptr) {
    set_device(device);
    cudnnHandle_t h = nullptr;
    MINIDL_CUDNN_CHECK(cudnnCreate(&h));
    const cudnnStatus_t bound = cudnnSetStream(h, st);
    if (bound != CUDNN_STATUS_SUCCESS) {
      cudnnDestroy(h);
      throw_cuda_error("cuDNN", "cudnnSetStream(h, st)", __FILE__, __LINE__, cudnnGetErrorString(bound));
    }
    s.cudnn = h;
  }
  return s.cudnn;
}
#endif

const cudaDeviceProp& properties(int device) {
  DeviceState& s = state(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.have_properties) {
    MINIDL_CUDA_CHECK(cudaGetDeviceProperties(&s.properties, device));
    s.have_properties = true;
  }
  return s.properties;
}

bool make_strided_desc(const Tensor& t, StridedDesc& desc) {
  if (t.dim() > kMaxDims) return false;
  desc.ndim = t.dim();
  for (int d = 0; d < kMaxDims; ++d) {
    desc.shape[d] = d < desc.ndim ? t.shape()[d] : 1;
    desc.strides[d] = d < desc.ndim ? t.strides()[d] : 0;
  }
  return true;
}

}  // namespace cuda
}  // namespace minidl
