// tests/test_conv_bias_relu.cpp — conv2d_bias_relu (ops/conv_bias_relu.cpp): the op against
// relu(conv2d(x, w, b)) through its fused path (the naive CPU kernel, selected) and its unfused one,
// values and gradients; a float64 gradcheck of the fused path; which path runs (a conv2d selection keeps
// the unfused one); its errors; and on a GPU the cuDNN graph kernel against the naive CPU kernel, in NCHW
// and channels-last, strict FP32 and TF32, and the op's gradients against the CPU's. The GPU cases
// ([cuda]) return after a warning when no GPU is usable.
#include <catch2/catch.hpp>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/memory_format.h"
#include "core/precision.h"
#include "core/random.h"
#include "ops/op_checks.h"
#include "nn/layers.h"
#include "ops/ops.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

Conv2dParams params(int stride, int pad) {
  Conv2dParams p;
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  return p;
}

// The output and the gradients of sum(out * g) for out = f(x, w, b), all on x's device.
struct Result {
  Tensor out, gx, gw, gb;
};
template <class F>
Result run(F f, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& g) {
  Tensor xr = x.detach(), wr = w.detach(), br = b.detach();
  xr.requires_grad_();
  wr.requires_grad_();
  br.requires_grad_();
  Result r;
  r.out = f(xr, wr, br);
  sum(mul(r.out, g)).backward();
  r.gx = xr.grad(), r.gw = wr.grad(), r.gb = br.grad();
  return r;
}

std::string compare_all(const Result& got, const Result& ref, double rtol, double atol) {
  for (const auto& [name, a, b] : {std::tuple<const char*, Tensor, Tensor>{"out", got.out, ref.out},
                                   {"grad x", got.gx, ref.gx},
                                   {"grad w", got.gw, ref.gw},
                                   {"grad bias", got.gb, ref.gb}}) {
    const std::string diff = compare(a, b, rtol, atol);
    if (!diff.empty()) return std::string(name) + ": " + diff;
  }
  return "";
}

Pool2dParams pool_params(int kernel, int stride, int pad) {
  Pool2dParams q;
  q.kernel_h = q.kernel_w = kernel;
  q.stride_h = q.stride_w = stride;
  q.pad_h = q.pad_w = pad;
  return q;
}

// A kernel above the reference level that counts its calls and declines them.
int g_counted = 0;
bool counting_decline(const Tensor&, const Tensor&, const Tensor&, Tensor&, const Conv2dParams&) {
  ++g_counted;
  return false;
}

}  // namespace

TEST_CASE("conv2d_bias_relu equals relu(conv2d(x, w, b)), fused (naive, selected) and unfused, gradients included",
          "[conv2d][autograd]") {
  manual_seed(81);
  struct Case {
    Shape x, w;
    int stride, pad;
  };
  for (const Case& c : {Case{{2, 3, 9, 8}, {4, 3, 3, 3}, 1, 0}, Case{{3, 2, 7, 9}, {5, 2, 3, 2}, 2, 1},
                        Case{{1, 1, 5, 5}, {2, 1, 1, 1}, 1, 0}}) {
    INFO("x " << shape_str(c.x) << " w " << shape_str(c.w) << " stride " << c.stride << " pad " << c.pad);
    const Conv2dParams p = params(c.stride, c.pad);
    const Tensor x = uniform(c.x, -1, 1), w = uniform(c.w, -1, 1), b = uniform({c.w[0]}, -0.5, 0.5);
    const Tensor g = uniform(conv2d_output_shape(c.x, c.w, p), -1, 1);
    const Result ref = run([&](const Tensor& a, const Tensor& k, const Tensor& bias) { return relu(conv2d(a, k, bias, p)); },
                           x, w, b, g);
    // Some outputs are zeroed by the ReLU and some are not: both sides of the mask are checked.
    const double positive = sum(gt(ref.out, zeros_like(ref.out))).item<double>();
    CHECK(positive > 0);
    CHECK(positive < static_cast<double>(ref.out.numel()));
    auto fused = [&](const Tensor& a, const Tensor& k, const Tensor& bias) { return conv2d_bias_relu(a, k, bias, p); };
    // Default selection: the CPU has only the reference kernel, which is not used unasked: unfused.
    CHECK(compare_all(run(fused, x, w, b, g), ref, 1e-12, 1e-12) == "");
    // Selected by name: the naive kernel serves the forward, the fused backward follows.
    SelectionReset reset;
    select_kernel("conv2d_bias_relu", DeviceType::cpu, "naive");
    const Result got = run(fused, x, w, b, g);
    CHECK(KernelRegistry::instance().last_used("conv2d_bias_relu", DeviceType::cpu) == "naive");
    CHECK(compare_all(got, ref, 1e-12, 1e-12) == "");
  }
}

