// dist/nccl_backend.cpp — the nccl backend: collectives on CUDA tensors, one process per GPU
// (dist/communicator.h). NCCL itself is loaded at run time (dist/nccl_library.h).
//
// Setting up: rank 0 asks NCCL for a unique id (ncclGetUniqueId), the process layer copies it to every
// rank (broadcast_bytes: MPI_Bcast, or nothing in a job of one), and every rank joins with
// ncclCommInitRank(world size, id, rank) on its GPU. A job of one needs no MPI at all.
//
// Streams: all_reduce, broadcast and barrier go on the device's stream (cuda::stream), in order with the
// kernels around them; they return once queued. all_reduce_async uses a second stream of this
// communicator so that NCCL's kernels can overlap backward's:
//
//   device stream:  ... backward kernels ... [record ready] ... more backward ... [wait done] optimizer
//   comm stream:                             [wait ready] ncclAllReduce [record done]
//
// The caller keeps the tensor alive and untouched until wait() (dist/data_parallel.h's buckets live as
// long as the trainer), so the caching allocator never hands its memory to another stream's work early.
#include <vector>

#include "core/backend.h"
#include "cuda/cuda_common.h"
#include "dist/backends.h"
#include "dist/nccl_library.h"
#include "dist/process.h"

namespace minidl {
namespace dist {

namespace {

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::float32: return ncclFloat32;
    case DType::float64: return ncclFloat64;
    case DType::int32: return ncclInt32;
    case DType::int64: return ncclInt64;
    case DType::bfloat16: break;  // a storage type only: no collective carries it (gradients are float32)
  }
  throw Error(str_cat("nccl: unsupported dtype ", dtype_name(t)));
}

// CUDA events without timing, reused (creating one per collective would cost a driver call each time).
class EventPool {
 public:
  ~EventPool() {
    for (cudaEvent_t e : free_) cudaEventDestroy(e);
  }
  cudaEvent_t take() {
    if (free_.empty()) {
      cudaEvent_t e = nullptr;
      MINIDL_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      return e;
    }
    cudaEvent_t e = free_.back();
    free_.pop_back();
    return e;
  }
  // An event may be reused once recorded work has been queued behind it: a later cudaEventRecord
  // replaces what it tracks, and waits already queued keep the old point.
  void give_back(cudaEvent_t e) { free_.push_back(e); }

 private:
  std::vector<cudaEvent_t> free_;
};

class NcclWork final : public Work {
 public:
  NcclWork(cudaEvent_t done, cudaStream_t device_stream, EventPool* pool)
      : done_(done), device_stream_(device_stream), pool_(pool) {}
  ~NcclWork() override {
    if (done_) pool_->give_back(done_);
  }
  bool test() override {
    if (!done_) return true;
    const cudaError_t status = cudaEventQuery(done_);
    if (status == cudaErrorNotReady) return false;
    MINIDL_CUDA_CHECK(status);
    return true;
  }
  void wait() override {
    if (!done_) return;
    MINIDL_CUDA_CHECK(cudaStreamWaitEvent(device_stream_, done_, 0));
    pool_->give_back(done_);
    done_ = nullptr;
  }

 private:
  cudaEvent_t done_;
  cudaStream_t device_stream_;
  EventPool* pool_;
};

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(const Device& device) : device_(device) {
    const ProcessInfo& p = process_info();
    rank_ = p.rank;
    world_ = p.world_size;
    // Every rank must be able to go on before any of them waits for the others in ncclCommInitRank.
    std::string problem;
    try {
      nccl_library();
      check_device_usable(device_);
    } catch (const std::exception& e) {
      problem = e.what();
    }
    agree_or_throw(problem, "nccl backend");
    const NcclLibrary& nccl = nccl_library();
    ncclUniqueId id{};
    if (rank_ == 0) MINIDL_NCCL_CHECK(nccl.GetUniqueId(&id));
    broadcast_bytes(&id, sizeof id, 0);
    cuda::set_device(device_.index);
    MINIDL_NCCL_CHECK(nccl.CommInitRank(&comm_, world_, id, rank_));
    device_stream_ = cuda::stream(device_.index);
    MINIDL_CUDA_CHECK(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking));
  }

  ~NcclCommunicator() override {
    // Nothing may still use the communicator: let queued collectives finish, then free it.
    cudaSetDevice(device_.index);
    cudaStreamSynchronize(device_stream_);
    cudaStreamSynchronize(comm_stream_);
    if (comm_) nccl_library().CommDestroy(comm_);
    cudaStreamDestroy(comm_stream_);
  }

  Backend backend() const override { return Backend::nccl; }
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  Device device() const override { return device_; }
  std::string describe() const override {
    return str_cat("nccl, ", world_, world_ == 1 ? " process" : " processes", ", this one rank ", rank_, " on ",
                   device_.str(), " (NCCL ", nccl_version_string(nccl_library().version), ")");
  }

  void all_reduce(const Tensor& t) override {
    check_tensor("all_reduce", t);
    const Tensor work = t.contiguous();
    cuda::set_device(device_.index);
    MINIDL_NCCL_CHECK(nccl_library().AllReduce(work.raw_data(), work.raw_data(), static_cast<size_t>(work.numel()),
                                               nccl_type(work.dtype()), ncclSum, comm_, device_stream_));
    if (work.impl() != t.impl()) copy_(t, work);  // t was not contiguous
  }

  void broadcast(const Tensor& t, int root) override {
    check_tensor("broadcast", t);
    MINIDL_CHECK(root >= 0 && root < world_, "nccl broadcast: root ", root, " in a job of ", world_);
    const Tensor work = t.contiguous();
    cuda::set_device(device_.index);
    MINIDL_NCCL_CHECK(nccl_library().Broadcast(work.raw_data(), work.raw_data(), static_cast<size_t>(work.numel()),
                                               nccl_type(work.dtype()), root, comm_, device_stream_));
    if (work.impl() != t.impl()) copy_(t, work);
  }

  // A one-element all-reduce, then the host waits for it: every rank has reached this point.
  void barrier() override {
    const Tensor token = zeros({1}, TensorOptions(DType::int32, device_));
    all_reduce(token);
    cuda::set_device(device_.index);
    MINIDL_CUDA_CHECK(cudaStreamSynchronize(device_stream_));
  }

  std::unique_ptr<Work> all_reduce_async(const Tensor& t) override {
    check_tensor("all_reduce_async", t);
    MINIDL_CHECK(t.is_contiguous(), "nccl all_reduce_async: the tensor must be contiguous");
    cuda::set_device(device_.index);
    cudaEvent_t ready = events_.take();
    MINIDL_CUDA_CHECK(cudaEventRecord(ready, device_stream_));
    MINIDL_CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, ready, 0));
    events_.give_back(ready);
    MINIDL_NCCL_CHECK(nccl_library().AllReduce(t.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()),
                                               nccl_type(t.dtype()), ncclSum, comm_, comm_stream_));
    cudaEvent_t done = events_.take();
    MINIDL_CUDA_CHECK(cudaEventRecord(done, comm_stream_));
    return std::make_unique<NcclWork>(done, device_stream_, &events_);
  }

 private:
  Device device_;
  int rank_ = 0, world_ = 1;
  ncclComm_t comm_ = nullptr;
  cudaStream_t device_stream_ = nullptr, comm_stream_ = nullptr;
  EventPool events_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const Device& device) {
  return std::make_unique<NcclCommunicator>(device);
}

}  // namespace dist
}  // namespace minidl
