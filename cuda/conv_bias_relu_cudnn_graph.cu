// cuda/conv_bias_relu_cudnn_graph.cu — kernel "cudnn_graph" of key "conv2d_bias_relu": a convolution whose
// epilogue adds the bias and applies the ReLU, as one cuDNN graph-API plan (float32 tensors).
//
//   y[n,o,p,q] = relu( sum_{c,i,j} x[n, c, p*sh - ph + i, q*sw - pw + j] * w[o,c,i,j] + bias[o] )
//
// The operation graph has three nodes and two virtual tensors, which live only inside the plan:
//
//   x, w --conv--> z (virtual) --add bias--> z + b (virtual) --relu--> y
//
// cuDNN fuses the two pointwise nodes into the convolution's epilogue: each output tile gets its bias and
// ReLU while still in registers, so y is written once and never read back, and the step has one launch
// where conv2d then bias_relu (ops/conv_bias_relu.cpp) have two. tools/probes/cudnn_fusion.cpp measured
// which engines build and how fast they are (docs/results/README.md, "Issue 26, round 8").
//
// Choice (as cuda/conv_cudnn_graph.cu): the first call of each (device, format, precision, shapes,
// stride, padding) builds plans for the first kMaxCandidates configurations of heuristics mode A that
// finalize, times each kTimedRuns times on the call's own buffers and keeps the fastest; later calls run it.
// Under strict FP32 (--precision fp32, the default for float32) only engines without tensor cores are
// taken (cuDNN notes tensor-core engines; for float32 data they use TF32); under tf32 or bf16 any engine
// that does not cut the inputs to 16 bits.
//
// Declines (returns false; the front end then runs conv2d and bias_relu): dtypes other than float32;
// activations neither both NCHW nor both channels-last; pointers not 16-byte aligned; sizes beyond int;
// --deterministic (a timed choice) unless the kernel is selected by name; a first call of a shape while a
// CUDA graph is being captured (the timing cannot run inside a capture); and shapes for which no plan
// builds (remembered: strict FP32 with channels-last activations, for one, has no engine on an H100). With
// channels-last activations the filter is handed over in [O, KH, KW, C] order: a copy made per call.
#ifdef MINIDL_WITH_CUDNN
#include <cudnn.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/determinism.h"
#include "core/dispatch.h"
#include "core/memory_format.h"
#include "core/precision.h"
#include "cuda/cuda_common.h"
#include "cuda/cudnn_backend.h"
#include "cuda/kernel_helpers.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

using cudnn_backend::Desc;
using cudnn_backend::Plan;

constexpr int kMaxCandidates = 8;
constexpr int kTimedRuns = 3;
constexpr int64_t kWorkspaceLimit = int64_t{512} << 20;
constexpr const char* kName = "cudnn_graph";

// The ids of the tensors in the graph; the two virtual ones never reach the variant pack.
constexpr int64_t kIdX = 'x', kIdW = 'w', kIdB = 'b', kIdY = 'y', kIdZ = 'z', kIdZb = 'Z';

// Builds the three-node graph for these shapes, then the fastest plan of the engines `strict` allows,
// timed on the call's buffers; null when none builds.
std::shared_ptr<Plan> find_plan(int device, bool nhwc, bool strict, const Shape& xs, const Shape& ws, const Shape& ys,
                                const Conv2dParams& p, void* x, void* w, void* b, void* y) {
  cudnnHandle_t handle = cuda::cudnn_handle(device);
  const Shape bs = {1, ys[1], 1, 1};
  std::vector<std::unique_ptr<Desc>> keep;  // every descriptor the graph refers to, alive until it is built
  auto x_desc = cudnn_backend::tensor_desc(kIdX, xs, cudnn_backend::strides_of(xs, nhwc));
  auto w_desc = cudnn_backend::tensor_desc(kIdW, ws, cudnn_backend::strides_of(ws, nhwc));
  auto b_desc = cudnn_backend::tensor_desc(kIdB, bs, cudnn_backend::strides_of(bs, nhwc));
  auto z_desc = cudnn_backend::tensor_desc(kIdZ, ys, cudnn_backend::strides_of(ys, nhwc), true);
  auto zb_desc = cudnn_backend::tensor_desc(kIdZb, ys, cudnn_backend::strides_of(ys, nhwc), true);
  auto y_desc = cudnn_backend::tensor_desc(kIdY, ys, cudnn_backend::strides_of(ys, nhwc));
  auto conv = cudnn_backend::convolution_desc(p);
  for (const auto* d : {&x_desc, &w_desc, &b_desc, &z_desc, &zb_desc, &y_desc, &conv})
    if (!(*d)->ok()) return nullptr;

  Desc conv_op(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  const float alpha = 1.0f, beta = 0.0f;
  conv_op.set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, *x_desc);
  conv_op.set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, *w_desc);
  conv_op.set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, *z_desc);
  conv_op.set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, *conv);
  conv_op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
  conv_op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
  auto add_op = cudnn_backend::pointwise_op(CUDNN_POINTWISE_ADD, *z_desc, b_desc.get(), *zb_desc, keep);
  auto relu_op = cudnn_backend::pointwise_op(CUDNN_POINTWISE_RELU_FWD, *zb_desc, nullptr, *y_desc, keep);
  if (!conv_op.finalize() || !add_op->ok() || !relu_op->ok()) return nullptr;

  const auto graph = cudnn_backend::operation_graph(handle, {conv_op.get(), add_op->get(), relu_op->get()});
  if (graph == nullptr) return nullptr;
  const std::vector<std::unique_ptr<Desc>> configs = cudnn_backend::heuristic_configs(*graph);
  if (configs.empty()) return nullptr;
  return cudnn_backend::fastest_plan(
      handle, device, configs,
      [strict](const cudnn_backend::EngineNotes& notes) {
        return notes.known && !notes.down_converts && !(strict && notes.tensor_cores);
      },
      [&](const Desc& plan, void* workspace) {
        return cudnn_backend::execute(handle, plan, {kIdX, kIdW, kIdB, kIdY}, {x, w, b, y}, workspace);
      },
      kMaxCandidates, kTimedRuns, kWorkspaceLimit);
}

