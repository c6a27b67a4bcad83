// tests/test_bias_relu.cpp — the fused bias + ReLU: every kernel on every device against the naive CPU
// reference (forward and backward, both layouts, float32 and float64, sizes large enough for the threaded
// CPU paths and the GPU's chunked sums), the op against the same layer written with add and relu (values
// and gradients), a float64 gradcheck, its errors, and the ReLU fusion pass of Sequential (nn/fuse_relu.h,
// with batch_norm_relu, tested with the norm ops): which pairs it fuses, and that the model computes the
// same outputs and gradients either way, on the CPU and on a GPU. The GPU cases ([cuda]) return after a
// warning when no GPU is usable.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/random.h"
#include "nn/fuse_relu.h"
#include "nn/layers.h"
#include "ops/kernel_signatures.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

struct Sizes {
  int64_t outer, channels, inner;
};

// Odd sizes of both layouts (inner 1: after a linear layer), and above the 32k elements where the omp
// kernel goes parallel, in each of its two backward paths. On a GPU, the last three split each channel's
// sum over several blocks (cuda/bias_relu.cu), with a ragged last chunk, and [701, 67, 1] has a partial
// group of 32 columns.
std::vector<Sizes> sweep_sizes() {
  return {{3, 5, 7}, {4, 6, 1}, {1, 1, 1}, {2, 3, 20011}, {701, 67, 1}, {64, 32, 676}};
}

// out = bias_relu(y, b) and its gradients for sum(out * w), on device d, with kernel selection as it is.
struct Result {
  Tensor out, grad_y, grad_b;
};
Result run(const Tensor& y, const Tensor& b, const Tensor& w, Device d, int dim) {
  Tensor yd = y.to(d).detach(), bd = b.to(d).detach();
  yd.requires_grad_();
  bd.requires_grad_();
  Result r;
  r.out = bias_relu(yd, bd, dim);
  sum(mul(r.out, w.to(d))).backward();
  r.grad_y = yd.grad();
  r.grad_b = bd.grad();
  return r;
}

}  // namespace

TEST_CASE("bias_relu and batch_norm_relu have kernels for both stages on every device", "[elementwise][nn]") {
  // Sequential fuses on a device only where both stages have a kernel (nn/fuse_relu.h); the CPU and the
  // CUDA backend both have them, so a model fuses on either.
  for (const Device d : test_devices()) {
    INFO("device " << d.str());
    CHECK(has_fused_kernels(keys::bias_relu, keys::bias_relu_backward, d.type));
    CHECK(has_fused_kernels(keys::batch_norm_relu, keys::batch_norm_relu_backward, d.type));
  }
}

TEST_CASE("bias_relu kernels match the naive reference, forward and backward", "[elementwise]") {
  manual_seed(41);
  for (const DType dtype : {DType::float32, DType::float64})
    for (const Sizes& s : sweep_sizes()) {
      INFO(dtype_name(dtype) << " [outer, C, inner] = [" << s.outer << ", " << s.channels << ", " << s.inner << "]");
      const Tensor y = uniform({s.outer, s.channels, s.inner}, -1, 1, dtype);
      const Tensor b = uniform({s.channels}, -0.5, 0.5, dtype);
      const Tensor w = uniform({s.outer, s.channels, s.inner}, -1, 1, dtype);
      Result ref;
      {
        SelectionReset reset;
        select_kernel("bias_relu", DeviceType::cpu, "naive");
        ref = run(y, b, w, Device::cpu(), 1);
      }
      // Some of each: a sweep where every element is masked (or none) would not test the mask.
      const std::vector<double> values = ref.out.to(DType::float64).to_vector<double>();
      const auto zeros = std::count(values.begin(), values.end(), 0.0);
      if (values.size() > 10) CHECK((zeros > 0 && zeros < static_cast<std::ptrdiff_t>(values.size())));
      for_each_kernel("bias_relu", [&](Device d, const std::string& name) {
        const Result got = run(y, b, w, d, 1);
        // Every kernel serves float32; one may decline float64 (the CPU's omp does: the reference serves).
        const bool may_decline = dtype != DType::float32;
        CHECK(served_or_declined("bias_relu", d.type, name, may_decline));
        CHECK(served_or_declined("bias_relu.backward", d.type, name, may_decline));
        CHECK(got.out.dtype() == dtype);
        CHECK(got.grad_b.dtype() == dtype);
        CHECK(compare(got.out, ref.out, 0, 0) == "");
        CHECK(compare(got.grad_y, ref.grad_y, 0, 0) == "");
        // grad_b sums up to 40k terms: the reference adds them in order, a kernel may group them differently.
        const double tol = dtype == DType::float32 ? 1e-5 : 1e-12;
        CHECK(compare(got.grad_b, ref.grad_b, tol, tol) == "");
      });
    }
}