TEST_CASE("conv2d_bias_relu: finite-difference gradients in float64 through the fused path",
          "[conv2d][gradcheck]") {
  manual_seed(82);
  SelectionReset reset;
  select_kernel("conv2d_bias_relu", DeviceType::cpu, "naive");
  Tensor x = uniform({2, 2, 6, 5}, -1, 1), w = uniform({3, 2, 3, 3}, -1, 1), b = uniform({3}, -0.5, 0.5);
  for (Tensor* t : {&x, &w, &b}) t->requires_grad_();
  const Conv2dParams p = params(2, 1);
  CHECK(gradcheck([&](const std::vector<Tensor>& in) { return conv2d_bias_relu(in[0], in[1], in[2], p); }, {x, w, b}) ==
        "");
  CHECK(KernelRegistry::instance().last_used("conv2d_bias_relu", DeviceType::cpu) == "naive");
}

TEST_CASE("conv2d_bias_relu: kernels above the reference serve it, unless a conv2d kernel is selected",
          "[conv2d][dispatch]") {
  manual_seed(83);
  register_kernel(keys::conv2d_bias_relu, DeviceType::cpu, "counting", Priority::tuned, "registered by a test",
                  counting_decline);
  const Tensor x = uniform({2, 3, 6, 6}, -1, 1, DType::float32), w = uniform({4, 3, 3, 3}, -1, 1, DType::float32);
  const Tensor b = uniform({4}, -0.5, 0.5, DType::float32);
  const Conv2dParams p = params(1, 0);
  const Tensor ref = relu(conv2d(x, w, b, p));
  {
    SelectionReset reset;
    g_counted = 0;
    CHECK(compare(conv2d_bias_relu(x, w, b, p), ref, 1e-6, 1e-6) == "");
    CHECK(g_counted == 1);  // offered the call, declined it: the unfused ops served
    select_kernel("conv2d", DeviceType::cpu, "naive");
    CHECK(compare(conv2d_bias_relu(x, w, b, p), ref, 1e-6, 1e-6) == "");
    CHECK(g_counted == 1);  // a conv2d selection: not even offered
    CHECK(KernelRegistry::instance().last_used("conv2d", DeviceType::cpu) == "naive");
    reset_kernel_selection();
    select_kernel("conv2d.forward", DeviceType::cpu, "naive");
    conv2d_bias_relu(x, w, b, p);
    CHECK(g_counted == 1);  // the forward stage alone, too
  }
  KernelRegistry::instance().remove("conv2d_bias_relu", DeviceType::cpu, "counting");
}

TEST_CASE("conv2d_bias_relu: errors name the op and the shapes", "[conv2d]") {
  const Tensor x = uniform({2, 3, 6, 6}, -1, 1), w = uniform({4, 3, 3, 3}, -1, 1);
  const Conv2dParams p = params(1, 0);
  CHECK_THROWS_WITH(conv2d_bias_relu(x, w, Tensor(), p), Catch::Contains("conv2d_bias_relu: needs a bias"));
  CHECK_THROWS_WITH(conv2d_bias_relu(x, w, uniform({3}, -1, 1), p),
                    Catch::Contains("conv2d_bias_relu: bias of shape [3] does not match the weight [4,3,3,3] (expected [4])"));
  CHECK_THROWS_WITH(conv2d_bias_relu(uniform({2, 5, 6, 6}, -1, 1), w, uniform({4}, -1, 1), p),
                    Catch::Contains("channels"));
}

