// cuda/conv_cudnn.cu — conv2d through cuDNN's classic convolution API: kernel "cudnn" of keys
// "conv2d" (cudnnConvolutionForward), "conv2d.backward_input" (cudnnConvolutionBackwardData) and
// "conv2d.backward_weight" (cudnnConvolutionBackwardFilter). Same math as ops/kernel_signatures.h:
// NCHW float32, CUDNN_CROSS_CORRELATION, no dilation, no groups; alpha = 1, beta = 0, so the outputs
// are overwritten (=).
//
// Algorithm choice. cuDNN offers several algorithms per stage (implicit GEMM, FFT, Winograd, ...),
// whose speed depends on the shapes. The first call of each (device, shapes, parameters, stage) runs
// cudnnFind*AlgorithmEx, which times every algorithm that fits a workspace of at most
// kWorkspaceLimit bytes on the call's own buffers (it writes the output, which the real call then
// overwrites), and caches the successful ones, fastest first. Later calls reuse the cache. If the
// chosen algorithm fails to run (its workspace cannot be allocated, or cuDNN refuses it) the next one
// is tried and becomes the cached choice.
//
// Deterministic mode (--deterministic, core/determinism.h). The timed search can pick another algorithm
// on another run (timings are noisy), and some algorithms accumulate with atomics; either changes the
// bits. So in deterministic mode the algorithms come from cuDNN's heuristics instead
// (cudnnGet*Algorithm_v7: no timing, the same ranking for the same shapes, GPU and cuDNN version), and
// only those cuDNN reports as CUDNN_DETERMINISTIC are kept. The cost is speed where the heuristic's first
// choice is not the fastest algorithm, or where the fastest one is non-deterministic (backward-filter
// algorithms 0 and 3, backward-data algorithm 0).
//
// Precision. cuDNN's default math type allows TF32 tensor cores for float32 on Ampere and later, so
// unless MINIDL_TF32=1 we set CUDNN_FMA_MATH and keep only algorithms reporting FMA math: exact
// float32, like the CPU. With MINIDL_TF32=1, CUDNN_DEFAULT_MATH and whatever cuDNN finds fastest.
// Each execution sets the math type the chosen algorithm was timed with (cuDNN needs the pair).
// BF16 (--precision bf16, core/precision.h): a stage has two paths, and the faster serves
// (cuda/bf16_choice.h: timed once per shape and stage).
//   bf16: the two float32 inputs are cast to bfloat16 (NCHW), cuDNN runs on bfloat16 tensors with float32
//         arithmetic (CUDNN_DATA_FLOAT in the convolution descriptor: bfloat16 products summed in
//         float32, tensor cores allowed), and its bfloat16 output is cast back into the float32 one.
//         cuDNN's classic API has no bfloat16-in, float32-out convolution, so each output, the weight
//         gradient included, is rounded to bfloat16 once (as with PyTorch's autocast) before it is widened.
//   tf32: the float32 call with TF32 tensor cores allowed (more mantissa bits than bfloat16).
// On the H200 the bf16 path lost on 14 of the captcha model's 15 stages (docs/results/README.md). Handing
// cuDNN NHWC bfloat16 tensors instead (a transposing cast) was tried and was slower still, up to 57 ms for
// a backward-data stage.
//
// Channels-last (core/memory_format.h): declared to serve channels-last activations. When x and y (or
// their gradients) are channels-last, the tensor descriptors say CUDNN_TENSOR_NHWC and the filter is
// handed to cuDNN in its NHWC order ([O, KH, KW, C], a copy made per call: the weight and its gradient
// stay [O, C, KH, KW], so checkpoints never see the format); on Hopper cuDNN then picks its NHWC tensor
// core engines instead of transposing inside. The format is part of the algorithm cache's key. Under
// --precision bf16 a channels-last call takes the tf32 path only (the bf16 casts write NCHW copies).
//
// Declines (returns false, so the next kernel runs): dtypes other than float32, empty tensors, sizes
// beyond int, activations neither both contiguous nor both channels-last, and the case where no
// algorithm is usable.
#ifdef MINIDL_WITH_CUDNN
#include <algorithm>
#include <array>
#include <functional>
#include <initializer_list>
#include <map>
#include <mutex>
#include <vector>