TEST_CASE("bias_relu equals relu(y + bias) with the bias along the given dim, gradients included", "[elementwise]") {
  manual_seed(42);
  struct Case {
    Shape shape;
    int dim;
    Shape bias_view;  // the bias reshaped to broadcast against y along dim
  };
  const std::vector<Case> cases = {
      {{3, 4, 5, 6}, 1, {1, 4, 1, 1}},  // after a convolution
      {{7, 9}, -1, {1, 9}},             // after a linear layer
      {{2, 3, 9}, -1, {1, 1, 9}},       // a linear layer on [batch, time, features]
      {{2, 3, 9}, 2, {1, 1, 9}},
      {{8}, 0, {8}},
  };
  for (const Case& c : cases) {
    INFO("shape " << shape_str(c.shape) << ", dim " << c.dim);
    const Shape bias_shape{c.shape[static_cast<size_t>(c.dim < 0 ? c.dim + static_cast<int>(c.shape.size()) : c.dim)]};
    const Tensor y = uniform(c.shape, -1, 1), b = uniform(bias_shape, -1, 1), w = uniform(c.shape, -1, 1);
    for (const Device d : test_devices()) {
      INFO("device " << d.str());
      const Result fused = run(y, b, w, d, c.dim);
      Tensor yd = y.to(d).detach(), bd = b.to(d).detach();
      yd.requires_grad_();
      bd.requires_grad_();
      const Tensor composed = relu(add(yd, bd.view(c.bias_view)));
      sum(mul(composed, w.to(d))).backward();
      CHECK(fused.out.shape() == c.shape);
      CHECK(compare(fused.out, composed, 0, 0) == "");
      CHECK(compare(fused.grad_y, yd.grad(), 0, 0) == "");
      CHECK(compare(fused.grad_b, bd.grad(), 1e-12, 1e-12) == "");
    }
  }
}

TEST_CASE("bias_relu: finite-difference gradients in float64", "[elementwise][gradcheck]") {
  manual_seed(43);
  Tensor y = uniform({2, 3, 4, 5}, -1, 1), b = uniform({3}, -0.5, 0.5);
  y.requires_grad_();
  b.requires_grad_();
  CHECK(gradcheck([](const std::vector<Tensor>& in) { return bias_relu(in[0], in[1], 1); }, {y, b}) == "");
  Tensor y2 = uniform({6, 7}, -1, 1), b2 = uniform({7}, -0.5, 0.5);
  y2.requires_grad_();
  b2.requires_grad_();
  CHECK(gradcheck([](const std::vector<Tensor>& in) { return bias_relu(in[0], in[1], -1); }, {y2, b2}) == "");
  // A gradient for y only (a frozen bias) still works.
  Tensor y3 = uniform({4, 3}, -1, 1);
  y3.requires_grad_();
  const Tensor frozen = uniform({3}, -0.5, 0.5);
  CHECK(gradcheck([&](const std::vector<Tensor>& in) { return bias_relu(in[0], frozen, 1); }, {y3}) == "");
}