TEST_CASE("cuda conv2d_bias_relu cudnn_graph matches the naive CPU kernel (NCHW and channels-last, FP32 and TF32)",
          "[cuda][conv2d]") {
  if (!have_gpu()) return;
  if (kernels_for("conv2d_bias_relu", DeviceType::cuda).empty()) {
    WARN("no conv2d_bias_relu kernel on the GPU (built without cuDNN): skipped");
    return;
  }
  manual_seed(84);
  const Device gpu = Device::cuda(0);
  struct Case {
    Shape x, w;
    int stride, pad;
  };
  const Precision before = float32_precision();
  for (const Precision precision : {Precision::fp32, Precision::tf32})
    for (const bool nhwc : {false, true})
      for (const Case& c : {Case{{8, 32, 14, 14}, {16, 32, 3, 3}, 1, 0}, Case{{4, 1, 28, 28}, {32, 1, 3, 3}, 1, 0},
                            Case{{3, 8, 11, 13}, {8, 8, 3, 3}, 2, 1}}) {
        INFO(precision_name(precision) << (nhwc ? " channels-last" : " NCHW") << " x " << shape_str(c.x) << " w "
                                       << shape_str(c.w));
        set_float32_precision(precision);
        const Conv2dParams p = params(c.stride, c.pad);
        const Shape ys = conv2d_output_shape(c.x, c.w, p);
        const Tensor x = uniform(c.x, -1, 1, DType::float32), w = uniform(c.w, -0.3, 0.3, DType::float32);
        const Tensor b = uniform({c.w[0]}, -0.5, 0.5, DType::float32);
        Tensor ref = empty(ys, DType::float32);
        dispatch<Conv2dBiasReluKernel>("conv2d_bias_relu", Device::cpu(), x, w, b, ref, p);
        const MemoryFormat format = nhwc ? MemoryFormat::channels_last : MemoryFormat::contiguous;
        const Tensor xd = copy_in_format(x.to(gpu), format);
        Tensor y = empty_in_format(ys, TensorOptions(DType::float32, gpu), format);
        fill_(y, -7.0);
        SelectionReset reset;
        select_kernel("conv2d_bias_relu", DeviceType::cuda, "cudnn_graph");
        const bool served = nhwc ? dispatch_channels_last(keys::conv2d_bias_relu, gpu, xd, w.to(gpu), b.to(gpu), y, p)
                                 : dispatch_fused(keys::conv2d_bias_relu, gpu, xd, w.to(gpu), b.to(gpu), y, p);
        // Strict FP32 on NCHW always has an engine (cuDNN's FMA ones); strict FP32 channels-last may have
        // none (an H100 has none for 32 input channels), and then the kernel declines.
        if (!nhwc || precision == Precision::tf32) CHECK(served);
        if (!served) continue;
        CHECK((nhwc ? is_channels_last(y) : y.is_contiguous()));
        // K = C*KH*KW products per output: TF32 within tests/test_util.h's bound (mean |x w| = 0.5 * 0.15),
        // FP32 to float rounding.
        const int64_t k = c.w[1] * c.w[2] * c.w[3];
        const double rtol = precision == Precision::tf32 ? kTf32Rtol : 1e-5;
        const double atol = precision == Precision::tf32 ? tf32_atol_bound(k, 0.5 * 0.15) : 1e-5;
        CHECK(compare(y, ref, rtol, atol) == "");
      }
  set_float32_precision(before);
}

