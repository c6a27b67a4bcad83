// tests/test_nn.cpp — modules and layers: outputs against values computed by hand on tiny inputs,
// parameter naming, default initialisation, train/eval behaviour of Dropout and BatchNorm, to(Device),
// and state_dict round trips with their errors.
#include <catch2/catch.hpp>
#include <cmath>

#include "core/random.h"
#include "nn/init.h"
#include "nn/layers.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

std::vector<std::string> names_of(const NamedTensors& named) {
  std::vector<std::string> out;
  for (const auto& [name, t] : named) out.push_back(name);
  return out;
}

// A model with a nested container, to check dotted names.
class Net : public Module {
 public:
  Net() {
    features = register_module("features", std::make_shared<Sequential>(Conv2d(1, 2, 3), ReLU(), BatchNorm2d(2)));
    head = register_module("head", std::make_shared<Linear>(8, 3));
  }
  Tensor forward(const Tensor& x) override { return head->forward(features->forward(x).flatten(1)); }
  std::string type_name() const override { return "Net"; }
  std::shared_ptr<Sequential> features;
  std::shared_ptr<Linear> head;
};

}  // namespace

TEST_CASE("nn: Linear computes x W^T + b", "[nn]") {
  Linear fc(2, 3);
  copy_(fc.weight, from_vector({1, 2, 3, 4, 5, 6}, {3, 2}));
  copy_(fc.bias, from_vector({0.5, -1, 0}, {3}));
  const Tensor y = fc(from_vector({1, -1, 2, 0.5}, {2, 2}));
  CHECK(y.shape() == Shape{2, 3});
  CHECK(compare(y, from_vector({-0.5, -2, -1, 3.5, 7, 13}, {2, 3}), 1e-6, 1e-6) == "");
  CHECK(Linear(2, 3, /*bias=*/false).named_parameters().size() == 1);
  CHECK_THROWS_WITH(fc(zeros({2, 4})), Catch::Contains("Linear(2 -> 3)") && Catch::Contains("[2,4]"));
}

