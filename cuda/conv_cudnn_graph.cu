// cuda/conv_cudnn_graph.cu — conv2d through cuDNN's graph ("backend") API: kernel "cudnn_graph_tf32" of keys
// "conv2d", "conv2d.backward_input" and "conv2d.backward_weight", float32 with TF32 tensor cores. Same math
// as ops/kernel_signatures.h: cross-correlation, no dilation, no groups; the output is overwritten (alpha 1,
// beta 0). Its place: the channels-last convolutions of --precision tf32 and bf16 (the captcha model's
// default on a GPU); NCHW calls reach it when selected by name (`--kernel conv2d=cudnn_graph_tf32`) or when
// by_shape declines.
//
// Why a second cuDNN kernel. cuDNN 9 runs every convolution on "engines"; the classic API of
// cuda/conv_cudnn.cu reaches a subset of them through its eight-odd algorithm numbers, each with fixed
// settings. The graph API describes the operation (tensors by dimensions, strides and ids; the
// convolution; an operation graph of one node), asks cuDNN's heuristics for the engine configurations that
// can run it — engine plus knobs such as the tile and the split of the reduction — and builds an
// execution plan from one of them. That is the API PyTorch uses, and how its channels-last calls get
// Hopper's NHWC implicit-GEMM kernels, among them ones that split the reduction of a weight gradient whose
// reduction (N * H * W = 1.5 million for the captcha model's first block) dwarfs its output (32 x 3 x 3 x 32).
// What it gained over the classic API: docs/results/README.md, "Issue 26, round 2".
//
// Choice. The first call of each (device, stage, shapes, parameters) builds plans for the first
// kMaxCandidates configurations of heuristics mode A that finalize (8; 24 for the weight gradient), runs
// each once, times it kTimedRuns times on the call's own buffers (CUDA events on the device's stream), and
// keeps the fastest; later calls run the kept plan. Configurations whose engine converts float32 inputs
// down to 16-bit types (CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) are skipped: TF32's 10 mantissa bits are
// the least we allow.
//
// bfloat16 activations (ops/bfloat16_widening.h, ops/conv.cpp): x, w and y all bfloat16 (the op casts the float32
// weight) describe bfloat16 tensors to the same graph, with float32 arithmetic (the convolution's compute
// type): BF16 tensor-core products summed in float32, each output rounded to bfloat16 once. The weight
// gradient is bfloat16 too, widened by the op's cast into the float32 parameter's gradient. Strict FP32 does
// not concern these calls (their operands are bfloat16 already): they decline only under --deterministic.
//
// Declines (returns false; the next kernel, the classic "cudnn", then runs): strict FP32 (--precision fp32:
// the engines here may use TF32) and --deterministic (timed choices differ between runs) unless the kernel
// is selected by name, as the other TF32 kernels do; activations neither both contiguous (NCHW) nor both
// channels-last; dtypes other than float32 or bfloat16 (all three alike); sizes beyond int; pointers not 16-byte aligned; and shapes for
// which no plan builds (remembered, so the search runs once per shape). With channels-last activations
// the filter is handed over in NHWC order ([O, KH, KW, C]), as the classic kernel does: a copy made per
// call (the weight and its gradient stay [O, C, KH, KW]).
#ifdef MINIDL_WITH_CUDNN
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/determinism.h"
#include "core/dispatch.h"
#include "core/kernel_contract.h"
#include "core/memory_format.h"
#include "core/precision.h"
#include "cuda/cuda_common.h"
#include "cuda/cudnn_backend.h"
#include "cuda/kernel_helpers.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// Engine configurations built and timed per call shape: more for the weight gradient, whose fast
// configurations (a split reduction) rank lower in the heuristics' list for the first blocks' shapes.
constexpr int kMaxCandidates[3] = {8, 8, 24};  // forward, backward_input, backward_weight
constexpr int kTimedRuns = 3;               // timed runs of each
constexpr int64_t kWorkspaceLimit = int64_t{512} << 20;

enum class Stage { forward = 0, backward_input = 1, backward_weight = 2 };

