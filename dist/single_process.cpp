// dist/single_process.cpp — the process layer of a build without MPI (dist/process.h): every process is a
// job of one. Such a build still trains with --distributed on one GPU through NCCL (a communicator of
// one rank), which is how the NCCL path is measured on a machine without Open MPI.
#include <cstdlib>
#include <string>

#include "dist/backends.h"
#include "dist/process.h"

namespace minidl {
namespace dist {

namespace {

// The world size a launcher announced in the environment (Open MPI, PMI/PMIx launchers such as srun or
// MPICH's hydra), or 1.
int launcher_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    if (const char* value = std::getenv(name)) {
      const int n = std::atoi(value);
      if (n > 1) return n;
    }
  }
  return 1;
}

bool started = false;

}  // namespace

const ProcessInfo& process_info() {
  static const ProcessInfo info = [] {
    const int launched = launcher_world_size();
    MINIDL_CHECK(launched == 1, "this process was started as one of ", launched, " (by mpirun or another "
                 "launcher), but this build of minidl has no MPI, so it cannot join them; rebuild with Open MPI "
                 "installed (`make deps`, then configure with -DMINIDL_WITH_MPI=ON)");
    started = true;
    ProcessInfo p;
    p.host = "localhost";
    return p;
  }();
  return info;
}

bool multi_process_supported() { return false; }

bool process_layer_started() { return started; }

std::vector<std::string> all_gather_strings(const std::string& mine) {
  process_info();
  return {mine};
}

void broadcast_bytes(void*, size_t, int root) {
  process_info();
  MINIDL_CHECK(root == 0, "broadcast_bytes: root ", root, " in a job of one process");
}

int max_over_ranks(int mine) {
  process_info();
  return mine;
}

void abort_job(int status) { std::exit(status); }

std::string mpi_library_description() {
  return "not built in (Open MPI was not found at configure time, or -DMINIDL_WITH_MPI=OFF)";
}

}  // namespace dist
}  // namespace minidl