TEST_CASE("nn: Conv2d, MaxPool2d, AvgPool2d, ReLU, Flatten on tiny inputs", "[nn]") {
  const Tensor x = from_vector({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  Conv2d conv(1, 1, 2);
  fill_(conv.weight, 1.0);
  fill_(conv.bias, 0.5);
  // Each output is the sum of a 2x2 window plus 0.5.
  CHECK(compare(conv(x), from_vector({12.5, 16.5, 24.5, 28.5}, {1, 1, 2, 2}), 1e-6, 1e-6) == "");
  Conv2d padded(1, 1, 2, /*stride=*/2, /*padding=*/1);
  fill_(padded.weight, 1.0);
  fill_(padded.bias, 0.5);
  // Windows start at -1 and 1 in each direction: {1}, {2,3}, {4,7}, {5,6,8,9}.
  CHECK(compare(padded(x), from_vector({1.5, 5.5, 11.5, 28.5}, {1, 1, 2, 2}), 1e-6, 1e-6) == "");

  const Tensor g = arange(16).reshape({1, 1, 4, 4});
  CHECK(compare(MaxPool2d(2)(g), from_vector({5, 7, 13, 15}, {1, 1, 2, 2}), 0, 0) == "");
  CHECK(compare(AvgPool2d(2)(g), from_vector({2.5, 4.5, 10.5, 12.5}, {1, 1, 2, 2}), 1e-6, 1e-6) == "");
  CHECK(MaxPool2d(3, 1).stride == 1);
  CHECK(MaxPool2d(3).stride == 3);

  CHECK(ReLU()(from_vector({-1, 0, 2}, {3})).to_vector<float>() == std::vector<float>{0, 0, 2});
  CHECK(Flatten()(zeros({2, 3, 4, 5})).shape() == Shape{2, 60});
  CHECK(Flatten(0)(zeros({2, 3})).shape() == Shape{6});
}

TEST_CASE("nn: Sequential chains layers and names parameters by position", "[nn]") {
  Sequential seq(Linear(4, 3), ReLU(), Sequential(Linear(3, 2), BatchNorm1d(2)));
  CHECK(seq.size() == 3);
  CHECK(names_of(seq.named_parameters()) ==
        std::vector<std::string>{"0.weight", "0.bias", "2.0.weight", "2.0.bias", "2.1.weight", "2.1.bias"});
  CHECK(names_of(seq.named_buffers()) == std::vector<std::string>{"2.1.running_mean", "2.1.running_var"});
  CHECK(seq.parameter_count() == 4 * 3 + 3 + 3 * 2 + 2 + 2 + 2);
  CHECK(seq(zeros({5, 4})).shape() == Shape{5, 2});
  CHECK(seq[1].type_name() == "ReLU");

  Net net;
  CHECK(names_of(net.named_parameters()) ==
        std::vector<std::string>{"features.0.weight", "features.0.bias", "features.2.weight", "features.2.bias",
                                 "head.weight", "head.bias"});
  CHECK(names_of(net.state_dict()) ==
        std::vector<std::string>{"features.0.weight", "features.0.bias", "features.2.weight", "features.2.bias",
                                 "head.weight", "head.bias", "features.2.running_mean", "features.2.running_var"});
  for (const Tensor& p : net.parameters()) CHECK(p.requires_grad());
  // The registry and the member hold the same tensor.
  CHECK(net.parameters()[4].impl() == net.head->weight.impl());
  CHECK_THAT(net.summary(), Catch::Contains("features: Sequential") && Catch::Contains("head: Linear(8 -> 3)"));
}

TEST_CASE("nn: default initialisation is PyTorch's and follows the seed", "[nn]") {
  manual_seed(3);
  Linear a(100, 50);
  manual_seed(3);
  Linear b(100, 50);
  CHECK(a.weight.to_vector<float>() == b.weight.to_vector<float>());
  CHECK(a.bias.to_vector<float>() == b.bias.to_vector<float>());
  Linear c(100, 50);
  CHECK(c.weight.to_vector<float>() != b.weight.to_vector<float>());

  // U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias: bound 0.1 here, variance bound^2 / 3.
  const std::vector<float> w = a.weight.to_vector<float>();
  double sum_sq = 0, max_abs = 0;
  for (float v : w) {
    sum_sq += double(v) * v;
    max_abs = std::max(max_abs, std::fabs(double(v)));
  }
  CHECK(max_abs <= 0.1);
  CHECK(max_abs > 0.099);
  CHECK(sum_sq / w.size() == Approx(0.01 / 3).epsilon(0.05));
  for (float v : a.bias.to_vector<float>()) CHECK(std::fabs(v) <= 0.1);

  Conv2d conv(4, 8, 3);  // fan_in = 4 * 3 * 3 = 36: bound 1/6
  CHECK(init::fan_in(conv.weight) == 36);
  CHECK(init::fan_out(conv.weight) == 72);
  for (float v : conv.weight.to_vector<float>()) CHECK(std::fabs(v) <= 1.0 / 6 + 1e-7);
  for (float v : conv.bias.to_vector<float>()) CHECK(std::fabs(v) <= 1.0 / 6 + 1e-7);

  // The other initialisers: bounds and spreads from their formulas.
  Tensor t = empty({200, 300});
  init::xavier_uniform_(t);  // bound sqrt(6 / 500)
  double m = 0;
  for (float v : t.to_vector<float>()) m = std::max(m, std::fabs(double(v)));
  CHECK(m <= std::sqrt(6.0 / 500) + 1e-7);
  CHECK(m > 0.99 * std::sqrt(6.0 / 500));
  auto std_of = [](const Tensor& x) {
    double s = 0;
    const std::vector<float> v = x.to_vector<float>();
    for (float e : v) s += double(e) * e;
    return std::sqrt(s / v.size());
  };
  init::kaiming_normal_(t);  // std sqrt(2 / 300)
  CHECK(std_of(t) == Approx(std::sqrt(2.0 / 300)).epsilon(0.02));
  init::xavier_normal_(t, 2.0);  // std 2 sqrt(2 / 500)
  CHECK(std_of(t) == Approx(2 * std::sqrt(2.0 / 500)).epsilon(0.02));
  init::kaiming_uniform_(t, 0, init::FanMode::fan_out);  // bound sqrt(2) sqrt(3 / 200)
  CHECK(std_of(t) == Approx(std::sqrt(2.0) * std::sqrt(3.0 / 200) / std::sqrt(3.0)).epsilon(0.02));
  init::zeros_(t);
  CHECK(std_of(t) == 0);
}

TEST_CASE("nn: Dropout drops in training and is the identity in eval", "[nn]") {
  manual_seed(11);
  Sequential seq(Dropout(0.25));
  const Tensor x = ones({10000});
  const std::vector<float> y = seq(x).to_vector<float>();
  int zeros_count = 0;
  for (float v : y) {
    if (v == 0) {
      ++zeros_count;
    } else {
      CHECK(v == Approx(1 / 0.75));
    }
  }
  CHECK(zeros_count > 2300);
  CHECK(zeros_count < 2700);
  seq.eval();
  CHECK_FALSE(seq.is_training());
  CHECK_FALSE(seq[0].is_training());
  CHECK(seq(x).to_vector<float>() == x.to_vector<float>());
  seq.train();
  CHECK(seq[0].is_training());
}

TEST_CASE("nn: BatchNorm uses batch statistics in training and running statistics in eval", "[nn]") {
  BatchNorm2d bn(1);
  const Tensor x = from_vector({1, 2, 3, 4}, {2, 1, 1, 2});
  // Training: mean 2.5, biased variance 1.25.
  const double s = std::sqrt(1.25 + 1e-5);
  CHECK(compare(bn(x), from_vector({-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s}, {2, 1, 1, 2}), 1e-5, 1e-6) == "");
  // Running statistics: 0.9 * initial + 0.1 * batch, with the unbiased variance 5/3.
  CHECK(bn.running_mean.item<float>() == Approx(0.25));
  CHECK(bn.running_var.item<float>() == Approx(0.9 + 0.1 * 5.0 / 3.0));
  bn.eval();
  const double rs = std::sqrt(0.9 + 0.1 * 5.0 / 3.0 + 1e-5);
  CHECK(compare(bn(x), from_vector({0.75 / rs, 1.75 / rs, 2.75 / rs, 3.75 / rs}, {2, 1, 1, 2}), 1e-5, 1e-6) == "");
  CHECK(bn.running_mean.item<float>() == Approx(0.25));  // eval does not update them

  BatchNorm1d bn1(2);
  const Tensor y = bn1(from_vector({1, 10, 3, 30}, {2, 2}));
  CHECK(compare(y, from_vector({-1, -1, 1, 1}, {2, 2}), 1e-4, 1e-4) == "");
  CHECK_THROWS_WITH(bn1(zeros({2, 2, 1, 1})), Catch::Contains("expected input [N, 2]"));
}

TEST_CASE("nn: gradients reach every parameter, zero_grad clears them", "[nn]") {
  Net net;
  const Tensor y = net(randn({2, 1, 4, 4}));
  sum(y).backward();
  for (auto& [name, p] : net.named_parameters()) {
    INFO(name);
    REQUIRE(p.grad().defined());
    CHECK(p.grad().shape() == p.shape());
  }
  // d(sum y)/d(head.bias) = batch size for every output.
  CHECK(net.head->bias.grad().to_vector<float>() == std::vector<float>{2, 2, 2});
  net.zero_grad();
  for (const Tensor& p : net.parameters()) CHECK_FALSE(p.grad().defined());
}

TEST_CASE("nn: to(Device) keeps handles and requires_grad", "[nn]") {
  Net net;
  const TensorImpl* before = net.head->weight.impl();
  const std::vector<float> values = net.head->weight.to_vector<float>();
  net.to(Device::cpu());
  CHECK(net.head->weight.impl() == before);
  CHECK(net.head->weight.requires_grad());
  CHECK(net.head->weight.to_vector<float>() == values);
  for (Device d : test_devices()) {
    net.to(d);
    for (auto& [name, t] : net.state_dict()) CHECK(t.device() == d);
    CHECK(net.head->weight.requires_grad());
    CHECK(net.head->weight.impl() == before);
    CHECK(net(zeros({1, 1, 4, 4}, d)).device() == d);
    CHECK(net.head->weight.to_vector<float>() == values);
  }
  net.to(Device::cpu());
}

TEST_CASE("nn: state_dict round trip and load errors", "[nn]") {
  manual_seed(5);
  Net a;
  a(randn({4, 1, 4, 4}));  // updates BatchNorm's running statistics
  manual_seed(6);
  Net b;
  const Tensor x = randn({3, 1, 4, 4});
  a.eval();
  b.eval();
  CHECK(compare(a(x), b(x), 0, 0) != "");
  b.load_state_dict(a.state_dict());
  CHECK(compare(a(x), b(x), 0, 0) == "");
  CHECK(b.named_buffers()[0].second.to_vector<float>() == a.named_buffers()[0].second.to_vector<float>());
  // The copy is a copy: changing a afterwards leaves b alone.
  fill_(a.head->bias, 9);
  CHECK(b.head->bias.to_vector<float>() != a.head->bias.to_vector<float>());

  NamedTensors state = a.state_dict();
  state.erase(state.begin() + 1);                 // features.0.bias missing
  state.emplace_back("head.extra", zeros({1}));  // unexpected
  state[3].second = zeros({5, 8});               // head.weight [3, 8] -> [5, 8]
  CHECK_THROWS_WITH(b.load_state_dict(state), Catch::Contains("missing: features.0.bias") &&
                                                  Catch::Contains("unexpected: head.extra") &&
                                                  Catch::Contains("head.weight (expected [3,8], got [5,8])"));
  // Nothing was copied by the failed load.
  CHECK(b.head->bias.to_vector<float>() != a.head->bias.to_vector<float>());
}

TEST_CASE("nn: registration errors", "[nn]") {
  struct Bad : Module {
    Bad() {
      register_parameter("w", zeros({1}));
      CHECK_THROWS_WITH(register_parameter("w", zeros({1})), Catch::Contains("already a parameter"));
      CHECK_THROWS_WITH(register_buffer("a.b", zeros({1})), Catch::Contains("invalid name 'a.b'"));
      CHECK_THROWS_WITH(register_module("w", std::make_shared<ReLU>()), Catch::Contains("already a parameter"));
    }
  };
  Bad bad;
  CHECK_THROWS_WITH(bad(zeros({1})), Catch::Contains("forward(const Tensor&) is not defined"));
  CHECK_THROWS_WITH(Dropout(1.0), Catch::Contains("p must be in [0, 1)"));
  CHECK_THROWS_WITH(Conv2d(1, 1, 0), Catch::Contains("bad configuration"));
}