using cudnn_backend::Desc;
using cudnn_backend::strides_of;
using cudnn_backend::tensor_desc;

// The ids of the three tensors in the operation graph and the variant pack.
constexpr int64_t kIdX = 'x', kIdW = 'w', kIdY = 'y';

using cudnn_backend::Plan;

// The plan cache: (device, stage, memory format, dtype, x shape, w shape, stride, padding) -> the fastest
// plan, or none (the shape declines).
using PlanKey = std::array<int64_t, 15>;
std::mutex g_mutex;
std::map<PlanKey, std::shared_ptr<Plan>> g_plans;

// Runs `plan` on the pointers; false if cuDNN refuses.
bool execute(cudnnHandle_t handle, const Plan& plan, void* x, void* w, void* y, void* workspace) {
  return cudnn_backend::execute(handle, *plan.plan, {kIdX, kIdW, kIdY}, {x, w, y}, workspace);
}

// The operation descriptor of each stage and its attributes for x (dx), w (dw), y (dy), the convolution,
// alpha and beta, in Stage order.
struct StageAttributes {
  cudnnBackendDescriptorType_t op_type;
  cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
};
constexpr StageAttributes kStageAttributes[3] = {
    {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
    {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
    {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA},
};

// Builds the operation graph of one stage, asks the heuristics, builds and times the candidates on the
// call's buffers, and returns the fastest plan (null when none builds).
std::shared_ptr<Plan> find_plan(Stage stage, int device, bool nhwc, bool bf16, const Shape& xs, const Shape& ws,
                                const Shape& ys, const Conv2dParams& p, void* x, void* w, void* y) {
  cudnnHandle_t handle = cuda::cudnn_handle(device);
  const cudnnDataType_t type = bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
  const auto x_desc = tensor_desc(kIdX, xs, strides_of(xs, nhwc), false, type);
  const auto w_desc = tensor_desc(kIdW, ws, strides_of(ws, nhwc), false, type);
  const auto y_desc = tensor_desc(kIdY, ys, strides_of(ys, nhwc), false, type);
  if (!x_desc->ok() || !w_desc->ok() || !y_desc->ok()) return nullptr;

  const auto conv = cudnn_backend::convolution_desc(p);
  if (!conv->ok()) return nullptr;

  // The operation: forward y = conv(x, w); backward data dx = conv^T(dy, w); backward filter dw from x, dy.
  // Each stage names the same six attributes its own way (kStageAttributes).
  const StageAttributes& names = kStageAttributes[static_cast<int>(stage)];
  Desc op(names.op_type);
  const float alpha = 1.0f, beta = 0.0f;
  cudnnBackendDescriptor_t xd = x_desc->get(), wd = w_desc->get(), yd = y_desc->get(), cd = conv->get();
  op.set(names.x, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &xd);
  op.set(names.w, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &wd);
  op.set(names.y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &yd);
  op.set(names.conv, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cd);
  op.set(names.alpha, CUDNN_TYPE_FLOAT, 1, &alpha);
  op.set(names.beta, CUDNN_TYPE_FLOAT, 1, &beta);
  if (!op.finalize()) return nullptr;

  const auto graph = cudnn_backend::operation_graph(handle, {op.get()});
  if (graph == nullptr) return nullptr;

  const std::vector<std::unique_ptr<Desc>> configs = cudnn_backend::heuristic_configs(*graph);
  if (configs.empty()) return nullptr;

  // Build up to kMaxCandidates plans and time each on the call's buffers; keep the fastest. Engines that
  // convert float32 inputs down to 16 bits are skipped (TF32's 10 mantissa bits are the least we allow);
  // bfloat16 inputs are 16 bits already.
  return cudnn_backend::fastest_plan(
      handle, device, configs,
      [bf16](const cudnn_backend::EngineNotes& notes) { return notes.known && (bf16 || !notes.down_converts); },
      [&](const Desc& plan, void* workspace) {
        return cudnn_backend::execute(handle, plan, {kIdX, kIdW, kIdY}, {x, w, y}, workspace);
      },
      kMaxCandidates[static_cast<int>(stage)], kTimedRuns, kWorkspaceLimit);
}

constexpr const char* kName = "cudnn_graph_tf32";

// Whether this kernel was selected by name for conv2d or for the stage of `key` (core/selection_target.h):
// then it runs under strict FP32 and --deterministic too, as asked.
bool selected_by_name(const char* key) { return KernelRegistry::instance().is_selected(key, DeviceType::cuda, kName); }

// The activations' format: 1 both contiguous (NCHW), 2 both channels-last, 0 neither (declined). A tensor
// that is both (one channel, or a 1x1 plane) counts as NCHW.
int format_of(const Tensor& a, const Tensor& b) {
  if (a.is_contiguous() && b.is_contiguous()) return 1;
  if (is_channels_last(a) && is_channels_last(b)) return 2;
  return 0;
}

// x, w and y all bfloat16 (true), all float32 (false); anything else is declined (not_one_dtype).
bool all_bfloat16(const Tensor& a, const Tensor& w, const Tensor& b) {
  return a.dtype() == DType::bfloat16 && w.dtype() == DType::bfloat16 && b.dtype() == DType::bfloat16;
}
bool not_one_dtype(const Tensor& a, const Tensor& w, const Tensor& b) {
  return !all_bfloat16(a, w, b) && cuda::any_not_float32(a, w, b);
}

// The precision rule (the header comment): float32 calls decline under strict FP32 or --deterministic,
// bfloat16 calls under --deterministic only; either runs when the kernel is selected by name.
bool declined_by_settings(const char* key, bool bf16) {
  if (selected_by_name(key)) return false;
  return deterministic_algorithms() || (!bf16 && float32_precision() == Precision::fp32);
}

// One stage: x (or grad_x), w (or grad_w), y (or grad_y), as in conv_cudnn.cu.
bool run_stage(Stage stage, const char* key, const Tensor& x, const Tensor& w, const Tensor& y,
               const Conv2dParams& p) {
  if (not_one_dtype(x, w, y)) return false;
  const bool bf16 = all_bfloat16(x, w, y);
  if (declined_by_settings(key, bf16)) return false;
  const int format = format_of(x, y);
  if (format == 0 || !w.is_contiguous()) return false;
  const bool nhwc = format == 2;
  if (cuda::any_unaligned_16(x, w, y)) return false;
  for (const Tensor* t : {&x, &w, &y})
    if (t->numel() == 0 || !cuda::fits_int(t->numel())) return false;
  const int device = y.device().index;
  cuda::set_device(device);
  // The filter as the plan reads it: w itself in NCHW; with NHWC activations a copy in [O, KH, KW, C] order.
  const Tensor w_plan = nhwc ? empty_channels_last(w.shape(), w.options()) : w;
  if (!cuda::aligned_16(w_plan.raw_data())) return false;

  const Shape &xs = x.shape(), &ws = w.shape(), &ys = y.shape();
  const PlanKey plan_key = {device, static_cast<int64_t>(stage), format, bf16 ? 1 : 0, xs[0], xs[1], xs[2], xs[3], ws[0],
                            ws[2], ws[3], p.stride_h, p.stride_w, p.pad_h, p.pad_w};
  if (nhwc && stage != Stage::backward_weight) copy_(w_plan, w);
  std::shared_ptr<Plan> plan;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_plans.find(plan_key);
    if (it == g_plans.end())
      it = g_plans.emplace(plan_key, find_plan(stage, device, nhwc, bf16, xs, ws, ys, p, x.raw_data(),
                                               w_plan.raw_data(), y.raw_data())).first;
    plan = it->second;
  }
  if (!plan) return false;  // no engine configuration builds for this shape: the next kernel runs it
  Tensor workspace;
  if (plan->workspace > 0) workspace = cuda::scratch_bytes(static_cast<size_t>(plan->workspace), device);
  if (!execute(cuda::cudnn_handle(device), *plan, x.raw_data(), w_plan.raw_data(), y.raw_data(),
               plan->workspace > 0 ? workspace.raw_data() : nullptr))
    return false;
  if (nhwc && stage == Stage::backward_weight) copy_(w, w_plan);  // w is grad_w here
  return true;
}

// The calls every stage declines (its contract, core/kernel_contract.h): a and b are the stage's two
// activations (x and y, or their gradients), w the weight or its gradient.
template <class Fn>
KernelContract<Fn> contract(const char* key) {
  // The activations are the first and third arguments in every stage's signature, the weight the second.
  return {{},
          {{"float32 under strict FP32 (--precision fp32), or --deterministic, unless selected by name",
            [key](const Tensor& a, const Tensor& w, const Tensor& b, const Conv2dParams&) {
              return declined_by_settings(key, all_bfloat16(a, w, b));
            }},
           {"activations neither both NCHW nor both channels-last",
            [](const Tensor& a, const Tensor&, const Tensor& b, const Conv2dParams&) { return format_of(a, b) == 0; }},
           {"neither all float32 nor all bfloat16",
            [](const Tensor& a, const Tensor& w, const Tensor& b, const Conv2dParams&) { return not_one_dtype(a, w, b); }},
           {"a tensor not 16-byte aligned",
            [](const Tensor& a, const Tensor& w, const Tensor& b, const Conv2dParams&) { return cuda::any_unaligned_16(a, w, b); }}}};
}

bool conv2d_cudnn_graph(const Tensor& x, const Tensor& w, Tensor& y, const Conv2dParams& p) {
  return run_stage(Stage::forward, "conv2d", x, w, y, p);
}

bool conv2d_backward_input_cudnn_graph(const Tensor& grad_y, const Tensor& w, Tensor& grad_x, const Conv2dParams& p) {
  return run_stage(Stage::backward_input, "conv2d.backward_input", grad_x, w, grad_y, p);
}

bool conv2d_backward_weight_cudnn_graph(const Tensor& x, const Tensor& grad_y, Tensor& grad_w,
                                        const Conv2dParams& p) {
  return run_stage(Stage::backward_weight, "conv2d.backward_weight", x, grad_w, grad_y, p);
}

}  // namespace