TEST_CASE("cuda conv2d_bias_relu: outputs and gradients match the CPU, fused or not", "[cuda][conv2d][autograd]") {
  if (!have_gpu()) return;
  manual_seed(85);
  const Device gpu = Device::cuda(0);
  for (const bool nhwc : {false, true}) {
    INFO((nhwc ? "channels-last" : "NCHW"));
    const Conv2dParams p = params(1, 1);
    const Tensor x = uniform({4, 6, 10, 12}, -1, 1, DType::float32), w = uniform({8, 6, 3, 3}, -0.3, 0.3, DType::float32);
    const Tensor b = uniform({8}, -0.5, 0.5, DType::float32);
    const Tensor g = uniform({4, 8, 10, 12}, -1, 1, DType::float32);
    auto fused = [&](const Tensor& a, const Tensor& k, const Tensor& bias) { return conv2d_bias_relu(a, k, bias, p); };
    const Result ref = run(fused, x, w, b, g);
    const MemoryFormat format = nhwc ? MemoryFormat::channels_last : MemoryFormat::contiguous;
    const Result got = run(fused, copy_in_format(x.to(gpu), format), w.to(gpu), b.to(gpu), g.to(gpu));
    CHECK(got.out.device() == gpu);
    CHECK(compare_all(got, ref, 1e-4, 1e-4) == "");
  }
}

// ------------------------------------------------------------------------------ then max pooling

// The pooled backward must give the unfused one's dL/dz exactly, so x's and w's gradients are the same bits;
// only the bias gradient sums in another order. Windows of 2x2 (disjoint), 3x3 stride 2 with padding and
// 2x2 stride 1 (overlapping: maxima shared by several windows), on odd sizes that leave rows unpooled.
TEST_CASE("conv2d_bias_relu_max_pool2d equals max_pool2d(conv2d_bias_relu(...)): the same bits but the bias gradient",
          "[conv2d][pool][autograd]") {
  manual_seed(86);
  const Conv2dParams p = params(1, 1);
  for (const MemoryFormat format : {MemoryFormat::contiguous, MemoryFormat::channels_last})
    for (const Pool2dParams& q : {pool_params(2, 2, 0), pool_params(3, 2, 1), pool_params(2, 1, 0)}) {
      INFO((format == MemoryFormat::channels_last ? "channels-last" : "NCHW")
           << " pool k" << q.kernel_h << "s" << q.stride_h << "p" << q.pad_h);
      const Tensor x = copy_in_format(uniform({3, 2, 9, 7}, -1, 1), format);
      const Tensor w = uniform({4, 2, 3, 3}, -1, 1), b = uniform({4}, -0.5, 0.5);
      const Shape out_shape = pool2d_output_shape("test", conv2d_output_shape(x.shape(), w.shape(), p), q);
      const Tensor g = uniform(out_shape, -1, 1);
      const Result ref = run([&](const Tensor& a, const Tensor& k, const Tensor& bias) {
        return max_pool2d(conv2d_bias_relu(a, k, bias, p), q);
      }, x, w, b, g);
      const Result got = run([&](const Tensor& a, const Tensor& k, const Tensor& bias) {
        return conv2d_bias_relu_max_pool2d(a, k, bias, p, q);
      }, x, w, b, g);
      // Both sides of the mask are exercised: some pooled outputs are zero, some are not.
      const double positive = sum(gt(ref.out, zeros_like(ref.out))).item<double>();
      CHECK(positive > 0);
      CHECK(positive < static_cast<double>(ref.out.numel()));
      CHECK(got.out.shape() == out_shape);
      CHECK(suggest_memory_format(got.out) == format);
      CHECK(compare(got.out, ref.out, 0, 0) == "");
      CHECK(compare(got.gx, ref.gx, 0, 0) == "");
      CHECK(compare(got.gw, ref.gw, 0, 0) == "");
      CHECK(compare(got.gb, ref.gb, 1e-12, 1e-12) == "");
    }
}