TEST_CASE("bias_relu: errors name the op and the shapes", "[elementwise]") {
  const Tensor y = zeros({2, 3, 4});
  CHECK_THROWS_WITH(bias_relu(y, zeros({4}), 1), Catch::Contains("bias_relu: bias of shape [4] does not match "
                                                                  "dimension 1 of the input [2,3,4] (expected [3])"));
  CHECK_THROWS_WITH(bias_relu(y, zeros({3, 1}), 1), Catch::Contains("bias_relu: bias of shape [3,1]"));
  CHECK_THROWS_WITH(bias_relu(y, zeros({3}), 3), Catch::Contains("bias_relu"));
  CHECK_THROWS_WITH(bias_relu(y, zeros({3}, DType::float64), 1), Catch::Contains("bias_relu"));
  CHECK_THROWS_WITH(bias_relu(zeros({2, 3}, DType::int64), zeros({3}, DType::int64), 1), Catch::Contains("bias_relu"));
  CHECK_THROWS_WITH(bias_relu(zeros({}), zeros({1}), 0), Catch::Contains("bias_relu"));
}

// ------------------------------------------------------------------------------------------ Sequential

namespace {

int counted_calls = 0, counted_bn_calls = 0;
// Decline every call after counting it, so the real kernels still compute.
bool counting_bias_relu(const Tensor&, const Tensor&, Tensor&) {
  ++counted_calls;
  return false;
}
bool counting_batch_norm_relu(const Tensor&, const Tensor&, const Tensor&, double, Tensor&, Tensor&, Tensor&) {
  ++counted_bn_calls;
  return false;
}

}  // namespace

TEST_CASE("Sequential fuses a biased Linear or Conv2d, or a BatchNorm, with the ReLU after it, with the same results",
          "[nn]") {
  manual_seed(44);
  // Fused: 0+1 (a conv with a bias), 3+4 (batch norm) and 8+9 (a linear layer with a bias). Not fused: 2 (a
  // conv without a bias, before the batch norm), 5+6 (a conv without a bias and its ReLU), 10 (a ReLU after
  // a fused pair: it runs on its own) and 11 (a linear layer with no ReLU after it).
  Sequential net;
  net.push_back(std::make_shared<Conv2d>(2, 3, 3));
  net.push_back(std::make_shared<ReLU>());
  net.push_back(std::make_shared<Conv2d>(3, 4, 3, 1, 1, /*bias=*/false));
  net.push_back(std::make_shared<BatchNorm2d>(4));
  net.push_back(std::make_shared<ReLU>());
  net.push_back(std::make_shared<Conv2d>(4, 4, 3, 1, 1, /*bias=*/false));
  net.push_back(std::make_shared<ReLU>());
  net.push_back(std::make_shared<Flatten>());
  net.push_back(std::make_shared<Linear>(4 * 4 * 4, 5));
  net.push_back(std::make_shared<ReLU>());
  net.push_back(std::make_shared<ReLU>());
  net.push_back(std::make_shared<Linear>(5, 2));
  const Tensor x = uniform({3, 2, 6, 6}, -1, 1, DType::float32);

  ScopedKernel<BiasReluKernel> counter("bias_relu", DeviceType::cpu, "counter", counting_bias_relu);
  ScopedKernel<BatchNormKernel> bn_counter("batch_norm_relu", DeviceType::cpu, "counter", counting_batch_norm_relu);
  select_kernel("bias_relu", DeviceType::cpu, "counter");
  select_kernel("batch_norm_relu", DeviceType::cpu, "counter");
  auto forward_backward = [&](bool fuse) {
    set_relu_fusion(fuse);
    net.zero_grad();
    counted_calls = 0;
    counted_bn_calls = 0;
    const Tensor out = net(x);
    sum(mul(out, out)).backward();
    set_relu_fusion(true);
    std::vector<Tensor> all{out.detach()};
    for (const Tensor& p : net.parameters()) all.push_back(p.grad());
    return all;
  };
  const std::vector<Tensor> unfused = forward_backward(false);
  CHECK(counted_calls == 0);
  CHECK(counted_bn_calls == 0);
  const std::vector<Tensor> fused = forward_backward(true);
  CHECK(counted_calls == 2);
  CHECK(counted_bn_calls == 1);
  CHECK(last_kernel("bias_relu", DeviceType::cpu) != "counter");
  CHECK(last_kernel("batch_norm_relu", DeviceType::cpu) != "counter");
  REQUIRE(fused.size() == unfused.size());
  for (size_t i = 0; i < fused.size(); ++i) {
    INFO("tensor " << i << " (0: the output, then each parameter's gradient)");
    CHECK(compare(fused[i], unfused[i], 1e-5, 1e-6) == "");
  }
  // The module list and the parameter names do not change (checkpoints load either way).
  CHECK(net.size() == 12);
  CHECK(net.named_parameters()[0].first == "0.weight");
  // A subclass is not fused: it may override forward (here a Linear that doubles its output, and a ReLU
  // subclass that is no longer a ReLU), and fusing would skip that.
  struct DoublingLinear : Linear {
    using Linear::Linear;
    Tensor forward(const Tensor& x) override { return mul_scalar(Linear::forward(x), 2.0); }
  };
  struct Negate : ReLU {
    Tensor forward(const Tensor& x) override { return neg(x); }
  };
  Sequential custom;
  custom.push_back(std::make_shared<DoublingLinear>(3, 4));
  custom.push_back(std::make_shared<ReLU>());
  custom.push_back(std::make_shared<Linear>(4, 4));
  custom.push_back(std::make_shared<Negate>());
  const Tensor v = uniform({5, 3}, -1, 1, DType::float32);
  counted_calls = 0;
  const Tensor got = custom(v);
  CHECK(counted_calls == 0);
  const Tensor expected = neg(custom[2](relu(custom[0](v))));
  CHECK(compare(got, expected, 0, 0) == "");
  // forward_relu needs a bias.
  CHECK_THROWS_WITH(dynamic_cast<Conv2d&>(net[2]).forward_relu(uniform({1, 3, 4, 4}, -1, 1, DType::float32)),
                    Catch::Contains("forward_relu needs a bias"));
}

