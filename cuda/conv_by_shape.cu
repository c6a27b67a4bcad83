// cuda/conv_by_shape.cu — "by_shape": the convolution kernel chosen per shape, among kernels that are
// already registered (cuDNN, the implicit GEMM of cuda/conv_implicit_gemm.cu, nchw_small_filter). No
// arithmetic of its own: it is a rule, measured, written down where the dispatcher can use it.
//
// Why: the dispatch table has one default kernel per key, and cuDNN wins on almost every shape. Not on a
// convolution with very few input channels, such as MNIST's first (1 channel, 3x3 taps): its GEMM has a
// reduction of only C * KH * KW = 9 terms, where cuDNN's algorithms carry fixed set-up work
// (the stage times are in docs/conv-ladder.md).
//
// Nor on a weight gradient of few outputs, each a sum over many more pixels than there are outputs (the
// captcha model's first blocks in FP32; MNIST's second convolution at large batches): the implicit GEMM
// splits those sums over the whole GPU (split-K), where cuDNN's strict-FP32 engines do not. With sums
// only a few times longer than the outputs (MNIST's second at batch 64) cuDNN is faster again.
//
// Nor on the weight gradient of a small filter (MNIST's first convolution, 9 weights per output channel):
// there nchw_small_filter (cuda/conv_wgrad_nchw_small_filter.cu) keeps every weight's sum in registers
// and beats both GEMMs.
//
// The rule: forward and backward_weight use the implicit GEMM when C * KH * KW <= kSmallReduction (where
// backward_weight tries nchw_small_filter first; it declines channels-last tensors); backward_weight also
// when its O * C * KH * KW outputs are at most kFewOutputs and each is a sum over Nb * OH * OW >=
// kLongSum times as many pixels as there are outputs; everything else (and backward_input always) uses
// cuDNN. If the chosen kernel declines a call (a dtype or a layout it does not handle), the next is tried.
#include <string>

#include "core/dispatch.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr int64_t kSmallReduction = 16;

constexpr int64_t kFewOutputs = 64 * 32 * 3 * 3;
constexpr int64_t kLongSum = 16;

bool small_reduction(const Tensor& w) { return w.shape()[1] * w.shape()[2] * w.shape()[3] <= kSmallReduction; }

// grad_w has at most kFewOutputs values, each a sum over at least kLongSum times as many pixels.
bool few_outputs_long_sums(const Tensor& grad_y, const Tensor& grad_w) {
  const int64_t outputs = grad_w.numel();
  const int64_t pixels = grad_y.shape()[0] * grad_y.shape()[2] * grad_y.shape()[3];
  return outputs <= kFewOutputs && pixels >= kLongSum * outputs;
}

// The registered function of kernel `name` for (key, cuda); looked up at the first call, when every
// kernel file has registered its kernels.
template <class Fn>
Fn* registered(const std::string& key, const std::string& name) {
  for (const KernelInfo* k : KernelRegistry::instance().all())
    if (k->key == key && k->device == DeviceType::cuda && k->name == name && k->signature == typeid(Fn))
      return reinterpret_cast<Fn*>(k->fn);
  throw Error(str_cat("conv2d by_shape: kernel '", name, "' of '", key, "' is not registered"));
}

// Tries `first`, then `second`, as the dispatcher would.
template <class Fn, class... Args>
bool first_then(Fn* first, Fn* second, Args&... args) {
  return first(args...) || second(args...);
}

bool conv2d_by_shape(const Tensor& x, const Tensor& w, Tensor& y, const Conv2dParams& p) {
  static Conv2dKernel* igemm = registered<Conv2dKernel>("conv2d", "implicit_gemm");
  static Conv2dKernel* cudnn = registered<Conv2dKernel>("conv2d", "cudnn");
  return small_reduction(w) ? first_then(igemm, cudnn, x, w, y, p) : first_then(cudnn, igemm, x, w, y, p);
}

bool conv2d_backward_input_by_shape(const Tensor& grad_y, const Tensor& w, Tensor& grad_x, const Conv2dParams& p) {
  static Conv2dBackwardInputKernel* igemm =
      registered<Conv2dBackwardInputKernel>("conv2d.backward_input", "implicit_gemm");
  static Conv2dBackwardInputKernel* cudnn = registered<Conv2dBackwardInputKernel>("conv2d.backward_input", "cudnn");
  return first_then(cudnn, igemm, grad_y, w, grad_x, p);
}

bool conv2d_backward_weight_by_shape(const Tensor& x, const Tensor& grad_y, Tensor& grad_w, const Conv2dParams& p) {
  static Conv2dBackwardWeightKernel* igemm =
      registered<Conv2dBackwardWeightKernel>("conv2d.backward_weight", "implicit_gemm");
  static Conv2dBackwardWeightKernel* cudnn =
      registered<Conv2dBackwardWeightKernel>("conv2d.backward_weight", "cudnn");
  static Conv2dBackwardWeightKernel* small =
      registered<Conv2dBackwardWeightKernel>("conv2d.backward_weight", "nchw_small_filter");
  if (small_reduction(grad_w) && small(x, grad_y, grad_w, p)) return true;
  const bool ours = small_reduction(grad_w) || few_outputs_long_sums(grad_y, grad_w);
  return ours ? first_then(igemm, cudnn, x, grad_y, grad_w, p) : first_then(cudnn, igemm, x, grad_y, grad_w, p);
}

}  // namespace

void register_conv_by_shape_cuda() {
  // Priority 25: above cudnn (20), so the rule is the default; --kernel conv2d=cudnn still selects cuDNN.
  const char* what =
      "cuDNN, or implicit_gemm when C*KH*KW <= 16 (forward, backward_weight) or for a weight gradient of few "
      "outputs and long sums, nchw_small_filter first for NCHW weight gradients with C*KH*KW <= 16: a rule per shape";
  register_kernel(keys::conv2d, DeviceType::cuda, "by_shape", Priority::tuned + 5, what, conv2d_by_shape);
  register_kernel(keys::conv2d_backward_input, DeviceType::cuda, "by_shape", Priority::tuned + 5, what,
                  conv2d_backward_input_by_shape);
  register_kernel(keys::conv2d_backward_weight, DeviceType::cuda, "by_shape", Priority::tuned + 5, what,
                  conv2d_backward_weight_by_shape);
}

}  // namespace minidl
