// cuda/cudnn_backend.h — the pieces of cuDNN's graph ("backend") API that the graph kernels share:
// cuda/conv_cudnn_graph.cu (a convolution stage) and cuda/conv_bias_relu_cudnn_graph.cu (a convolution
// with its bias and ReLU), and tools/probes/cudnn_fusion.cpp. Plain host code.
//
// The API in five steps: describe each tensor (dimensions, strides, a unique id) and each operation; put
// the operations in an operation graph; ask the heuristics for engine configurations that can run it;
// finalize an execution plan from one of them; execute the plan with a "variant pack" that maps the
// tensor ids to device pointers (and a workspace).
#pragma once
#ifdef MINIDL_WITH_CUDNN
#include <cudnn.h>

#include <array>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "cuda/cuda_common.h"
#include "cuda/kernel_helpers.h"
#include "ops/kernel_signatures.h"

namespace minidl {
namespace cudnn_backend {

// One backend descriptor, destroyed with its owner. ok() turns false at the first call cuDNN refuses, and
// every later set() or finalize() is then skipped: a caller checks once, at the end.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type) { ok_ = cudnnBackendCreateDescriptor(type, &d_) == CUDNN_STATUS_SUCCESS; }
  ~Desc() {
    if (d_ != nullptr) cudnnBackendDestroyDescriptor(d_);
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }
  bool ok() const { return ok_; }
  bool set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* values) {
    ok_ = ok_ && cudnnBackendSetAttribute(d_, name, type, count, values) == CUDNN_STATUS_SUCCESS;
    return ok_;
  }
  // An attribute that is another descriptor.
  bool set_desc(cudnnBackendAttributeName_t name, const Desc& d) {
    cudnnBackendDescriptor_t raw = d.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
  }
  bool finalize() {
    ok_ = ok_ && cudnnBackendFinalize(d_) == CUDNN_STATUS_SUCCESS;
    return ok_;
  }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
  bool ok_ = false;
};

// The strides of a [N, C, H, W] shape stored NHWC or NCHW (for a filter: [O, KH, KW, C] or [O, C, KH, KW]).
inline std::array<int64_t, 4> strides_of(const Shape& s, bool nhwc) {
  if (nhwc) return {s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]};
  return {s[1] * s[2] * s[3], s[2] * s[3], s[3], 1};
}

// A tensor of logical shape [N, C, H, W] with the given strides, 16-byte aligned, of float32 (or `type`).
// A virtual tensor lives only inside a fused plan (no pointer in the variant pack).
inline std::unique_ptr<Desc> tensor_desc(int64_t id, const Shape& shape, const std::array<int64_t, 4>& strides,
                                         bool is_virtual = false, cudnnDataType_t type = CUDNN_DATA_FLOAT) {
  auto d = std::make_unique<Desc>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const int64_t dims[4] = {shape[0], shape[1], shape[2], shape[3]};
  const int64_t alignment = 16;
  d->set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  d->set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
  d->set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
  d->set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id);
  d->set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  if (is_virtual) d->set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
  d->finalize();
  return d;
}

// A 2-D cross-correlation of float32 arithmetic, no dilation, the stride and padding of `p`.
inline std::unique_ptr<Desc> convolution_desc(const Conv2dParams& p) {
  auto conv = std::make_unique<Desc>(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t spatial = 2, dilation[2] = {1, 1}, stride[2] = {p.stride_h, p.stride_w},
                padding[2] = {p.pad_h, p.pad_w};
  conv->set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  conv->set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  conv->set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  conv->set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation);
  conv->set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride);
  conv->set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, padding);
  conv->set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, padding);
  conv->finalize();
  return conv;
}

// What an engine configuration's engine says of its numbers.
struct EngineNotes {
  bool known = false;          // false: the notes could not be read (treat the engine as unsafe)
  bool tensor_cores = false;   // CUDNN_NUMERICAL_NOTE_TENSOR_CORE: for float32 data, TF32 products
  bool down_converts = false;  // CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS: float32 inputs cut to 16 bits
  bool runtime_compiled = false;  // CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION: built at the first plan (seconds)
  int64_t engine = -1;            // the engine's global index (-1: unknown)
};
inline EngineNotes engine_notes(cudnnBackendDescriptor_t cfg) {
  EngineNotes notes;
  Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t n = 0;
  if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e) !=
      CUDNN_STATUS_SUCCESS)
    return notes;
  cudnnBackendNumericalNote_t list[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t count = 0;
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, list) != CUDNN_STATUS_SUCCESS)
    return notes;
  notes.known = true;
  for (int64_t i = 0; i < count; ++i) {
    notes.tensor_cores |= list[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
    notes.down_converts |= list[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS;
  }
  cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &notes.engine);
  cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &count, behavior) == CUDNN_STATUS_SUCCESS)
    for (int64_t i = 0; i < count; ++i) notes.runtime_compiled |= behavior[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
  return notes;
}

// A pointwise operation of float32 arithmetic: y = mode(x), or y = mode(x, b) when b is given (b broadcast
// over its size-1 dimensions). The pointwise descriptor it refers to goes into `keep`, which must outlive
// the operation.
inline std::unique_ptr<Desc> pointwise_op(cudnnPointwiseMode_t mode, const Desc& x, const Desc* b, const Desc& y,
                                          std::vector<std::unique_ptr<Desc>>& keep) {
  auto pw = std::make_unique<Desc>(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  const cudnnDataType_t precision = CUDNN_DATA_FLOAT;
  pw->set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  pw->set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision);
  pw->finalize();
  auto op = std::make_unique<Desc>(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, *pw);
  op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
  if (b != nullptr) op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
  op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  op->finalize();
  keep.push_back(std::move(pw));
  return op;
}

