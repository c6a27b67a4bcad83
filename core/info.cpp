#include "core/info.h"

#include <sstream>
#include <thread>

#include "core/backend.h"
#include "core/dispatch.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef MINIDL_WITH_OPENBLAS
#include <cblas.h>
#endif

#ifndef MINIDL_BUILD_TYPE
#define MINIDL_BUILD_TYPE "unknown"
#endif
#ifndef MINIDL_CUDA_ARCHS
#define MINIDL_CUDA_ARCHS ""
#endif
#ifndef MINIDL_COMPILER
#define MINIDL_COMPILER "unknown"
#endif

namespace minidl {

std::string system_info_report() {
  std::ostringstream os;
  os << "minidl build\n";
  os << "  build type        " << MINIDL_BUILD_TYPE << "\n";
  os << "  compiler          " << MINIDL_COMPILER << "\n";
#ifdef MINIDL_WITH_CUDA
  os << "  CUDA backend      yes (built for sm_" << MINIDL_CUDA_ARCHS << ")\n";
#else
  os << "  CUDA backend      no (nvcc not found at configure time)\n";
#endif
#ifdef MINIDL_WITH_CUDNN
  os << "  cuDNN kernels     yes\n";
#else
  os << "  cuDNN kernels     no\n";
#endif
  os << "\nCPU\n";
  os << "  hardware threads  " << std::thread::hardware_concurrency() << "\n";
#ifdef _OPENMP
  os << "  OpenMP threads    " << omp_get_max_threads() << " (set OMP_NUM_THREADS to change)\n";
#else
  os << "  OpenMP            not built in (elementwise kernels run on one thread)\n";
#endif
#ifdef MINIDL_WITH_OPENBLAS
  os << "  OpenBLAS          " << openblas_get_config() << ", " << openblas_get_num_threads() << " threads, core "
     << openblas_get_corename() << "\n";
#else
  os << "  OpenBLAS          not built in (CPU matmul/conv use the naive kernels)\n";
#endif
  os << "\n" << cuda_info_report();
  size_t n = KernelRegistry::instance().all().size();
  os << "\nDispatch table     " << n << " kernels (list them with `minidl kernels`)\n";
  return os.str();
}

#ifndef MINIDL_WITH_CUDA
std::string cuda_info_report() {
  return "CUDA\n  not available: this build of minidl has no CUDA backend (the CUDA toolkit was not found at "
         "configure time); rebuild on a machine with nvcc to use a GPU\n";
}
#endif

}  // namespace minidl