#include "core/determinism.h"
#include "core/dispatch.h"
#include "core/memory_format.h"
#include "cuda/cuda_common.h"
#include "cuda/kernel_helpers.h"
#include "cuda/bf16_choice.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

using cuda::CudnnConvDesc;
using cuda::CudnnFilterDesc;
using cuda::CudnnTensorDesc;

constexpr size_t kWorkspaceLimit = size_t{512} << 20;

enum class Stage { forward = 0, backward_input = 1, backward_weight = 2 };

const char* stage_name(Stage s) {
  switch (s) {
    case Stage::forward: return "conv2d";
    case Stage::backward_input: return "conv2d.backward_input";
    case Stage::backward_weight: return "conv2d.backward_weight";
  }
  return "?";
}

// An algorithm that ran successfully in the search, with what it needs.
struct AlgoChoice {
  int algo;                // a cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t of the stage
  cudnnMathType_t math;    // the math type it was timed with
  size_t workspace_bytes;  // the workspace it asked for
};

cudnnDataType_t type_of(bool bf16) { return bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT; }

// One convolution call of any stage: the descriptors and the three buffers. For backward stages,
// `x` is grad_x (backward_input) and `w` is grad_w (backward_weight); `y` is y or grad_y.
struct ConvCall {
  Stage stage;
  int device;
  cudnnHandle_t handle;
  CudnnTensorDesc x_desc, y_desc;
  CudnnFilterDesc w_desc;
  CudnnConvDesc conv_desc;
  void* x;
  void* w;
  void* y;

  // The buffers hold float32, or with `bf16` bfloat16; with `nhwc` x, y and w are in NHWC order.
  ConvCall(Stage s, int dev, bool bf16, bool nhwc, const Shape& xs, const Shape& ws, const Shape& ys,
           const Conv2dParams& p, void* x_, void* w_, void* y_)
      : stage(s),
        device(dev),
        handle(cuda::cudnn_handle(dev)),
        x_desc(int(xs[0]), int(xs[1]), int(xs[2]), int(xs[3]), type_of(bf16)),
        y_desc(int(ys[0]), int(ys[1]), int(ys[2]), int(ys[3]), type_of(bf16)),
        w_desc(int(ws[0]), int(ws[1]), int(ws[2]), int(ws[3]), type_of(bf16)),
        conv_desc(p.pad_h, p.pad_w, p.stride_h, p.stride_w),
        x(x_),
        w(w_),
        y(y_) {
    if (!nhwc) return;
    const cudnnDataType_t type = type_of(bf16);
    MINIDL_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x_desc.get(), CUDNN_TENSOR_NHWC, type, int(xs[0]), int(xs[1]),
                                                  int(xs[2]), int(xs[3])));
    MINIDL_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y_desc.get(), CUDNN_TENSOR_NHWC, type, int(ys[0]), int(ys[1]),
                                                  int(ys[2]), int(ys[3])));
    MINIDL_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w_desc.get(), type, CUDNN_TENSOR_NHWC, int(ws[0]), int(ws[1]),
                                                  int(ws[2]), int(ws[3])));
  }
};
int algo_count(Stage s) {
  switch (s) {
    case Stage::forward: return CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    case Stage::backward_input: return CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
    case Stage::backward_weight: return CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  }
  return 0;
}

// The workspace `algo` needs, or false when cuDNN does not support it for this call.
bool workspace_size(const ConvCall& c, int algo, size_t& bytes) {
  cudnnStatus_t st = CUDNN_STATUS_NOT_SUPPORTED;
  switch (c.stage) {
    case Stage::forward:
      st = cudnnGetConvolutionForwardWorkspaceSize(c.handle, c.x_desc.get(), c.w_desc.get(), c.conv_desc.get(),
                                                   c.y_desc.get(), static_cast<cudnnConvolutionFwdAlgo_t>(algo),
                                                   &bytes);
      break;
    case Stage::backward_input:
      st = cudnnGetConvolutionBackwardDataWorkspaceSize(c.handle, c.w_desc.get(), c.y_desc.get(), c.conv_desc.get(),
                                                        c.x_desc.get(),
                                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), &bytes);
      break;
    case Stage::backward_weight:
      st = cudnnGetConvolutionBackwardFilterWorkspaceSize(c.handle, c.x_desc.get(), c.y_desc.get(),
                                                          c.conv_desc.get(), c.w_desc.get(),
                                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), &bytes);
      break;
  }
  return st == CUDNN_STATUS_SUCCESS;
}