void register_conv_cudnn_graph_cuda() {
  const char* what =
      "cuDNN graph API: the fastest of heuristics mode A's engine configurations, timed once per shape; float32 with "
      "TF32 under --precision tf32 or bf16 (or when selected), or bfloat16 tensors; NCHW or channels-last";
  // Priority 21: one above the classic "cudnn" (20), so channels-last calls try it first and fall back to
  // "cudnn" when it declines; below by_shape (25), which serves NCHW calls.
  register_kernel(keys::conv2d, DeviceType::cuda, kName, Priority::tuned + 1, what, conv2d_cudnn_graph);
  register_kernel(keys::conv2d_backward_input, DeviceType::cuda, kName, Priority::tuned + 1, what,
                  conv2d_backward_input_cudnn_graph);
  register_kernel(keys::conv2d_backward_weight, DeviceType::cuda, kName, Priority::tuned + 1, what,
                  conv2d_backward_weight_cudnn_graph);
  declare_kernel_contract(keys::conv2d, DeviceType::cuda, kName, contract<Conv2dKernel>("conv2d"));
  declare_kernel_contract(keys::conv2d_backward_input, DeviceType::cuda, kName,
                          contract<Conv2dBackwardInputKernel>("conv2d.backward_input"));
  declare_kernel_contract(keys::conv2d_backward_weight, DeviceType::cuda, kName,
                          contract<Conv2dBackwardWeightKernel>("conv2d.backward_weight"));
  declare_channels_last_kernel(keys::conv2d, DeviceType::cuda, kName);
  declare_channels_last_kernel(keys::conv2d_backward_input, DeviceType::cuda, kName);
  declare_channels_last_kernel(keys::conv2d_backward_weight, DeviceType::cuda, kName);
}

}  // namespace minidl

#endif  // MINIDL_WITH_CUDNN
