// dist/backends.h — inside minidl::dist: what the optional parts provide. Not for programs.
//
// CMake compiles the process layer either from mpi_runtime.cpp (a build with MPI) or from
// single_process.cpp (without), and mpi_backend.cpp / nccl_backend.cpp only when their library is found.
// communicator.cpp is the one place that asks which backends this build has (#ifdef MINIDL_WITH_MPI,
// MINIDL_WITH_NCCL), as core/registry_init.cpp does for the CUDA kernels.
#pragma once
#include <memory>
#include <string>

#include "dist/communicator.h"

namespace minidl {
namespace dist {

// ---- the process layer (mpi_runtime.cpp or single_process.cpp)
// Whether process_info() has run (report_error must not start MPI just to report an error).
bool process_layer_started();
// Ends every process of the job with `status` (MPI_Abort), or this one (std::exit) in a job of one.
[[noreturn]] void abort_job(int status);
// "Open MPI v4.1.4, ..." or why there is none.
std::string mpi_library_description();

// ---- the backends (mpi_backend.cpp, nccl_backend.cpp)
std::unique_ptr<Communicator> make_mpi_communicator();
std::unique_ptr<Communicator> make_nccl_communicator(const Device& device);
// The NCCL library as loaded at run time: "2.21.5 (libnccl.so.2)" or "not found (libnccl.so.2: <why>)".
std::string nccl_library_description();

}  // namespace dist
}  // namespace minidl
