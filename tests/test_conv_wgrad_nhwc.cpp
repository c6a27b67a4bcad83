// tests/test_conv_wgrad_nhwc.cpp — the channels-last 3x3 weight gradients of cuda/conv_wgrad_nhwc_3x3.cu
// against the naive CPU kernel. nhwc_3x3_tf32: widths that 32 divides and that it does not (a strip's last
// columns), one row and odd heights (the ring of three x rows), more strips than blocks, several channel
// tiles. nhwc_3x3_few_channels: 1 to 4 input channels, output channels that fill no warp, widths that
// its 16-pixel groups do not divide. Both: the same bits on every run; which calls they serve and which
// they leave to cuDNN. (The op sweep of tests/test_cuda_kernels_vs_cpu.cpp checks that they decline NCHW
// calls.)
#include <catch2/catch.hpp>

#include <cmath>

#include "core/dispatch.h"
#include "core/memory_format.h"
#include "core/precision.h"
#include "core/random.h"
#include "ops/kernel_signatures.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

constexpr const char* kKernel = "nhwc_3x3_tf32";
constexpr const char* kFewChannels = "nhwc_3x3_few_channels";

Conv2dParams same_3x3() {
  Conv2dParams p;
  p.pad_h = p.pad_w = 1;
  return p;
}

Tensor input(const Shape& shape, const Device& device) { return uniform(shape, -1, 1, DType::float32, device); }

// grad_w of x [N, C, H, W] and grad_y [N, K, H, W] by the naive CPU kernel (on CPU copies).
Tensor reference_grad_w(const Tensor& x, const Tensor& gy, int64_t K) {
  Tensor gw = empty({K, x.shape()[1], 3, 3});
  SelectionReset reset;
  select_kernel("conv2d", DeviceType::cpu, "naive");
  dispatch(keys::conv2d_backward_weight, Device::cpu(), x, gy, gw, same_3x3());
  return gw;
}

// grad_w on the GPU from channels-last copies, through the channels-last dispatch.
Tensor gpu_grad_w(const Tensor& x, const Tensor& gy, int64_t K, const Device& dev) {
  Tensor gw = empty({K, x.shape()[1], 3, 3}, TensorOptions(DType::float32, dev));
  REQUIRE(dispatch_channels_last(keys::conv2d_backward_weight, dev, copy_in_format(x.to(dev), MemoryFormat::channels_last),
                                 copy_in_format(gy.to(dev), MemoryFormat::channels_last), gw, same_3x3()));
  return gw;
}

}  // namespace

TEST_CASE("conv2d nhwc_3x3_tf32: channels-last 3x3 weight gradients within TF32's error of the CPU",
          "[cuda][conv2d][memory_format]") {
  if (!have_gpu()) return;
  const Device dev = Device::cuda(0);
  manual_seed(71);
  struct Case {
    Shape x;
    int64_t K;
  };
  const Case cases[] = {
      {{2, 32, 9, 7}, 32},     // W < 32: one strip, mostly zeros; odd H
      {{3, 64, 5, 40}, 32},    // W = 40: a full strip and one of 8 columns; two c tiles
      {{2, 32, 1, 33}, 64},    // one row (rows -1 and 1 are padding); two k tiles
      {{16, 32, 12, 96}, 32},  // 48 strips: blocks take several
      {{1, 96, 3, 64}, 96},    // 3 x 3 channel tiles: C x K above kTf32MaxCK, so selected by name
  };
  const PrecisionScope tf32(Precision::tf32);
  for (const Case& c : cases) {
    INFO("x " << shape_str(c.x) << " K " << c.K);
    const Shape ys = {c.x[0], c.K, c.x[2], c.x[3]};
    const Tensor x = input(c.x, Device::cpu()), gy = input(ys, Device::cpu());
    const Tensor ref = reference_grad_w(x, gy, c.K);  // (it resets the kernel selection when done)
    SelectionReset reset;
    if (c.x[1] * c.K > 4096) select_kernel("conv2d.backward_weight", DeviceType::cuda, kKernel);
    const Tensor gw = gpu_grad_w(x, gy, c.K, dev);
    CHECK(last_kernel(keys::conv2d_backward_weight, DeviceType::cuda) == kKernel);
    // The sum has N * H * W terms per weight, each a product of two TF32-rounded values of |v| <= 1.
    CHECK(compare(gw.to(Device::cpu()), ref, kTf32Rtol, tf32_atol_bound(c.x[0] * c.x[2] * c.x[3])) == "");
    // The partials are added in a fixed order: the same bits again.
    const Tensor again = gpu_grad_w(x, gy, c.K, dev);
    CHECK(compare(again, gw, 0, 0) == "");
  }
}

