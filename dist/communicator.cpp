// dist/communicator.cpp — the backend-independent part of Communicator and the factory: the one place that
// asks which backends this build has (dist/backends.h).
#include "dist/communicator.h"

#include <sstream>

#include "dist/backends.h"
#include "dist/process.h"

namespace minidl {
namespace dist {

const char* backend_name(Backend b) { return b == Backend::mpi ? "mpi" : "nccl"; }

Backend backend_for(const Device& device) { return device.is_cuda() ? Backend::nccl : Backend::mpi; }

bool backend_built_in(Backend b) {
#ifdef MINIDL_WITH_MPI
  if (b == Backend::mpi) return true;
#endif
#ifdef MINIDL_WITH_NCCL
  if (b == Backend::nccl) return true;
#endif
  return false;
}

void Communicator::check_tensor(const char* op, const Tensor& t) const {
  MINIDL_CHECK(t.defined(), backend_name(backend()), " ", op, ": undefined tensor");
  MINIDL_CHECK(t.device() == device(), backend_name(backend()), " ", op, ": the tensor is on ", t.device().str(),
               ", this communicator's tensors are on ", device().str());
}

#ifndef MINIDL_WITH_MPI
std::unique_ptr<Communicator> make_mpi_communicator() {
  throw Error("the mpi backend (CPU tensors) is not built in: Open MPI was not found at configure time (install "
              "it with `make deps` and reconfigure) or the build has -DMINIDL_WITH_MPI=OFF");
}
#endif

#ifndef MINIDL_WITH_NCCL
std::unique_ptr<Communicator> make_nccl_communicator(const Device&) {
  throw Error("the nccl backend (CUDA tensors) is not built in: this build has no CUDA, nccl.h was not found at "
              "configure time, or the build has -DMINIDL_WITH_NCCL=OFF");
}
std::string nccl_library_description() { return "not built in"; }
#endif

std::unique_ptr<Communicator> make_communicator(Backend backend, const Device& device) {
  if (backend == Backend::mpi) {
    MINIDL_CHECK(device.is_cpu(), "the mpi backend works on CPU tensors, not on ", device.str());
    return make_mpi_communicator();
  }
  MINIDL_CHECK(device.is_cuda(), "the nccl backend works on CUDA tensors, not on ", device.str());
  return make_nccl_communicator(device);
}

std::string info_report() {
  std::ostringstream os;
  os << "Distributed (minidl::dist)\n";
#ifdef MINIDL_WITH_MPI
  os << "  mpi backend       yes: " << mpi_library_description() << "\n";
#else
  os << "  mpi backend       no: " << mpi_library_description() << "\n";
#endif
#ifdef MINIDL_WITH_NCCL
  os << "  nccl backend      yes (NCCL is loaded at run time): NCCL " << nccl_library_description() << "\n";
#else
  os << "  nccl backend      no: " << nccl_library_description() << "\n";
#endif
  os << "  processes         " << (multi_process_supported() ? "any number, started by mpirun" : "one (no MPI)")
     << "\n";
  return os.str();
}

}  // namespace dist
}  // namespace minidl
