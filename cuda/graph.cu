// cuda/graph.cu — CapturedGraph (cuda/graph.h): stream capture, a private memory pool, and the random
// offset shift.
//
// The capture uses cudaStreamCaptureModeRelaxed: the allocator may still call cudaMalloc for a block the
// private pool does not have yet (the global mode forbids it). Everything the work queues goes to the
// device's one stream (cuda::stream), so the graph is one chain of nodes in stream order, and a block freed
// and allocated again inside the capture is reused in that order, as it would be eagerly.
#include "cuda/graph.h"

#include <cstdio>
#include <string>

#include "core/capture.h"
#include "core/random.h"
#include "cuda/allocator.h"
#include "cuda/cuda_common.h"

namespace minidl {
namespace cuda {

namespace {

cudaGraph_t as_graph(void* g) { return static_cast<cudaGraph_t>(g); }
cudaGraphExec_t as_exec(void* e) { return static_cast<cudaGraphExec_t>(e); }

}  // namespace

CapturedGraph::CapturedGraph(int device, const std::function<void()>& work) : device_(device) {
  const Device where = Device::cuda(device);
  set_device(device);
  cudaStream_t s = stream(device);
  shift_ = zeros({1}, TensorOptions(DType::int64, where));  // before the pool: it lives as long as the graph
  const uint64_t seed = current_seed();
  offset_at_capture_ = current_random_offset();

  pool_id_ = cuda_begin_private_pool(device);
  set_capture_offset_shift(where, shift_);
  auto stop_routing = [&] {
    set_capture_offset_shift(where, Tensor());
    cuda_end_private_pool(device);
  };
  cudaGraph_t graph = nullptr;
  const cudaError_t began = cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed);
  if (began != cudaSuccess) {
    stop_routing();
    cuda_release_private_pool(device, pool_id_);
    cuda::throw_cuda_error("CUDA", "cudaStreamBeginCapture", __FILE__, __LINE__, cudaGetErrorString(began));
  }
  std::string failure;
  try {
    work();
  } catch (const std::exception& e) {
    failure = e.what();
  }
  const cudaError_t ended = cudaStreamEndCapture(s, &graph);
  stop_routing();
  if (failure.empty() && ended != cudaSuccess)
    failure = str_cat("cudaStreamEndCapture: ", cudaGetErrorString(ended));
  if (!failure.empty()) {
    cudaGetLastError();  // an invalidated capture leaves an error behind; later launch checks must not see it
    if (graph) cudaGraphDestroy(graph);
    cuda_release_private_pool(device, pool_id_);
    set_random_state(seed, offset_at_capture_);
    throw Error(str_cat("cuda:", device, ": CUDA graph capture failed: ", failure,
                        ". A captured step may not read results back to the host (item(), to_vector(), a copy to "
                        "the CPU), synchronise, or copy from host memory: nothing runs while it is captured"));
  }
  graph_ = graph;
  // Nothing ran: rewind the host's random stream to where the capture started (replay() moves it on).
  draws_ = current_random_offset() - offset_at_capture_;
  set_random_state(seed, offset_at_capture_);
  MINIDL_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes_));
  cudaGraphExec_t exec = nullptr;
  MINIDL_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  exec_ = exec;
}

CapturedGraph::~CapturedGraph() {
  if (exec_) cudaGraphExecDestroy(as_exec(exec_));
  if (graph_) cudaGraphDestroy(as_graph(graph_));
  try {
    cuda_release_private_pool(device_, pool_id_);  // waits for the stream: a replay may still be running
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minidl: cuda:%d: releasing a CUDA graph's memory: %s\n", device_, e.what());
  }
}

void CapturedGraph::replay() {
  set_device(device_);
  cudaStream_t s = stream(device_);
  if (draws_ > 0) {
    // Where the eager step would start drawing now, relative to the captured offsets. From pageable
    // memory the copy is staged before cudaMemcpyAsync returns, so host_shift_ may change right after.
    host_shift_ = static_cast<int64_t>(current_random_offset() - offset_at_capture_);
    MINIDL_CUDA_CHECK(cudaMemcpyAsync(shift_.raw_data(), &host_shift_, sizeof(host_shift_), cudaMemcpyHostToDevice, s));
    reserve_random_offset(draws_);
  }
  MINIDL_CUDA_CHECK(cudaGraphLaunch(as_exec(exec_), s));
}

}  // namespace cuda
}  // namespace minidl