// Strict float32 (--precision fp32): FMA math only. Under tf32 and bf16 (for float32 and bfloat16
// tensors alike): cuDNN's default math, tensor cores allowed.
bool fma_only() { return float32_precision() == Precision::fp32; }
cudnnMathType_t search_math() { return fma_only() ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH; }

// Keeps the usable results of a search, in cuDNN's order (fastest first). Deterministic mode keeps only
// the algorithms cuDNN reports as deterministic.
template <class Perf>
std::vector<AlgoChoice> usable(const Perf* perf, int count, size_t workspace_limit) {
  std::vector<AlgoChoice> out;
  for (int i = 0; i < count; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > workspace_limit) continue;
    if (fma_only() && perf[i].mathType != CUDNN_FMA_MATH) continue;  // could use TF32
    if (deterministic_algorithms() && perf[i].determinism != CUDNN_DETERMINISTIC) continue;
    out.push_back({static_cast<int>(perf[i].algo), perf[i].mathType, perf[i].memory});
  }
  return out;
}

// Times every algorithm of the call's stage (cudnnFind*AlgorithmEx) and returns the usable ones.
std::vector<AlgoChoice> search(ConvCall& c) {
  MINIDL_CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv_desc.get(), search_math()));
  // The search workspace: the most any supported algorithm asks for, within the limit.
  size_t limit = 0;
  for (int a = 0; a < algo_count(c.stage); ++a) {
    size_t bytes = 0;
    if (workspace_size(c, a, bytes) && bytes <= kWorkspaceLimit) limit = std::max(limit, bytes);
  }
  Tensor workspace;
  try {
    if (limit > 0) workspace = cuda::scratch_bytes(limit, c.device);
  } catch (const OutOfMemoryError&) {
    limit = 0;  // search among the algorithms that need no workspace
  }
  void* ws = limit > 0 ? workspace.raw_data() : nullptr;

  const int requested = algo_count(c.stage);
  int returned = 0;
  switch (c.stage) {
    case Stage::forward: {
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(requested);
      MINIDL_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(c.handle, c.x_desc.get(), c.x, c.w_desc.get(), c.w,
                                                                c.conv_desc.get(), c.y_desc.get(), c.y, requested,
                                                                &returned, perf.data(), ws, limit));
      return usable(perf.data(), returned, limit);
    }
    case Stage::backward_input: {
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(requested);
      MINIDL_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(c.handle, c.w_desc.get(), c.w, c.y_desc.get(),
                                                                     c.y, c.conv_desc.get(), c.x_desc.get(), c.x,
                                                                     requested, &returned, perf.data(), ws, limit));
      return usable(perf.data(), returned, limit);
    }
    case Stage::backward_weight: {
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(requested);
      MINIDL_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
          c.handle, c.x_desc.get(), c.x, c.y_desc.get(), c.y, c.conv_desc.get(), c.w_desc.get(), c.w, requested,
          &returned, perf.data(), ws, limit));
      return usable(perf.data(), returned, limit);
    }
  }
  return {};
}

