// tests/test_conv_wgrad_nchw.cpp — nchw_small_filter (cuda/conv_wgrad_nchw_small_filter.cu), the NCHW
// weight gradient of filters with at most 32 weights per output channel, against the naive CPU kernel:
// each of its instantiations (4, 9, 16 and 32 sums per thread), strides and padding, one block per output
// channel (G = 1, written directly) and many (a partial per block, summed after), an empty batch; the same
// bits on every run; the calls it declines. (The op sweep of tests/test_cuda_kernels_vs_cpu.cpp holds it
// to its contract on the sweep's shapes; tests/test_conv_by_shape.cpp checks that by_shape picks it.)
#include <catch2/catch.hpp>

#include "core/dispatch.h"
#include "core/memory_format.h"
#include "core/random.h"
#include "ops/kernel_signatures.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

constexpr const char* kKernel = "nchw_small_filter";

Shape out_shape(const Shape& x, const Shape& w, const Conv2dParams& p) {
  return {x[0], w[0], (x[2] + 2 * p.pad_h - w[2]) / p.stride_h + 1, (x[3] + 2 * p.pad_w - w[3]) / p.stride_w + 1};
}

Tensor reference_grad_w(const Tensor& x, const Tensor& gy, const Shape& w, const Conv2dParams& p) {
  Tensor gw = empty(w);
  SelectionReset reset;
  select_kernel("conv2d", DeviceType::cpu, "naive");
  dispatch(keys::conv2d_backward_weight, Device::cpu(), x, gy, gw, p);
  return gw;
}

// grad_w on the GPU with the kernel selected for the weight-gradient stage (it must serve the call).
Tensor gpu_grad_w(const Tensor& x, const Tensor& gy, const Shape& w, const Conv2dParams& p) {
  const Device dev = Device::cuda(0);
  Tensor gw = full(w, 1.0, TensorOptions(DType::float32, dev));  // not zeros: an empty sum must write them
  SelectionReset reset;
  select_kernel("conv2d.backward_weight", DeviceType::cuda, kKernel);
  dispatch(keys::conv2d_backward_weight, dev, x.to(dev), gy.to(dev), gw, p);
  CHECK(last_kernel(keys::conv2d_backward_weight, DeviceType::cuda) == kKernel);
  return gw.to(Device::cpu());
}

// The kernel's registered function, called directly: true when it serves the call.
bool kernel_serves(const Tensor& x, const Tensor& gy, Tensor& gw, const Conv2dParams& p) {
  auto* kernel = cuda_kernel_function<Conv2dBackwardWeightKernel>("conv2d.backward_weight", kKernel);
  REQUIRE(kernel != nullptr);
  return kernel(x, gy, gw, p);
}

}  // namespace

TEST_CASE("conv2d nchw_small_filter: NCHW weight gradients of small filters match the CPU, the same bits every run",
          "[cuda][conv2d]") {
  if (!have_gpu()) return;
  manual_seed(83);
  struct Case {
    Shape x, w;
    Conv2dParams p;
  };
  const Case cases[] = {
      {{1, 1, 5, 5}, {3, 1, 2, 2}, conv_params(1, 1, 0, 0)},      // 4 weights per channel; 16 pixels: G = 1
      {{64, 1, 28, 28}, {32, 1, 3, 3}, conv_params(1, 1, 0, 0)},  // MNIST's conv1 at batch 64: 9, many blocks
      {{3, 1, 20, 17}, {5, 1, 4, 4}, conv_params(2, 1, 1, 2)},    // 16; strides and padding differ by axis
      {{4, 3, 33, 31}, {7, 3, 3, 3}, conv_params(1, 1, 1, 1)},    // 27 (an RGB image's 3 x 3): the 32 instance
      {{2, 2, 9, 9}, {33, 2, 4, 4}, conv_params(3, 3, 2, 2)},     // 32 exactly, 33 output channels
      {{2, 1, 1, 1}, {2, 1, 1, 1}, conv_params(1, 1, 0, 0)},      // one weight, one pixel per image
  };
  for (const Case& c : cases) {
    INFO("x " << shape_str(c.x) << " w " << shape_str(c.w) << " stride " << c.p.stride_h << "x" << c.p.stride_w
              << " pad " << c.p.pad_h << "x" << c.p.pad_w);
    const Tensor x = uniform(c.x, -1, 1, DType::float32), gy = uniform(out_shape(c.x, c.w, c.p), -1, 1, DType::float32);
    const Tensor ref = reference_grad_w(x, gy, c.w, c.p);
    const Tensor gw = gpu_grad_w(x, gy, c.w, c.p);
    const int64_t pixels = gy.shape()[0] * gy.shape()[2] * gy.shape()[3];
    // float32 FMAs over terms in [-1, 1]: the bound of tests/test_conv_wgrad_nhwc.cpp's FP32 kernel.
    CHECK(compare(gw, ref, 1e-4, 1e-5 + 2e-6 * static_cast<double>(pixels)) == "");
    CHECK(compare(gpu_grad_w(x, gy, c.w, c.p), gw, 0, 0) == "");
  }
  // An empty batch: every weight's sum is empty, so grad_w is zeros (the buffer held ones).
  const Shape w{4, 1, 3, 3};
  const Tensor gw = gpu_grad_w(empty({0, 1, 6, 6}), empty({0, 4, 4, 4}), w, conv_params(1, 1, 0, 0));
  CHECK(compare(gw, zeros(w), 0, 0) == "");
}

TEST_CASE("conv2d nchw_small_filter: declines channels-last tensors, more than 32 weights per channel, float64",
          "[cuda][conv2d]") {
  if (!have_gpu()) return;
  const Device dev = Device::cuda(0);
  const TensorOptions f32(DType::float32, dev);
  const Conv2dParams p = conv_params(1, 1, 0, 0);
  {  // 2 input channels, channels-last activations
    const Tensor x = copy_in_format(uniform({2, 2, 6, 6}, -1, 1, DType::float32, dev), MemoryFormat::channels_last);
    const Tensor gy = copy_in_format(uniform({2, 4, 4, 4}, -1, 1, DType::float32, dev), MemoryFormat::channels_last);
    Tensor gw = empty({4, 2, 3, 3}, f32);
    CHECK_FALSE(kernel_serves(x, gy, gw, p));
  }
  {  // 4 x 3 x 3 = 36 weights per output channel
    const Tensor x = uniform({2, 4, 6, 6}, -1, 1, DType::float32, dev), gy = uniform({2, 8, 4, 4}, -1, 1, DType::float32, dev);
    Tensor gw = empty({8, 4, 3, 3}, f32);
    CHECK_FALSE(kernel_serves(x, gy, gw, p));
  }
  {  // float64
    const TensorOptions f64(DType::float64, dev);
    const Tensor x = uniform({2, 1, 6, 6}, -1, 1, DType::float64, dev), gy = uniform({2, 4, 4, 4}, -1, 1, DType::float64, dev);
    Tensor gw = empty({4, 1, 3, 3}, f64);
    CHECK_FALSE(kernel_serves(x, gy, gw, p));
  }
}