// The plan cache: (device, format, strict, x shape, w shape, stride, padding) -> the fastest plan, or none.
using PlanKey = std::array<int64_t, 15>;
std::mutex g_mutex;
std::map<PlanKey, std::shared_ptr<Plan>> g_plans;

// 1 both contiguous (NCHW), 2 both channels-last, 0 neither. A tensor that is both counts as NCHW.
int format_of(const Tensor& x, const Tensor& y) {
  if (x.is_contiguous() && y.is_contiguous()) return 1;
  if (is_channels_last(x) && is_channels_last(y)) return 2;
  return 0;
}

bool capturing(int device) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(cuda::stream(device), &status) == cudaSuccess &&
         status != cudaStreamCaptureStatusNone;
}

bool conv2d_bias_relu_cudnn_graph(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y,
                                  const Conv2dParams& p) {
  if (deterministic_algorithms() && !KernelRegistry::instance().is_selected("conv2d_bias_relu", DeviceType::cuda, kName))
    return false;
  const int format = format_of(x, y);
  if (format == 0 || !w.is_contiguous() || !bias.is_contiguous()) return false;
  if (cuda::any_not_float32(x, w, bias, y) || cuda::any_unaligned_16(x, w, bias, y)) return false;
  for (const Tensor* t : std::initializer_list<const Tensor*>{&x, &w, &y})
    if (t->numel() == 0 || !cuda::fits_int(t->numel())) return false;
  const bool nhwc = format == 2;
  const bool strict = float32_precision() == Precision::fp32;
  const int device = y.device().index;
  cuda::set_device(device);

  const Shape &xs = x.shape(), &ws = w.shape(), &ys = y.shape();
  const PlanKey key = {device, format,   strict,     xs[0],      xs[1],      xs[2],   xs[3],  ws[0],
                       ws[2],  ws[3],    p.stride_h, p.stride_w, p.pad_h,    p.pad_w, ys[1]};
  std::shared_ptr<Plan> plan;
  bool known = false;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_plans.find(key);
    if (it != g_plans.end()) plan = it->second, known = true;
  }
  if (!known && capturing(device)) return false;  // no timing inside a capture: the unfused ops serve it
  // The filter as the plan reads it: w itself in NCHW; with channels-last activations [O, KH, KW, C].
  Tensor w_plan = w;
  if (nhwc) {
    w_plan = empty_channels_last(ws, w.options());
    copy_(w_plan, w);
  }
  if (!cuda::aligned_16(w_plan.raw_data())) return false;
  if (!known) {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_plans.find(key);
    if (it == g_plans.end())
      it = g_plans.emplace(key, find_plan(device, nhwc, strict, xs, ws, ys, p, x.raw_data(), w_plan.raw_data(),
                                          bias.raw_data(), y.raw_data())).first;
    plan = it->second;
  }
  if (!plan) return false;  // no engine configuration builds for this shape
  Tensor workspace;
  if (plan->workspace > 0) workspace = cuda::scratch_bytes(static_cast<size_t>(plan->workspace), device);
  return cudnn_backend::execute(cuda::cudnn_handle(device), *plan->plan, {kIdX, kIdW, kIdB, kIdY},
                                {x.raw_data(), w_plan.raw_data(), bias.raw_data(), y.raw_data()},
                                plan->workspace > 0 ? workspace.raw_data() : nullptr);
}

}  // namespace

void register_conv_bias_relu_cudnn_graph_cuda() {
  register_kernel(keys::conv2d_bias_relu, DeviceType::cuda, kName, Priority::tuned,
                  "cuDNN graph API: convolution with the bias add and ReLU in its epilogue, the fastest of heuristics "
                  "mode A's engines timed once per shape (no tensor cores under strict FP32)",
                  conv2d_bias_relu_cudnn_graph);
  declare_channels_last_kernel(keys::conv2d_bias_relu, DeviceType::cuda, kName);
}

}  // namespace minidl

#endif  // MINIDL_WITH_CUDNN