// Deterministic mode: cuDNN's heuristic ranking (cudnnGet*Algorithm_v7), which times nothing, so every
// run of the same shapes on the same GPU and cuDNN gets the same list. Workspaces up to kWorkspaceLimit.
std::vector<AlgoChoice> heuristic(ConvCall& c) {
  MINIDL_CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv_desc.get(), search_math()));
  const int requested = algo_count(c.stage);
  int returned = 0;
  switch (c.stage) {
    case Stage::forward: {
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(requested);
      MINIDL_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(c.handle, c.x_desc.get(), c.w_desc.get(),
                                                                c.conv_desc.get(), c.y_desc.get(), requested,
                                                                &returned, perf.data()));
      return usable(perf.data(), returned, kWorkspaceLimit);
    }
    case Stage::backward_input: {
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(requested);
      MINIDL_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(c.handle, c.w_desc.get(), c.y_desc.get(),
                                                                     c.conv_desc.get(), c.x_desc.get(), requested,
                                                                     &returned, perf.data()));
      return usable(perf.data(), returned, kWorkspaceLimit);
    }
    case Stage::backward_weight: {
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(requested);
      MINIDL_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(c.handle, c.x_desc.get(), c.y_desc.get(),
                                                                       c.conv_desc.get(), c.w_desc.get(), requested,
                                                                       &returned, perf.data()));
      return usable(perf.data(), returned, kWorkspaceLimit);
    }
  }
  return {};
}

// Runs the call with one algorithm; returns cuDNN's status (errors are the caller's to handle).
cudnnStatus_t execute(ConvCall& c, const AlgoChoice& choice, void* ws) {
  const float one = 1.0f, zero = 0.0f;
  MINIDL_CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv_desc.get(), choice.math));
  switch (c.stage) {
    case Stage::forward:
      return cudnnConvolutionForward(c.handle, &one, c.x_desc.get(), c.x, c.w_desc.get(), c.w, c.conv_desc.get(),
                                     static_cast<cudnnConvolutionFwdAlgo_t>(choice.algo), ws, choice.workspace_bytes,
                                     &zero, c.y_desc.get(), c.y);
    case Stage::backward_input:
      return cudnnConvolutionBackwardData(c.handle, &one, c.w_desc.get(), c.w, c.y_desc.get(), c.y, c.conv_desc.get(),
                                          static_cast<cudnnConvolutionBwdDataAlgo_t>(choice.algo), ws,
                                          choice.workspace_bytes, &zero, c.x_desc.get(), c.x);
    case Stage::backward_weight:
      return cudnnConvolutionBackwardFilter(c.handle, &one, c.x_desc.get(), c.x, c.y_desc.get(), c.y,
                                            c.conv_desc.get(), static_cast<cudnnConvolutionBwdFilterAlgo_t>(choice.algo),
                                            ws, choice.workspace_bytes, &zero, c.w_desc.get(), c.w);
  }
  return CUDNN_STATUS_BAD_PARAM;
}

// The algorithm cache: (device, stage, x shape, w shape, stride, padding, deterministic mode, precision,
// dtype, memory format) -> usable algorithms, the one that last ran first.
using CacheKey = std::array<int64_t, 18>;
std::mutex g_cache_mutex;
std::map<CacheKey, std::vector<AlgoChoice>> g_cache;

CacheKey cache_key(const ConvCall& c, const Shape& xs, const Shape& ws, const Conv2dParams& p, bool bf16,
                   bool nhwc) {
  return {c.device, static_cast<int64_t>(c.stage), xs[0], xs[1], xs[2], xs[3], ws[0], ws[1], ws[2], ws[3],
          p.stride_h, p.stride_w, p.pad_h, p.pad_w, deterministic_algorithms() ? 1 : 0,
          static_cast<int64_t>(float32_precision()), bf16 ? 1 : 0, nhwc ? 1 : 0};
}

// Every tensor float32, non-empty, with sizes that fit an int.
bool all_float32_on_int_sizes(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts) {
    if (t->dtype() != DType::float32 || t->numel() == 0 || !cuda::fits_int(t->numel())) return false;
    for (int64_t d : t->shape())
      if (!cuda::fits_int(d)) return false;
  }
  return true;
}