// The operation graph of `ops` (finalized operation descriptors, in order), null when cuDNN refuses it.
inline std::unique_ptr<Desc> operation_graph(cudnnHandle_t handle, const std::vector<cudnnBackendDescriptor_t>& ops) {
  auto graph = std::make_unique<Desc>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph->set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(ops.size()), ops.data());
  graph->set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  if (!graph->finalize()) return nullptr;
  return graph;
}

// The engine configurations a heuristics mode (A: the kernels use it; FALLBACK: the probe adds it)
// proposes for a finalized operation graph, best first (empty when it proposes none). Each configuration
// is a descriptor of its own.
inline std::vector<std::unique_ptr<Desc>> heuristic_configs(const Desc& graph,
                                                            cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A) {
  std::vector<std::unique_ptr<Desc>> configs;
  Desc heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heuristics.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (!heuristics.finalize()) return configs;
  int64_t available = 0;
  if (cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                               &available, nullptr) != CUDNN_STATUS_SUCCESS || available <= 0)
    return configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < available; ++i) {
    configs.push_back(std::make_unique<Desc>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(configs.back()->get());
  }
  int64_t returned = 0;
  if (cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                               available, &returned, raw.data()) != CUDNN_STATUS_SUCCESS)
    returned = 0;
  configs.resize(static_cast<size_t>(returned > 0 ? returned : 0));
  return configs;
}

// Runs a finalized plan on the tensors of `ids` at `pointers`; false if cuDNN refuses.
inline bool execute(cudnnHandle_t handle, const Desc& plan, const std::vector<int64_t>& ids,
                    const std::vector<void*>& pointers, void* workspace) {
  Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, static_cast<int64_t>(ids.size()), ids.data());
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(pointers.size()),
           pointers.data());
  pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  if (!pack.finalize()) return false;
  return cudnnBackendExecute(handle, plan.get(), pack.get()) == CUDNN_STATUS_SUCCESS;
}

// A built plan and the workspace it needs.
struct Plan {
  std::shared_ptr<Desc> plan;
  int64_t workspace = 0;
};

// The execution plan of engine configuration `cfg`, with its workspace in bytes; null when cuDNN cannot
// finalize it or will not say its workspace.
inline std::shared_ptr<Plan> build_plan(cudnnHandle_t handle, cudnnBackendDescriptor_t cfg) {
  auto plan = std::make_shared<Plan>();
  plan->plan = std::make_shared<Desc>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  plan->plan->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  plan->plan->set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg);
  if (!plan->plan->finalize()) return nullptr;
  int64_t n = 0;
  if (cudnnBackendGetAttribute(plan->plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                               &plan->workspace) != CUDNN_STATUS_SUCCESS)
    return nullptr;
  return plan;
}

// Builds plans from `configs` in order, skipping those `accept(notes)` refuses and those needing more than
// `workspace_limit` bytes, up to `max_built` plans; runs each once (a warm-up) and `timed_runs` times
// between CUDA events on the device's stream, through `run(plan, workspace)` (false: cuDNN refused it), and
// returns the fastest (null when none ran). The runs write the call's own output, which the real call
// then overwrites.
template <class Accept, class Run>
std::shared_ptr<Plan> fastest_plan(cudnnHandle_t handle, int device, const std::vector<std::unique_ptr<Desc>>& configs,
                                   Accept accept, Run run, int max_built, int timed_runs, int64_t workspace_limit) {
  cudaStream_t s = cuda::stream(device);
  cudaEvent_t start = nullptr, stop = nullptr;
  MINIDL_CUDA_CHECK(cudaEventCreate(&start));
  MINIDL_CUDA_CHECK(cudaEventCreate(&stop));
  std::shared_ptr<Plan> best;
  float best_ms = 0;
  int built = 0;
  for (size_t i = 0; i < configs.size() && built < max_built; ++i) {
    if (!accept(engine_notes(configs[i]->get()))) continue;
    const std::shared_ptr<Plan> plan = build_plan(handle, configs[i]->get());
    if (plan == nullptr || plan->workspace > workspace_limit) continue;
    Tensor workspace;
    try {
      if (plan->workspace > 0) workspace = cuda::scratch_bytes(static_cast<size_t>(plan->workspace), device);
    } catch (const OutOfMemoryError&) {
      continue;
    }
    void* wsp = plan->workspace > 0 ? workspace.raw_data() : nullptr;
    ++built;
    if (!run(*plan->plan, wsp)) continue;  // the warm-up run; refused: next
    MINIDL_CUDA_CHECK(cudaEventRecord(start, s));
    for (int r = 0; r < timed_runs; ++r) run(*plan->plan, wsp);
    MINIDL_CUDA_CHECK(cudaEventRecord(stop, s));
    MINIDL_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    MINIDL_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (!best || ms < best_ms) {
      best = plan;
      best_ms = ms;
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

}  // namespace cudnn_backend
}  // namespace minidl

#endif  // MINIDL_WITH_CUDNN