TEST_CASE("fused_relu_forward: relu(layer(x)) for the pairs the pass fuses, undefined for the others", "[nn]") {
  // The pass's own entry point (nn/fuse_relu.h), pair by pair, on the CPU (which has both fused kernels).
  // Counting kernels that decline, selected first, see every fused call; the real kernels serve it.
  manual_seed(47);
  ScopedKernel<BiasReluKernel> counter("bias_relu", DeviceType::cpu, "counter", counting_bias_relu);
  ScopedKernel<BatchNormKernel> bn_counter("batch_norm_relu", DeviceType::cpu, "counter", counting_batch_norm_relu);
  select_kernel("bias_relu", DeviceType::cpu, "counter");
  select_kernel("batch_norm_relu", DeviceType::cpu, "counter");
  counted_calls = 0;
  counted_bn_calls = 0;

  const Tensor x = uniform({5, 4}, -1, 1, DType::float32);
  ReLU relu_module;
  Linear linear(4, 3);
  const Tensor fused_linear = fused_relu_forward(linear, relu_module, x);
  REQUIRE(fused_linear.defined());
  CHECK(counted_calls == 1);
  CHECK(compare(fused_linear, relu(linear.forward(x)), 1e-6, 1e-7) == "");

  Conv2d conv(2, 3, 3);
  const Tensor image = uniform({2, 2, 5, 5}, -1, 1, DType::float32);
  const Tensor fused_conv = fused_relu_forward(conv, relu_module, image);
  REQUIRE(fused_conv.defined());
  CHECK(counted_calls == 2);
  CHECK(compare(fused_conv, relu(conv.forward(image)), 1e-6, 1e-7) == "");

  BatchNorm1d norm(4);
  const Tensor fused_norm = fused_relu_forward(norm, relu_module, x);
  REQUIRE(fused_norm.defined());
  CHECK(counted_bn_calls == 1);
  CHECK(compare(fused_norm, relu(norm.forward(x)), 1e-6, 1e-7) == "");

  // Not fused: a layer without a bias, a layer with no fused form, a next module that is not exactly a ReLU.
  counted_calls = 0;
  Linear no_bias(4, 3, /*bias=*/false);
  CHECK_FALSE(fused_relu_forward(no_bias, relu_module, x).defined());
  Dropout dropout(0.5);
  CHECK_FALSE(fused_relu_forward(dropout, relu_module, x).defined());
  Flatten flatten;
  CHECK_FALSE(fused_relu_forward(linear, flatten, x).defined());
  struct NotQuiteReLU : ReLU {};
  NotQuiteReLU relu_subclass;
  CHECK_FALSE(fused_relu_forward(linear, relu_subclass, x).defined());
  CHECK(counted_calls == 0);

  // The switch: off, nothing fuses.
  set_relu_fusion(false);
  CHECK_FALSE(relu_fusion());
  CHECK_FALSE(fused_relu_forward(linear, relu_module, x).defined());
  set_relu_fusion(true);
  CHECK(fused_relu_forward(linear, relu_module, x).defined());
  CHECK(counted_calls == 1);
}