// The common path of the three stages: find (or recall) the algorithms, run the first that works. The
// float32 tensors x_like, w_like and y_like give the shapes and the device; x, w and y point to their
// data, or with `bf16` to bfloat16 copies.
bool run_conv(Stage stage, const Tensor& x_like, const Tensor& w_like, const Tensor& y_like, const Conv2dParams& p,
              bool bf16, bool nhwc, void* x, void* w, void* y) {
  const int device = y_like.device().index;
  cuda::set_device(device);
  ConvCall call(stage, device, bf16, nhwc, x_like.shape(), w_like.shape(), y_like.shape(), p, x, w, y);

  // cuDNN must agree with the front end on the output size (it always should; decline if not).
  int n = 0, c = 0, h = 0, wd = 0;
  MINIDL_CUDNN_CHECK(
      cudnnGetConvolution2dForwardOutputDim(call.conv_desc.get(), call.x_desc.get(), call.w_desc.get(), &n, &c, &h, &wd));
  if (Shape{n, c, h, wd} != y_like.shape()) return false;

  std::lock_guard<std::mutex> lock(g_cache_mutex);
  const CacheKey key = cache_key(call, x_like.shape(), w_like.shape(), p, bf16, nhwc);
  auto it = g_cache.find(key);
  if (it == g_cache.end())
    it = g_cache.emplace(key, deterministic_algorithms() ? heuristic(call) : search(call)).first;
  std::vector<AlgoChoice>& choices = it->second;

  while (!choices.empty()) {
    const AlgoChoice choice = choices.front();
    Tensor workspace;
    bool allocated = true;
    try {
      if (choice.workspace_bytes > 0) workspace = cuda::scratch_bytes(choice.workspace_bytes, device);
    } catch (const OutOfMemoryError&) {
      allocated = false;
    }
    if (allocated) {
      const cudnnStatus_t st = execute(call, choice, choice.workspace_bytes > 0 ? workspace.raw_data() : nullptr);
      if (st == CUDNN_STATUS_SUCCESS) return true;
      if (st != CUDNN_STATUS_NOT_SUPPORTED && st != CUDNN_STATUS_BAD_PARAM)
        throw Error(str_cat(stage_name(stage), " (cudnn): algorithm ", choice.algo, " failed: ",
                            cudnnGetErrorString(st), "; x ", shape_str(x_like.shape()), ", w ",
                            shape_str(w_like.shape()), ", y ", shape_str(y_like.shape())));
    }
    choices.erase(choices.begin());  // unusable here: the next fastest becomes the choice
  }
  return false;  // no algorithm works for this call: let the next kernel take it
}

// --precision bf16: the faster of the stage's bf16 path (on bfloat16 copies, the output cast back) and its
// tf32 path (run_conv on the float32 tensors: TF32 math is allowed under bf16), chosen per shape and stage.
Tensor bf16_copy(const Tensor& t) { return t.to(DType::bfloat16); }
Tensor bf16_empty_like(const Tensor& t) { return empty(t.shape(), TensorOptions(DType::bfloat16, t.device())); }

// The choice's key and name: the stage, the shapes of x (or grad_x) and w (or grad_w), stride, padding.
cuda::ChoiceKey choice_key(Stage stage, const Tensor& x_like, const Tensor& w_like, const Conv2dParams& p) {
  const Shape& xs = x_like.shape();
  const Shape& ws = w_like.shape();
  return {static_cast<int64_t>(stage), xs[0], xs[1], xs[2], xs[3], ws[0], ws[1], ws[2], ws[3], p.stride_h,
          p.stride_w, p.pad_h, p.pad_w};
}
std::function<std::string()> call_name(Stage stage, const Tensor& x_like, const Tensor& w_like,
                                       const Conv2dParams& p) {
  return [=] {
    return str_cat(stage_name(stage), " x ", shape_str(x_like.shape()), " w ", shape_str(w_like.shape()),
                   " stride ", p.stride_h, "x", p.stride_w, " pad ", p.pad_h, "x", p.pad_w);
  };
}

// A stage on channels-last x and y (both, or the call is declined): the filter in cuDNN's NHWC order,
// copied from w before the call (forward, backward_input) or into grad_w after it (backward_weight).
bool run_stage_nhwc(Stage stage, const Tensor& x, const Tensor& w, const Tensor& y, const Conv2dParams& p) {
  if (!is_channels_last(x) || !is_channels_last(y)) return false;
  const Tensor w_nhwc = empty_channels_last(w.shape(), w.options());
  if (stage != Stage::backward_weight) copy_(w_nhwc, w);
  if (!run_conv(stage, x, w, y, p, false, true, x.raw_data(), w_nhwc.raw_data(), y.raw_data())) return false;
  if (stage == Stage::backward_weight) copy_(w, w_nhwc);  // w is grad_w here
  return true;
}

