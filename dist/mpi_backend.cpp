// dist/mpi_backend.cpp — the mpi backend: collectives on CPU tensors with Open MPI (dist/communicator.h).
//
// The communicator works on its own duplicate of MPI_COMM_WORLD, so its messages never mix with the
// process layer's (dist/process.h). Every collective is non-blocking (MPI_Iallreduce, MPI_Ibcast,
// MPI_Ibarrier) and waited for with a deadline (dist/mpi_wait.h: MINIDL_DIST_TIMEOUT ends the job,
// naming the silent ranks). MPI counts are ints: a tensor of more than 2^31 - 1 elements travels
// in several calls. MPI_IN_PLACE makes the sum in place.
#include <algorithm>
#include <climits>
#include <vector>

#include "dist/backends.h"
#include "dist/mpi_check.h"
#include "dist/mpi_wait.h"
#include "dist/process.h"

namespace minidl {
namespace dist {

namespace {

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::float32: return MPI_FLOAT;
    case DType::float64: return MPI_DOUBLE;
    case DType::int32: return MPI_INT32_T;
    case DType::int64: return MPI_INT64_T;
    case DType::bfloat16: break;  // a storage type only: no collective carries it (gradients are float32)
  }
  throw Error(str_cat("mpi: unsupported dtype ", dtype_name(t)));
}

// Calls fn(pointer, count) over consecutive chunks of at most INT_MAX elements of a contiguous tensor.
template <class Fn>
void for_each_chunk(const Tensor& t, Fn fn) {
  char* base = static_cast<char*>(t.raw_data());
  const size_t item = dtype_size(t.dtype());
  for (int64_t start = 0; start < t.numel(); start += INT_MAX) {
    const int64_t count = std::min<int64_t>(INT_MAX, t.numel() - start);
    fn(base + start * item, static_cast<int>(count));
  }
}

class MpiWork final : public Work {
 public:
  MpiWork(const CollectiveCall& call, std::vector<MPI_Request> requests)
      : call_(call), requests_(std::move(requests)) {}
  ~MpiWork() override {
    if (requests_.empty()) return;
    try {
      wait_collective(call_, requests_);
    } catch (...) {  // a destructor must not throw; a failed wait has nothing left to free
    }
  }
  bool test() override { return test_collective(call_, requests_); }
  void wait() override { wait_collective(call_, requests_); }

 private:
  CollectiveCall call_;
  std::vector<MPI_Request> requests_;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    const ProcessInfo& p = process_info();
    rank_ = p.rank;
    world_ = p.world_size;
    run_collective("communicator set-up", [&](MPI_Request* r) { return MPI_Comm_idup(MPI_COMM_WORLD, &comm_, r); });
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  Backend backend() const override { return Backend::mpi; }
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  Device device() const override { return Device::cpu(); }
  std::string describe() const override {
    return str_cat("mpi, ", world_, world_ == 1 ? " process" : " processes", ", this one rank ", rank_, " on cpu (",
                   mpi_library_description(), ")");
  }

  void all_reduce(const Tensor& t) override {
    check_tensor("all_reduce", t);
    const Tensor work = t.contiguous();
    const CollectiveCall call = enter_collective("all_reduce");
    std::vector<MPI_Request> requests;
    for_each_chunk(work, [&](void* p, int n) {
      requests.push_back(MPI_REQUEST_NULL);
      MINIDL_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, p, n, mpi_type(t.dtype()), MPI_SUM, comm_, &requests.back()));
    });
    wait_collective(call, requests);
    if (work.impl() != t.impl()) copy_(t, work);  // t was not contiguous
  }

  void broadcast(const Tensor& t, int root) override {
    check_tensor("broadcast", t);
    MINIDL_CHECK(root >= 0 && root < world_, "mpi broadcast: root ", root, " in a job of ", world_);
    const Tensor work = t.contiguous();
    const CollectiveCall call = enter_collective("broadcast");
    std::vector<MPI_Request> requests;
    for_each_chunk(work, [&](void* p, int n) {
      requests.push_back(MPI_REQUEST_NULL);
      MINIDL_MPI_CHECK(MPI_Ibcast(p, n, mpi_type(t.dtype()), root, comm_, &requests.back()));
    });
    wait_collective(call, requests);
    if (work.impl() != t.impl()) copy_(t, work);  // t was not contiguous
  }

  void barrier() override {
    run_collective("barrier", [&](MPI_Request* r) { return MPI_Ibarrier(comm_, r); });
  }

  std::unique_ptr<Work> all_reduce_async(const Tensor& t) override {
    check_tensor("all_reduce_async", t);
    MINIDL_CHECK(t.is_contiguous(), "mpi all_reduce_async: the tensor must be contiguous");
    const CollectiveCall call = enter_collective("all_reduce_async");
    std::vector<MPI_Request> requests;
    for_each_chunk(t, [&](void* p, int n) {
      requests.push_back(MPI_REQUEST_NULL);
      MINIDL_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, p, n, mpi_type(t.dtype()), MPI_SUM, comm_, &requests.back()));
    });
    return std::make_unique<MpiWork>(call, std::move(requests));
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, world_ = 1;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<MpiCommunicator>(); }

}  // namespace dist
}  // namespace minidl