TEST_CASE("conv2d nhwc_3x3_tf32: serves under TF32 and BF16; strict FP32, other filters and channel counts go "
          "to cuDNN",
          "[cuda][conv2d][memory_format]") {
  if (!have_gpu()) return;
  const Device dev = Device::cuda(0);
  manual_seed(73);
  const Tensor x = input({2, 32, 6, 10}, Device::cpu()), gy = input({2, 32, 6, 10}, Device::cpu());
  const Tensor ref = reference_grad_w(x, gy, 32);
  {
    const PrecisionScope bf16(Precision::bf16);
    const Tensor gw = gpu_grad_w(x, gy, 32, dev);
    CHECK(last_kernel(keys::conv2d_backward_weight, DeviceType::cuda) == kKernel);
    CHECK(compare(gw.to(Device::cpu()), ref, kTf32Rtol, tf32_atol_bound(2 * 6 * 10)) == "");
  }
  {
    const PrecisionScope fp32(Precision::fp32);
    const Tensor gw = gpu_grad_w(x, gy, 32, dev);
    CHECK(last_kernel(keys::conv2d_backward_weight, DeviceType::cuda) != kKernel);
    CHECK(compare(gw.to(Device::cpu()), ref, 1e-4, 1e-4) == "");
  }
  const PrecisionScope tf32(Precision::tf32);
  {  // 16 input channels: not a multiple of 32
    const Tensor x16 = input({2, 16, 6, 10}, Device::cpu());
    const Tensor gw = gpu_grad_w(x16, gy, 32, dev);
    CHECK(last_kernel(keys::conv2d_backward_weight, DeviceType::cuda) != kKernel);
    CHECK(compare(gw.to(Device::cpu()), reference_grad_w(x16, gy, 32), kTf32Rtol, tf32_atol_bound(2 * 6 * 10)) ==
          "");
  }
  {  // 64 x 64 channels: at kTf32MaxCK, still this kernel's
    const Tensor x64 = input({2, 64, 6, 10}, Device::cpu()), gy64 = input({2, 64, 6, 10}, Device::cpu());
    const Tensor gw = gpu_grad_w(x64, gy64, 64, dev);
    CHECK(last_kernel(keys::conv2d_backward_weight, DeviceType::cuda) == kKernel);
    CHECK(compare(gw.to(Device::cpu()), reference_grad_w(x64, gy64, 64), kTf32Rtol, tf32_atol_bound(2 * 6 * 10)) ==
          "");
  }
  {  // 64 -> 128 channels: above kTf32MaxCK, cuDNN's unless selected
    const Tensor x64 = input({2, 64, 6, 10}, Device::cpu()), gy128 = input({2, 128, 6, 10}, Device::cpu());
    const Tensor gw = gpu_grad_w(x64, gy128, 128, dev);
    CHECK(last_kernel(keys::conv2d_backward_weight, DeviceType::cuda) != kKernel);
    CHECK(compare(gw.to(Device::cpu()), reference_grad_w(x64, gy128, 128), kTf32Rtol,
                  tf32_atol_bound(2 * 6 * 10)) == "");
  }
  {  // stride 2: not this kernel's
    Conv2dParams p = same_3x3();
    p.stride_h = p.stride_w = 2;
    const Tensor gy2 = input({2, 32, 3, 5}, dev);
    Tensor gw = empty({32, 32, 3, 3}, TensorOptions(DType::float32, dev));
    REQUIRE(dispatch_channels_last(keys::conv2d_backward_weight, dev,
                                   copy_in_format(x.to(dev), MemoryFormat::channels_last),
                                   copy_in_format(gy2, MemoryFormat::channels_last), gw, p));
    CHECK(last_kernel(keys::conv2d_backward_weight, DeviceType::cuda) != kKernel);
  }
}

TEST_CASE("conv2d nhwc_3x3_few_channels: channels-last 3x3 weight gradients of 1 to 4 input channels match the CPU, "
          "under every precision",
          "[cuda][conv2d][memory_format]") {
  if (!have_gpu()) return;
  const Device dev = Device::cuda(0);
  manual_seed(79);
  struct Case {
    Shape x;
    int64_t K;
    Precision precision;
  };
  const Case cases[] = {
      {{2, 1, 9, 7}, 32, Precision::fp32},    // W < 16: one group, mostly beyond the row
      {{3, 3, 5, 40}, 32, Precision::tf32},   // W = 40: 16 + 16 + 8; the captcha model's 3 channels
      {{2, 2, 1, 33}, 40, Precision::bf16},   // one row; K = 40: a second tile of 8 lanes
      {{16, 4, 12, 96}, 64, Precision::fp32}, // many rows per warp; 4 channels
  };
  for (const Case& c : cases) {
    INFO("x " << shape_str(c.x) << " K " << c.K);
    const PrecisionScope precision(c.precision);
    const Shape ys = {c.x[0], c.K, c.x[2], c.x[3]};
    const Tensor x = input(c.x, Device::cpu()), gy = input(ys, Device::cpu());
    const Tensor ref = reference_grad_w(x, gy, c.K);
    const Tensor gw = gpu_grad_w(x, gy, c.K, dev);
    CHECK(last_kernel(keys::conv2d_backward_weight, DeviceType::cuda) == kFewChannels);
    // float32 FMAs, |terms| <= 1: the bound of the FP32 kernels' sweep (tests/test_cuda_kernels_vs_cpu.cpp).
    CHECK(compare(gw.to(Device::cpu()), ref, 1e-4, 1e-5 + 2e-6 * static_cast<double>(c.x[0] * c.x[2] * c.x[3])) ==
          "");
    const Tensor again = gpu_grad_w(x, gy, c.K, dev);
    CHECK(compare(again, gw, 0, 0) == "");
  }
  // Five input channels: not this kernel's.
  const PrecisionScope tf32(Precision::tf32);
  const Tensor x5 = input({2, 5, 6, 10}, Device::cpu()), gy = input({2, 32, 6, 10}, Device::cpu());
  const Tensor gw = gpu_grad_w(x5, gy, 32, dev);
  CHECK(last_kernel(keys::conv2d_backward_weight, DeviceType::cuda) != kFewChannels);
  CHECK(compare(gw.to(Device::cpu()), reference_grad_w(x5, gy, 32), kTf32Rtol, tf32_atol_bound(2 * 6 * 10)) == "");
}