// ------------------------------------------------------------------------------------------ GPU

namespace {

int gpu_calls = 0, gpu_bn_calls = 0;
bool counting_bias_relu_gpu(const Tensor&, const Tensor&, Tensor&) {
  ++gpu_calls;
  return false;
}
bool counting_batch_norm_relu_gpu(const Tensor&, const Tensor&, const Tensor&, double, Tensor&, Tensor&, Tensor&) {
  ++gpu_bn_calls;
  return false;
}

}  // namespace

// Kernel by kernel, through the dispatch table: the backward is given the reference's own output, so the
// mask is the same, and everything but grad_bias must be the reference's bits.
TEST_CASE("cuda bias_relu kernels match the naive CPU kernel, and give the same bias gradient every run",
          "[cuda][elementwise]") {
  if (!have_gpu()) return;
  manual_seed(45);
  std::vector<Sizes> sizes = sweep_sizes();
  sizes.push_back({5, 33, 3});  // more channels than a warp, inner > 1
  sizes.push_back({0, 3, 5});   // no values: grad_bias = 0
  sizes.push_back({4, 0, 2});   // no channels
  for (const DType dtype : {DType::float32, DType::float64})
    for (const Sizes& s : sizes) {
      INFO(dtype_name(dtype) << " [outer, C, inner] = [" << s.outer << ", " << s.channels << ", " << s.inner << "]");
      const Shape shape{s.outer, s.channels, s.inner}, cs{s.channels};
      const Tensor y = uniform(shape, -1, 1, dtype), b = uniform(cs, -0.5, 0.5, dtype);
      const Tensor g = uniform(shape, -1, 1, dtype);
      Tensor out_ref = empty(shape, dtype), gy_ref = empty(shape, dtype), gb_ref = empty(cs, dtype);
      {
        SelectionReset reset;
        select_kernel("bias_relu", DeviceType::cpu, "naive");
        dispatch<BiasReluKernel>("bias_relu", Device::cpu(), y, b, out_ref);
        dispatch<BiasReluBackwardKernel>("bias_relu.backward", Device::cpu(), g, out_ref, gy_ref, gb_ref);
      }
      for_each_kernel("bias_relu", [&](Device d, const std::string& name) {
        if (d.is_cpu()) return;
        const bool may_decline = dtype != DType::float32;  // every kernel serves float32
        const TensorOptions on_d(dtype, d);
        const Tensor gd = g.to(d), out_given = out_ref.to(d);
        Tensor out = empty(shape, on_d), gy = empty(shape, on_d), gb = empty(cs, on_d), gb_again = empty(cs, on_d);
        dispatch<BiasReluKernel>("bias_relu", d, y.to(d), b.to(d), out);
        CHECK(served_or_declined("bias_relu", d.type, name, may_decline));
        dispatch<BiasReluBackwardKernel>("bias_relu.backward", d, gd, out_given, gy, gb);
        CHECK(served_or_declined("bias_relu.backward", d.type, name, may_decline));
        CHECK(compare(out, out_ref, 0, 0) == "");
        CHECK(compare(gy, gy_ref, 0, 0) == "");
        const double tol = dtype == DType::float32 ? 1e-5 : 1e-12;
        CHECK(compare(gb, gb_ref, tol, tol) == "");
        // No atomics: a second call adds up the same values in the same order.
        dispatch<BiasReluBackwardKernel>("bias_relu.backward", d, gd, out_given, gy, gb_again);
        CHECK(compare(gb_again, gb, 0, 0) == "");
      });
    }
}

