// cuda/graph.h — CUDA graphs: capture the work a function queues on a device's stream once, then replay
// it with one launch. Plain C++ (no CUDA headers), so nn/ and programs can include it.
//
// Why: a training step of a small model is hundreds of kernel launches of a few microseconds each; the
// host spends longer issuing them than the GPU spends running them. A graph is issued with one call.
//
// What a capture may not do, because nothing runs while it is captured: read a result back to the host
// (item(), to_vector(), a copy to the CPU), synchronise, or copy from host memory. The constructor then
// throws an Error saying so, and the device is left usable.
//
// Memory (cuda/allocator.h, "private pools"): what the work allocates and frees during the capture
// belongs to the graph until it is destroyed, so a replay finds the same blocks, and nothing else is handed
// them in between. Tensors the work creates and that outlive it (its results) are rewritten by each replay.
//
// Random numbers (core/capture.h): each replay draws what the same work run eagerly at that point of the
// global stream would draw: replay k of a step that draws T numbers uses counters offset + k T onward, and
// the host's stream moves on by T per replay, as if the work had run.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/tensor.h"

namespace minidl {
namespace cuda {

class CapturedGraph {
 public:
  // Captures what `work` queues on the stream of cuda:`device`. The work does not run: replay() runs it.
  CapturedGraph(int device, const std::function<void()>& work);
  ~CapturedGraph();
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;

  // Queues one run of the captured work on the device's stream (asynchronous, like a kernel launch).
  void replay();
  // Kernels, copies and memsets in the graph.
  size_t node_count() const { return nodes_; }
  // Counter values of the random stream one replay draws.
  uint64_t random_draws() const { return draws_; }

 private:
  int device_;
  int pool_id_ = 0;
  void* graph_ = nullptr;  // cudaGraph_t
  void* exec_ = nullptr;   // cudaGraphExec_t
  size_t nodes_ = 0;
  Tensor shift_;            // int64 [1] on the device: the offset shift random kernels read
  int64_t host_shift_ = 0;  // the value copied into shift_ before a replay
  uint64_t offset_at_capture_ = 0, draws_ = 0;
};

}  // namespace cuda
}  // namespace minidl