TEST_CASE("conv2d_bias_relu_max_pool2d: finite-difference gradients in float64", "[conv2d][pool][gradcheck]") {
  manual_seed(87);
  Tensor x = uniform({2, 2, 7, 6}, -1, 1), w = uniform({3, 2, 3, 3}, -1, 1), b = uniform({3}, -0.5, 0.5);
  for (Tensor* t : {&x, &w, &b}) t->requires_grad_();
  const Conv2dParams p = params(1, 0);
  for (const Pool2dParams& q : {pool_params(2, 2, 0), pool_params(3, 2, 1)}) {
    INFO("pool k" << q.kernel_h << "s" << q.stride_h << "p" << q.pad_h);
    CHECK(gradcheck([&](const std::vector<Tensor>& in) { return conv2d_bias_relu_max_pool2d(in[0], in[1], in[2], p, q); },
                    {x, w, b}) == "");
  }
}

TEST_CASE("Sequential runs Conv2d, ReLU, MaxPool2d as conv2d_bias_relu_max_pool2d, with the unfused results",
          "[nn][conv2d][pool]") {
  manual_seed(88);
  Sequential net;
  net.push_back(std::make_shared<Conv2d>(2, 3, 3, 1, 1));
  net.push_back(std::make_shared<ReLU>());
  net.push_back(std::make_shared<MaxPool2d>(2));
  const Tensor x = uniform({2, 2, 8, 8}, -1, 1, DType::float32);
  auto forward_backward = [&](bool fuse) {
    set_relu_fusion(fuse);
    net.zero_grad();
    const Tensor out = net(x);
    set_relu_fusion(true);
    REQUIRE(out.impl()->grad_fn != nullptr);
    const std::string node = out.impl()->grad_fn->name;
    sum(mul(out, out)).backward();
    std::vector<Tensor> all{out.detach()};
    for (const Tensor& t : net.parameters()) all.push_back(t.grad());
    return std::make_pair(node, all);
  };
  const auto unfused = forward_backward(false);
  const auto fused = forward_backward(true);
  CHECK(unfused.first == "MaxPool2dBackward");
  CHECK(fused.first == "Conv2dBiasReluMaxPool2dBackward");
  REQUIRE(fused.second.size() == 3);
  for (size_t i = 0; i < fused.second.size(); ++i) {
    INFO("tensor " << i << " (0: the output, 1: the weight's gradient, 2: the bias's)");
    CHECK(compare(fused.second[i], unfused.second[i], 1e-5, 1e-6) == "");
  }
}

TEST_CASE("cuda conv2d_bias_relu_max_pool2d: outputs and gradients match the CPU", "[cuda][conv2d][pool][autograd]") {
  if (!have_gpu()) return;
  manual_seed(89);
  const Device gpu = Device::cuda(0);
  const Conv2dParams p = params(1, 0);
  for (const bool nhwc : {false, true})
    for (const Pool2dParams& q : {pool_params(2, 2, 0), pool_params(3, 2, 1)}) {
      INFO((nhwc ? "channels-last" : "NCHW") << " pool k" << q.kernel_h << "s" << q.stride_h << "p" << q.pad_h);
      const Tensor x = uniform({4, 6, 13, 12}, -1, 1, DType::float32), w = uniform({8, 6, 3, 3}, -0.3, 0.3, DType::float32);
      const Tensor b = uniform({8}, -0.5, 0.5, DType::float32);
      const Shape out_shape = pool2d_output_shape("test", conv2d_output_shape(x.shape(), w.shape(), p), q);
      const Tensor g = uniform(out_shape, -1, 1, DType::float32);
      auto fused = [&](const Tensor& a, const Tensor& k, const Tensor& bias) {
        return conv2d_bias_relu_max_pool2d(a, k, bias, p, q);
      };
      const Result ref = run(fused, x, w, b, g);
      const MemoryFormat format = nhwc ? MemoryFormat::channels_last : MemoryFormat::contiguous;
      const Result got = run(fused, copy_in_format(x.to(gpu), format), w.to(gpu), b.to(gpu), g.to(gpu));
      CHECK(got.out.device() == gpu);
      CHECK(compare_all(got, ref, 1e-4, 1e-4) == "");
    }
}
