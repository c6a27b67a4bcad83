// tests/test_conv_by_shape.cpp — the GPU's per-shape convolution rule (cuda/conv_by_shape.cu): it is the
// default, and each stage gives exactly the bits of the kernel the rule names (for a reduction of at most
// 16 terms implicit_gemm in forward and nchw_small_filter in backward_weight; implicit_gemm for weight
// gradients of few outputs and long sums; cuDNN otherwise). Exact equality holds because the kernels are deterministic for a fixed shape:
// ours always, cuDNN with --deterministic (one algorithm, chosen by heuristics). Its
// numerics against the reference are covered by the all-kernels sweeps (tests/test_conv_pool.cpp,
// tests/test_cuda_kernels_vs_cpu.cpp).
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/determinism.h"
#include "core/dispatch.h"
#include "tests/skips.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

struct Stages {
  Tensor y, grad_x, grad_w;
};

// The three stages of one convolution, with kernel `name` selected for conv2d on the GPU.
Stages run_stages(const std::string& name, const Tensor& x, const Tensor& w, const Tensor& gy, const Conv2dParams& p) {
  SelectionReset reset;
  select_kernel("conv2d", DeviceType::cuda, name);
  Stages s;
  s.y = empty(gy.shape(), gy.options());
  s.grad_x = empty(x.shape(), x.options());
  s.grad_w = empty(w.shape(), w.options());
  dispatch<Conv2dKernel>("conv2d", x.device(), x, w, s.y, p);
  dispatch<Conv2dBackwardInputKernel>("conv2d.backward_input", x.device(), gy, w, s.grad_x, p);
  dispatch<Conv2dBackwardWeightKernel>("conv2d.backward_weight", x.device(), x, gy, s.grad_w, p);
  CHECK(last_kernel("conv2d", DeviceType::cuda) == name);
  CHECK(last_kernel("conv2d.backward_weight", DeviceType::cuda) == name);
  return s;
}

// grad_w alone, with kernel `name` selected for conv2d's weight-gradient stage on the GPU (a kernel that
// serves only that stage: nchw_small_filter).
Tensor run_weight_stage(const std::string& name, const Tensor& x, const Tensor& w, const Tensor& gy,
                        const Conv2dParams& p) {
  SelectionReset reset;
  select_kernel("conv2d.backward_weight", DeviceType::cuda, name);
  Tensor grad_w = empty(w.shape(), w.options());
  dispatch<Conv2dBackwardWeightKernel>("conv2d.backward_weight", x.device(), x, gy, grad_w, p);
  CHECK(last_kernel("conv2d.backward_weight", DeviceType::cuda) == name);
  return grad_w;
}

}  // namespace

TEST_CASE("cuda conv2d by_shape: the default, with the bits of the kernel its rule names", "[cuda][conv2d]") {
  if (!have_gpu()) return;
  const auto names = kernels_for("conv2d", DeviceType::cuda);
  if (std::find(names.begin(), names.end(), "by_shape") == names.end()) {
    skip_test("conv2d by_shape is not registered (a build without cuDNN)");
    return;
  }
  REQUIRE(KernelRegistry::instance().candidates("conv2d", DeviceType::cuda).front()->name == "by_shape");
  struct DeterministicForThisCase {
    bool before = deterministic_algorithms();
    DeterministicForThisCase() { set_deterministic_algorithms(true); }
    ~DeterministicForThisCase() { set_deterministic_algorithms(before); }
  } deterministic;
  const Device gpu = Device::cuda(0);
  Conv2dParams p;  // stride 1, no padding
  struct Case {
    Shape x, w;
    const char* forward;  // the kernel the rule names for the forward
    const char* weight;   // and for backward_weight
  };
  // MNIST's first convolution (1 x 3 x 3 = 9 terms) and 16 terms exactly: the implicit GEMM's forward, and
  // nchw_small_filter's weight gradient. Then 2 x 3 x 3 = 18 terms and MNIST's second convolution at
  // batches 8 and 64: cuDNN's, their weight gradients' sums (800 to 36,864 pixels) too short for their
  // outputs (288 to 18,432). Weight gradients of few outputs and long sums are the implicit GEMM's: 288 weights (36 per
  // output channel) over 6,400 pixels, and MNIST's second at batch 512 (18,432 weights over 294,912 pixels:
  // 16 times, the bound). Not 19,008 weights (33 channels), though their sums are over 331,776 pixels:
  // above the bound on outputs.
  for (const Case& c : {Case{{8, 1, 12, 12}, {32, 1, 3, 3}, "implicit_gemm", "nchw_small_filter"},
                        Case{{8, 1, 10, 10}, {8, 1, 4, 4}, "implicit_gemm", "nchw_small_filter"},
                        Case{{8, 2, 12, 12}, {16, 2, 3, 3}, "cudnn", "cudnn"},
                        Case{{8, 32, 12, 12}, {64, 32, 3, 3}, "cudnn", "cudnn"},
                        Case{{64, 32, 26, 26}, {64, 32, 3, 3}, "cudnn", "cudnn"},
                        Case{{64, 4, 12, 12}, {8, 4, 3, 3}, "cudnn", "implicit_gemm"},
                        Case{{512, 32, 26, 26}, {64, 32, 3, 3}, "cudnn", "implicit_gemm"},
                        Case{{36, 33, 98, 98}, {64, 33, 3, 3}, "cudnn", "cudnn"}}) {
    INFO("x " << shape_str(c.x) << ", w " << shape_str(c.w));
    const Tensor x = uniform(c.x, -1, 1, DType::float32).to(gpu);
    const Tensor w = uniform(c.w, -1, 1, DType::float32).to(gpu);
    const Shape y_shape{c.x[0], c.w[0], c.x[2] - c.w[2] + 1, c.x[3] - c.w[3] + 1};
    const Tensor gy = uniform(y_shape, -1, 1, DType::float32).to(gpu);
    const Stages rule = run_stages("by_shape", x, w, gy, p);
    const Stages forward = run_stages(c.forward, x, w, gy, p);
    const Tensor weight = run_weight_stage(c.weight, x, w, gy, p);
    const Stages cudnn = run_stages("cudnn", x, w, gy, p);
    CHECK(compare(rule.y, forward.y, 0, 0) == "");
    CHECK(compare(rule.grad_w, weight, 0, 0) == "");
    CHECK(compare(rule.grad_x, cudnn.grad_x, 0, 0) == "");  // backward_input: cuDNN always
  }
}