// One stage with x (or grad_x), w (or grad_w) and y (or grad_y): two of them are the stage's inputs,
// the third its output (y forward, grad_x backward_input, grad_w backward_weight).
bool run_stage(Stage stage, const Tensor& x, const Tensor& w, const Tensor& y, const Conv2dParams& p) {
  if (!all_float32_on_int_sizes({&x, &w, &y}) || !w.is_contiguous()) return false;
  const bool nhwc = suggest_memory_format(x) == MemoryFormat::channels_last ||
                    suggest_memory_format(y) == MemoryFormat::channels_last;
  if (nhwc) return run_stage_nhwc(stage, x, w, y, p);
  if (!x.is_contiguous() || !y.is_contiguous()) return false;
  auto tf32 = [&] { return run_conv(stage, x, w, y, p, false, false, x.raw_data(), w.raw_data(), y.raw_data()); };
  if (!cuda::bf16_enabled()) return tf32();  // strict FP32, or TF32 under --precision tf32
  const Tensor& out = stage == Stage::forward ? y : stage == Stage::backward_input ? x : w;
  auto bf16 = [&] {
    // The inputs cast to bfloat16, the output an empty bfloat16 tensor.
    auto typed = [&](const Tensor& t) { return &t == &out ? bf16_empty_like(t) : bf16_copy(t); };
    const Tensor x16 = typed(x), w16 = typed(w), y16 = typed(y);
    if (!run_conv(stage, x, w, y, p, true, false, x16.raw_data(), w16.raw_data(), y16.raw_data())) return false;
    copy_(out, &out == &y ? y16 : &out == &x ? x16 : w16);  // widened to float32, exactly
    return true;
  };
  return cuda::run_faster_of(choice_key(stage, x, w, p), y.device().index, call_name(stage, x, w, p), bf16, tf32);
}

bool conv2d_cudnn(const Tensor& x, const Tensor& w, Tensor& y, const Conv2dParams& p) {
  return run_stage(Stage::forward, x, w, y, p);
}

bool conv2d_backward_input_cudnn(const Tensor& grad_y, const Tensor& w, Tensor& grad_x, const Conv2dParams& p) {
  return run_stage(Stage::backward_input, grad_x, w, grad_y, p);
}

bool conv2d_backward_weight_cudnn(const Tensor& x, const Tensor& grad_y, Tensor& grad_w, const Conv2dParams& p) {
  return run_stage(Stage::backward_weight, x, grad_w, grad_y, p);
}

}  // namespace

void register_conv_cudnn_cuda() {
  const char* precision =
      "exact FP32 (FMA math) unless --precision tf32 (or MINIDL_TF32=1); BF16 tensors under --precision bf16; "
      "--deterministic: heuristic choice, deterministic algorithms";
  register_kernel(keys::conv2d, DeviceType::cuda, "cudnn", Priority::tuned,
                  str_cat("cudnnConvolutionForward, fastest algorithm found once per shape; ", precision),
                  conv2d_cudnn);
  register_kernel(
      keys::conv2d_backward_input, DeviceType::cuda, "cudnn", Priority::tuned,
      str_cat("cudnnConvolutionBackwardData, fastest algorithm found once per shape; ", precision),
      conv2d_backward_input_cudnn);
  register_kernel(
      keys::conv2d_backward_weight, DeviceType::cuda, "cudnn", Priority::tuned,
      str_cat("cudnnConvolutionBackwardFilter, fastest algorithm found once per shape; ", precision),
      conv2d_backward_weight_cudnn);
  // NHWC descriptors for channels-last activations (core/memory_format.h).
  declare_channels_last_kernel(keys::conv2d, DeviceType::cuda, "cudnn");
  declare_channels_last_kernel(keys::conv2d_backward_input, DeviceType::cuda, "cudnn");
  declare_channels_last_kernel(keys::conv2d_backward_weight, DeviceType::cuda, "cudnn");
}

}  // namespace minidl

#endif  // MINIDL_WITH_CUDNN