TEST_CASE("cuda Sequential fuses on the GPU, with the results of the unfused layers", "[cuda][nn]") {
  if (!have_gpu()) return;
  manual_seed(46);
  // Fused: 0+1 (a conv with a bias), 3+4 (batch norm) and 6+7 (a linear layer with a bias).
  Sequential net;
  net.push_back(std::make_shared<Conv2d>(2, 3, 3));
  net.push_back(std::make_shared<ReLU>());
  net.push_back(std::make_shared<Conv2d>(3, 4, 3, 1, 1, /*bias=*/false));
  net.push_back(std::make_shared<BatchNorm2d>(4));
  net.push_back(std::make_shared<ReLU>());
  net.push_back(std::make_shared<Flatten>());
  net.push_back(std::make_shared<Linear>(4 * 4 * 4, 5));
  net.push_back(std::make_shared<ReLU>());
  net.push_back(std::make_shared<Linear>(5, 2));
  const Device gpu = Device::cuda(0);
  net.to(gpu);
  const Tensor x = uniform({3, 2, 6, 6}, -1, 1, DType::float32, gpu);

  // Counting kernels that decline, selected first: they see every fused call, the real kernels serve it.
  ScopedKernel<BiasReluKernel> counter("bias_relu", DeviceType::cuda, "counter", counting_bias_relu_gpu);
  ScopedKernel<BatchNormKernel> bn_counter("batch_norm_relu", DeviceType::cuda, "counter",
                                           counting_batch_norm_relu_gpu);
  select_kernel("bias_relu", DeviceType::cuda, "counter");
  select_kernel("batch_norm_relu", DeviceType::cuda, "counter");
  auto forward_backward = [&](bool fuse) {
    set_relu_fusion(fuse);
    net.zero_grad();
    gpu_calls = 0;
    gpu_bn_calls = 0;
    const Tensor out = net(x);
    sum(mul(out, out)).backward();
    set_relu_fusion(true);
    std::vector<Tensor> all{out.detach()};
    for (const Tensor& p : net.parameters()) all.push_back(p.grad());
    return all;
  };
  const std::vector<Tensor> unfused = forward_backward(false);
  CHECK(gpu_calls == 0);
  CHECK(gpu_bn_calls == 0);
  // Layer 0's conv + bias + ReLU is one conv2d_bias_relu call: when a fused kernel serves its shape
  // (cuDNN's graph API), bias_relu sees only the linear layer's call; when none does, both.
  Tensor probe = empty({3, 3, 4, 4}, TensorOptions(DType::float32, gpu));
  const auto& conv0 = dynamic_cast<const Conv2d&>(net[0]);
  const bool conv_fused = dispatch_fused(keys::conv2d_bias_relu, gpu, x, conv0.weight.detach().contiguous(),
                                         conv0.bias.detach(), probe, Conv2dParams{});
  INFO("conv2d_bias_relu served on the GPU: " << conv_fused);
  const std::vector<Tensor> fused = forward_backward(true);
  CHECK(gpu_calls == (conv_fused ? 1 : 2));
  CHECK(gpu_bn_calls == 1);
  REQUIRE(fused.size() == unfused.size());
  for (size_t i = 0; i < fused.size(); ++i) {
    INFO("tensor " << i << " (0: the output, then each parameter's gradient)");
    CHECK(fused[i].device() == gpu);
    // The GPU's convolution and batch norm kernels sum in their own order: a little more than the CPU's 1e-5.
    CHECK(compare(fused[i], unfused[i], 1e-4, 1e-5) == "");
  }
}
