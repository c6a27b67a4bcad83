// tests/test_bias_relu.cpp — the fused bias + ReLU: every kernel against the naive CPU reference (forward
// and backward, both layouts, sizes large enough for the threaded paths), the op against the same layer
// written with add and relu (values and gradients), a float64 gradcheck, its errors, and Sequential's
// fusion (with batch_norm_relu, tested with the norm ops): which pairs it fuses, and that the model
// computes the same outputs and gradients either way.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/random.h"
#include "nn/layers.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

Tensor f32(const Shape& shape, double lo, double hi) { return uniform(shape, lo, hi, DType::float32); }

struct Sizes {
  int64_t outer, channels, inner;
};

// Odd sizes of both layouts (inner 1: after a linear layer), and above the 32k elements where the omp
// kernel goes parallel, in each of its two backward paths.
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

// The test devices that have bias_relu kernels. The CUDA backend has none yet (Sequential runs unfused
// there); a GPU is then skipped with a visible message instead of failing on "no kernel is registered".
std::vector<Device> devices_with_kernels() {
  std::vector<Device> out;
  for (const Device d : test_devices()) {
    if (!has_fused_kernels("bias_relu", d.type))
      WARN("bias_relu: no kernel for " << d.str() << " yet, skipped there (Sequential runs unfused on it)");
    else
      out.push_back(d);
  }
  return out;
}

}  // namespace

TEST_CASE("bias_relu kernels match the naive reference, forward and backward", "[elementwise]") {
  manual_seed(41);
  for (const Sizes& s : sweep_sizes()) {
    INFO("[outer, C, inner] = [" << s.outer << ", " << s.channels << ", " << s.inner << "]");
    const Tensor y = f32({s.outer, s.channels, s.inner}, -1, 1), b = f32({s.channels}, -0.5, 0.5);
    const Tensor w = f32({s.outer, s.channels, s.inner}, -1, 1);
    Result ref;
    {
      SelectionReset reset;
      select_kernel("bias_relu", DeviceType::cpu, "naive");
      ref = run(y, b, w, Device::cpu(), 1);
    }
    // Some of each: a sweep where every element is masked (or none) would not test the mask.
    const std::vector<float> values = ref.out.to_vector<float>();
    const auto zeros = std::count(values.begin(), values.end(), 0.0f);
    if (values.size() > 10) CHECK((zeros > 0 && zeros < static_cast<std::ptrdiff_t>(values.size())));
    for_each_kernel("bias_relu", [&](Device d, const std::string& name) {
      const Result got = run(y, b, w, d, 1);
      CHECK(served_or_declined("bias_relu", d.type, name, false));
      CHECK(served_or_declined("bias_relu.backward", d.type, name, false));
      CHECK(compare(got.out, ref.out, 0, 0) == "");
      CHECK(compare(got.grad_y, ref.grad_y, 0, 0) == "");
      // grad_b sums up to 20k terms: the reference adds them in order, a kernel may group them differently.
      CHECK(compare(got.grad_b, ref.grad_b, 1e-5, 1e-5) == "");
    });
  }
  // float64: the reference serves (the omp kernel declines it).
  const Tensor y = uniform({5, 4, 3}, -1, 1), b = uniform({4}, -1, 1), w = uniform({5, 4, 3}, -1, 1);
  for (const Device d : devices_with_kernels()) {
    const Result got = run(y, b, w, d, 1);
    CHECK(got.out.dtype() == DType::float64);
    CHECK(got.grad_b.dtype() == DType::float64);
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
    for (const Device d : devices_with_kernels()) {
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
