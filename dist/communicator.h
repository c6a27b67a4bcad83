// dist/communicator.h — collectives between the processes of a data-parallel job (minidl::dist).
//
// A job is N processes started together (`mpirun -np N program ...`), each with a rank 0..N-1; one
// Communicator per process connects them. Every collective is called by every rank, in the same order,
// with tensors of the same shape and dtype:
//
//   all_reduce(t)        t = t_0 + t_1 + ... + t_{N-1} on every rank (sum, in place)
//   broadcast(t, root)   t = t_root on every rank (in place)
//   barrier()            returns when every rank has called it
//
// Two backends, each a standard engine rather than a transport of our own:
//   mpi   CPU tensors; Open MPI (MPI_Allreduce, MPI_Bcast, MPI_Barrier on a duplicate of MPI_COMM_WORLD).
//   nccl  CUDA tensors, one process per GPU (the GPU of its local rank); NCCL's ring/tree collectives on
//         the device's stream (cuda/cuda_common.h), so they are ordered with the kernels around them like
//         any other op and never block the host. With more than one process, MPI starts the job and
//         hands NCCL's unique id from rank 0 to the others; a one-process job needs no MPI.
// Each is built only when its library is found (CMake options MINIDL_WITH_MPI, MINIDL_WITH_NCCL;
// `minidl info` says which); make_communicator() explains what is missing otherwise.
//
// all_reduce_async starts a sum and returns a Work to wait on: data-parallel training starts one per
// bucket of gradients during backward (dist/data_parallel.h). The tensor must stay alive and untouched
// until wait() returns. nccl runs it on a second, communication stream that first waits for the work
// queued so far on the device's stream; wait() makes the device's stream wait for the sum (the host
// does not block), so NCCL's kernels can run while backward's kernels do. mpi uses MPI_Iallreduce; Open
// MPI advances it when the process calls into MPI (Work::test, the next collective, wait()).
//
// Supported dtypes: float32, float64, int32, int64. A non-contiguous tensor is reduced through a
// contiguous copy (synchronous collectives only; async ones require a contiguous tensor).
#pragma once
#include <memory>
#include <string>

#include "core/tensor.h"

namespace minidl {
namespace dist {

enum class Backend { mpi, nccl };
const char* backend_name(Backend b);
// The backend that serves tensors on `device`: mpi for the CPU, nccl for CUDA.
Backend backend_for(const Device& device);
// Whether this build has `b` (mpi: Open MPI found at configure time; nccl: CUDA and nccl.h, the library
// itself being loaded only when a communicator is made).
bool backend_built_in(Backend b);

// A collective that has been started.
class Work {
 public:
  virtual ~Work() = default;
  // Whether it has finished (nccl: whether the device has run it); lets MPI make progress.
  virtual bool test() = 0;
  // After wait(), the result may be used: mpi: it is in memory; nccl: work queued on the device's stream
  // from now on sees it.
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual Backend backend() const = 0;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Where this communicator's tensors live: cpu (mpi) or this process's GPU (nccl).
  virtual Device device() const = 0;
  // A line for logs: "nccl, 2 processes, this one rank 0 on cuda:0 (NCCL 2.21.5)".
  virtual std::string describe() const = 0;

  virtual void all_reduce(const Tensor& t) = 0;
  virtual void broadcast(const Tensor& t, int root) = 0;
  virtual void barrier() = 0;
  virtual std::unique_ptr<Work> all_reduce_async(const Tensor& t) = 0;

 protected:
  Communicator() = default;
  // Throws a clear Error unless t is defined, of a supported dtype, on device().
  void check_tensor(const char* op, const Tensor& t) const;
};

// Connects this process to the others of its job (process_info(), dist/process.h) with `backend`.
// nccl: `device` is the GPU this process uses (normally cuda:<local rank>). Throws an Error saying why
// when the backend is not built in or its library cannot be loaded. Collective: every rank calls it.
std::unique_ptr<Communicator> make_communicator(Backend backend, const Device& device);

// What `minidl info` prints about minidl::dist: each backend, built or not, and its library's version.
std::string info_report();

}  // namespace dist
}  // namespace minidl
