// cuda/info.cu — the CUDA part of `minidl info` (core/info.h): versions, devices, allocator statistics,
// and, when no GPU is usable, why. Every query here is checked but never throws: a report on a machine
// without a driver must still print.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <sstream>

#include "core/backend.h"
#include "core/info.h"
#include "cuda/allocator.h"
#include "cuda/cuda_common.h"

#ifndef MINIDL_CUDA_ARCHS
#define MINIDL_CUDA_ARCHS ""
#endif

namespace minidl {

namespace {

// "12.8" from CUDA's 12080.
std::string cuda_version_str(int v) { return str_cat(v / 1000, ".", (v % 1000) / 10); }

// A kernel that does nothing: asking for its attributes tells whether this binary has code the device
// can run (the error for a device of another architecture than the build's).
__global__ void probe_kernel() {}

std::string cublas_version() {
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS)
    return "unknown (cublasGetProperty failed)";
  return str_cat(major, ".", minor, ".", patch, " (built with ", CUBLAS_VER_MAJOR, ".", CUBLAS_VER_MINOR, ".",
                 CUBLAS_VER_PATCH, ")");
}

#ifdef MINIDL_WITH_CUDNN
// cuDNN 9 encodes versions as major*10000 + minor*100 + patch.
std::string cudnn_version_str(size_t v) { return str_cat(v / 10000, ".", (v % 10000) / 100, ".", v % 100); }
#endif

void report_device(std::ostringstream& os, int d) {
  cudaDeviceProp p{};
  const cudaError_t err = cudaGetDeviceProperties(&p, d);
  if (err != cudaSuccess) {
    cudaGetLastError();
    os << "  cuda:" << d << "            cannot read properties: " << cudaGetErrorString(err) << "\n";
    return;
  }
  os << "  cuda:" << d << "            " << p.name << ", compute capability " << p.major << "." << p.minor << ", "
     << p.multiProcessorCount << " SMs, L2 " << cuda::format_bytes(p.l2CacheSize) << ", shared memory per block "
     << cuda::format_bytes(p.sharedMemPerBlockOptin) << " (opt-in)\n";
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaSetDevice(d) == cudaSuccess && cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
    os << "                    memory " << cuda::format_bytes(total_bytes) << " total, " << cuda::format_bytes(free_bytes)
       << " free\n";
  } else {
    cudaGetLastError();
    os << "                    memory " << cuda::format_bytes(p.totalGlobalMem) << " total (free unknown)\n";
  }
  cudaFuncAttributes attr{};
  const cudaError_t probe = cudaFuncGetAttributes(&attr, probe_kernel);
  if (probe == cudaSuccess) {
    os << "                    kernels: this binary runs here as sm_" << attr.binaryVersion;
    if (attr.binaryVersion != p.major * 10 + p.minor)
      os << " (no exact sm_" << p.major << p.minor << " code: JIT-compiled from PTX " << attr.ptxVersion
         << " or a compatible binary)";
    os << "\n";
  } else {
    cudaGetLastError();
    os << "                    kernels: CANNOT RUN on this device: " << cudaGetErrorString(probe)
       << " (rebuild with -DCMAKE_CUDA_ARCHITECTURES=" << p.major << p.minor << ")\n";
  }
  const CudaMemoryStats s = cuda_memory_stats(d);
  os << "                    allocator: in use " << cuda::format_bytes(s.in_use) << ", cached "
     << cuda::format_bytes(s.cached) << ", peak " << cuda::format_bytes(s.peak_in_use) << ", " << s.malloc_calls
     << " cudaMalloc calls, limit " << (s.limit ? cuda::format_bytes(s.limit) : std::string("none")) << "\n";
}

}  // namespace

std::string cuda_info_report() {
  std::ostringstream os;
  os << "CUDA\n";
  int runtime = 0, driver = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) cudaGetLastError();
  if (cudaDriverGetVersion(&driver) != cudaSuccess) cudaGetLastError();
  os << "  runtime           " << cuda_version_str(runtime) << " (built with CUDA " << cuda_version_str(CUDART_VERSION)
     << ")\n";
  os << "  driver            " << (driver == 0 ? std::string("none found") : "supports CUDA " + cuda_version_str(driver))
     << "\n";
  os << "  built for         sm_" << MINIDL_CUDA_ARCHS << "\n";
  os << "  cuBLAS            " << cublas_version() << "\n";
#ifdef MINIDL_WITH_CUDNN
  os << "  cuDNN             " << cudnn_version_str(cudnnGetVersion()) << " (built with " << CUDNN_MAJOR << "."
     << CUDNN_MINOR << "." << CUDNN_PATCHLEVEL << ")\n";
#else
  os << "  cuDNN             not built in (cuDNN was not found at configure time)\n";
#endif
  os << "  memory limit      " << describe_cuda_memory_limit_environment() << "\n";

  DeviceBackend& backend = backend_for(DeviceType::cuda);
  const int count = backend.device_count();
  if (count == 0) {
    os << "  devices           none usable: " << backend.unavailable_reason() << "\n";
    return os.str();
  }
  os << "  devices           " << count << "\n";
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess) cudaGetLastError();
  for (int d = 0; d < count; ++d) report_device(os, d);
  if (cudaSetDevice(current) != cudaSuccess) cudaGetLastError();
  return os.str();
}

}  // namespace minidl
