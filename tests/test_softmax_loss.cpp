// tests/test_softmax_loss.cpp — softmax, log_softmax, cross_entropy and nll_loss: every kernel against
// the naive CPU reference, float64 gradchecks, values by hand, stability at extreme logits, errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/random.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

// f() computed with the naive CPU kernels of `op` (the reference); the selection is restored after.
template <class F>
auto naive_ref(const std::string& op, F f) {
  SelectionReset reset;
  select_kernel(op, DeviceType::cpu, "naive");
  return f();
}

// A fresh leaf copy of t on device d.
Tensor leaf_on(const Tensor& t, Device d) {
  Tensor x = t.to(d).clone().detach();
  x.requires_grad_();
  return x;
}

// Random class indices in [0, classes).
Tensor random_targets(int64_t n, int64_t classes) {
  return mul_scalar(rand({n}, DType::float64), static_cast<double>(classes)).to(DType::int64);
}

// Forward value and input gradient of sum(f(x) * w).
struct ValueAndGrad {
  Tensor value, grad;
};

ValueAndGrad run(const std::function<Tensor(const Tensor&)>& f, const Tensor& x_host, const Tensor& w_host, Device d) {
  Tensor x = leaf_on(x_host, d);
  Tensor y = f(x);
  sum(mul(y, w_host.to(d))).backward();
  return {y, x.grad()};
}

}  // namespace

TEST_CASE("softmax / log_softmax kernels match the naive reference, forward and backward", "[softmax]") {
  manual_seed(31);
  struct Case {
    const char* key;
    std::function<Tensor(const Tensor&, int)> op;
  };
  const std::vector<Case> cases = {
      {"softmax", [](const Tensor& x, int dim) { return softmax(x, dim); }},
      {"log_softmax", [](const Tensor& x, int dim) { return log_softmax(x, dim); }},
  };
  struct Input {
    Shape shape;
    int dim;
  };
  // Odd sizes, every dim of a 3-D tensor (so the front end's permute/pack runs), one row, and a matrix
  // above the 32k elements where rows_omp uses threads.
  const std::vector<Input> inputs = {{{37, 53}, -1}, {{5, 7, 9}, 0},  {{5, 7, 9}, 1}, {{5, 7, 9}, 2},
                                     {{1, 1001}, 1}, {{301, 129}, 1}, {{129, 301}, 0}};
  for (const Case& c : cases)
    for (const Input& in : inputs) {
      INFO("op " << c.key << ", shape " << shape_str(in.shape) << ", dim " << in.dim);
      const Tensor x = uniform(in.shape, -8, 8, DType::float32), w = uniform(in.shape, -1, 1, DType::float32);
      auto f = [&](const Tensor& t) { return c.op(t, in.dim); };
      const ValueAndGrad ref = naive_ref(c.key, [&] { return run(f, x, w, Device::cpu()); });
      for_each_kernel(c.key, [&](Device d, const std::string& name) {
        const ValueAndGrad got = run(f, x, w, d);
        CHECK(last_kernel(c.key, d.type) == name);
        CHECK(last_kernel(std::string(c.key) + ".backward", d.type) == name);
        CHECK(compare(got.value, ref.value, 1e-5, 1e-6) == "");
        CHECK(compare(got.grad, ref.grad, 1e-4, 1e-5) == "");
      });
    }
}

TEST_CASE("softmax / log_softmax: values by hand, stability, and layout of the result", "[softmax]") {
  const Tensor x = from_vector({1, 2, 3, -1, 0, 1000}, {2, 3});
  for_each_kernel("softmax", [&](Device d, const std::string&) {
    const std::vector<double> y = softmax(x.to(d)).to_vector<double>();
    const double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
    CHECK(y[0] == Approx(std::exp(1.0) / s));
    CHECK(y[2] == Approx(std::exp(3.0) / s));
    // 1000 dominates: no overflow, exactly one and (underflowed) zeros.
    CHECK(y[3] == 0.0);
    CHECK(y[5] == 1.0);
  });
  for_each_kernel("log_softmax", [&](Device d, const std::string&) {
    const std::vector<double> y = log_softmax(x.to(d)).to_vector<double>();
    const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
    CHECK(y[1] == Approx(2.0 - lse));
    CHECK(y[3] == Approx(-1001.0));  // finite where softmax underflows
    CHECK(y[5] == Approx(0.0).margin(1e-6));
  });
  // Over dim 0 the columns sum to one, and the result has x's shape and is contiguous.
  const Tensor z = softmax(from_vector({0, 1, 2, 3, 4, 5}, {2, 3}), 0);
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.is_contiguous());
  const std::vector<float> zv = z.to_vector<float>();
  for (int c = 0; c < 3; ++c) CHECK(zv[c] + zv[3 + c] == Approx(1.0f));
  CHECK(zv[0] == Approx(1.0 / (1.0 + std::exp(3.0))));
}

TEST_CASE("gradcheck: softmax and log_softmax over dims 0, 1 and -1", "[softmax][gradcheck]") {
  manual_seed(32);
  Tensor x = uniform({3, 4, 5}, -2, 2);
  x.requires_grad_();
  for (int dim : {0, 1, -1}) {
    INFO("dim " << dim);
    CHECK(gradcheck([dim](const std::vector<Tensor>& in) { return softmax(in[0], dim); }, {x}) == "");
    CHECK(gradcheck([dim](const std::vector<Tensor>& in) { return log_softmax(in[0], dim); }, {x}) == "");
  }
  // A non-contiguous input.
  CHECK(gradcheck([](const std::vector<Tensor>& in) { return softmax(in[0].transpose(0, 2), 1); }, {x}) == "");
}

TEST_CASE("cross_entropy kernels match the naive reference, forward and backward", "[loss]") {
  manual_seed(33);
  struct Input {
    int64_t n, classes;
  };
  // Odd sizes, one class, and one above the 32k logits where rows_omp uses threads.
  const std::vector<Input> inputs = {{67, 11}, {5, 1}, {1, 37}, {301, 117}};
  for (const Input& in : inputs) {
    INFO("logits [" << in.n << ", " << in.classes << "]");
    const Tensor logits = uniform({in.n, in.classes}, -6, 6, DType::float32);
    const Tensor target = random_targets(in.n, in.classes);
    auto f = [&](const Tensor& x) { return cross_entropy(x, target.to(x.device())); };
    const Tensor w = ones({}, DType::float32);
    const ValueAndGrad ref = naive_ref("cross_entropy", [&] { return run(f, logits, w, Device::cpu()); });
    for_each_kernel("cross_entropy", [&](Device d, const std::string& name) {
      const ValueAndGrad got = run(f, logits, w, d);
      CHECK(last_kernel("cross_entropy", d.type) == name);
      CHECK(last_kernel("cross_entropy.backward", d.type) == name);
      CHECK(got.value.shape() == Shape{});
      CHECK(compare(got.value, ref.value, 1e-5, 1e-6) == "");
      CHECK(compare(got.grad, ref.grad, 1e-4, 1e-7) == "");
    });
  }
}

TEST_CASE("cross_entropy: values by hand, agreement with log_softmax + nll_loss, extreme logits", "[loss]") {
  // Row 0: logits (0, 0), target 0: log 2.  Row 1: logits (log 3, 0), target 1: log(3 + 1) - 0 = log 4.
  const Tensor logits = from_vector({0, 0, std::log(3.0), 0}, {2, 2});
  const Tensor target = from_vector({0, 1}, {2}, DType::int64);
  for_each_kernel("cross_entropy", [&](Device d, const std::string&) {
    Tensor x = leaf_on(logits, d);
    Tensor loss = cross_entropy(x, target.to(d));
    CHECK(loss.item<double>() == Approx(1.5 * std::log(2.0)));
    loss.backward();
    // grad = (softmax - onehot) / N: row 0 (0.5 - 1, 0.5) / 2, row 1 (0.75, 0.25 - 1) / 2
    const std::vector<double> g = x.grad().to_vector<double>();
    CHECK(g[0] == Approx(-0.25));
    CHECK(g[1] == Approx(0.25));
    CHECK(g[2] == Approx(0.375));
    CHECK(g[3] == Approx(-0.375));
  });

  manual_seed(34);
  const Tensor random_logits = uniform({13, 7}, -4, 4);
  const Tensor random_target = random_targets(13, 7);
  Tensor a = leaf_on(random_logits, Device::cpu()), b = leaf_on(random_logits, Device::cpu());
  Tensor fused = cross_entropy(a, random_target), composed = nll_loss(log_softmax(b, 1), random_target);
  CHECK(fused.item<double>() == Approx(composed.item<double>()).epsilon(1e-12));
  fused.backward();
  composed.backward();
  CHECK(compare(a.grad(), b.grad(), 1e-10, 1e-12) == "");

  // Logits of 1e4 (float32): exp would overflow without the max subtraction.
  const Tensor extreme = from_vector({1e4, 0, -1e4, -1e4, 1e4, 0}, {2, 3});
  const Tensor extreme_target = from_vector({0, 2}, {2}, DType::int64);
  for_each_kernel("cross_entropy", [&](Device d, const std::string& name) {
    Tensor x = leaf_on(extreme, d);
    Tensor loss = cross_entropy(x, extreme_target.to(d));
    CHECK(last_kernel("cross_entropy", d.type) == name);
    // Row 0 is right with certainty (0), row 1 is 1e4 below its best logit (1e4): mean 5000.
    CHECK(std::isfinite(loss.item<float>()));
    CHECK(loss.item<float>() == Approx(5000.0f));
    loss.backward();
    for (float g : x.grad().to_vector<float>()) CHECK(std::isfinite(g));
    CHECK(x.grad().to_vector<float>()[4] == Approx(0.5f));  // softmax 1 at the winning logit, / N = 2
  });
}

TEST_CASE("gradcheck: cross_entropy and nll_loss", "[loss][gradcheck]") {
  manual_seed(35);
  Tensor logits = uniform({6, 5}, -3, 3);
  logits.requires_grad_();
  const Tensor target = from_vector({0, 4, 2, 2, 1, 3}, {6}, DType::int64);
  CHECK(gradcheck([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], target); }, {logits}) == "");
  CHECK(gradcheck([&](const std::vector<Tensor>& in) { return nll_loss(log_softmax(in[0], 1), target); }, {logits}) ==
        "");
  CHECK(gradcheck([&](const std::vector<Tensor>& in) { return nll_loss(in[0], target); }, {logits}) == "");
  // Non-contiguous logits.
  Tensor logits_t = uniform({5, 6}, -3, 3);
  logits_t.requires_grad_();
  CHECK(gradcheck([&](const std::vector<Tensor>& in) { return cross_entropy(in[0].transpose(0, 1), target); },
                  {logits_t}) == "");
}

TEST_CASE("nll_loss: value by hand", "[loss]") {
  const Tensor log_probs = from_vector({-0.5, -1.5, -2.5, -3.5}, {2, 2});
  CHECK(nll_loss(log_probs, from_vector({1, 0}, {2}, DType::int64)).item<float>() == Approx(2.0f));
}

TEST_CASE("losses and softmax report bad arguments", "[loss][softmax][errors]") {
  const Tensor logits = zeros({4, 3});
  const Tensor target = zeros({4}, DType::int64);
  CHECK_THROWS_WITH(cross_entropy(logits, zeros({4})),
                    Catch::Contains("cross_entropy: target must hold int64") && Catch::Contains("float32"));
  CHECK_THROWS_WITH(cross_entropy(logits, zeros({4, 1}, DType::int64)),
                    Catch::Contains("target of shape [4,1]") && Catch::Contains("[4,3]"));
  CHECK_THROWS_WITH(cross_entropy(logits, zeros({5}, DType::int64)), Catch::Contains("expected [4]"));
  CHECK_THROWS_WITH(cross_entropy(zeros({4, 3, 2}), target), Catch::Contains("logits of shape [N, C]"));
  CHECK_THROWS_WITH(cross_entropy(zeros({4, 3}, DType::int64), target), Catch::Contains("float32 or float64"));
  CHECK_THROWS_WITH(cross_entropy(zeros({0, 3}), zeros({0}, DType::int64)), Catch::Contains("empty logits"));
  CHECK_THROWS_WITH(nll_loss(logits, zeros({4}, DType::int32)), Catch::Contains("nll_loss: target must hold int64"));
  CHECK_THROWS_WITH(softmax(zeros({2, 3}), 2), Catch::Contains("softmax: dim 2 out of range"));
  CHECK_THROWS_WITH(log_softmax(zeros({2}, DType::int64)), Catch::Contains("log_softmax: needs a float32"));

  // Out-of-range targets: every CPU kernel names the value and the class count, forward and backward.
  for_each_kernel("cross_entropy", [&](Device d, const std::string&) {
    if (!d.is_cpu()) return;  // device code cannot throw
    CHECK_THROWS_WITH(cross_entropy(logits.to(d), from_vector({0, 1, 3, 2}, {4}, DType::int64).to(d)),
                      Catch::Contains("target 3") && Catch::Contains("3 classes"));
    CHECK_THROWS_WITH(cross_entropy(logits.to(d), from_vector({0, -1, 1, 2}, {4}, DType::int64).to(d)),
                      Catch::Contains("target -1") && Catch::Contains("3 classes"));
    const Tensor g = full({4}, 0.25, logits.options()).to(d);
    Tensor gl = empty({4, 3}, logits.options()).to(d);
    const Tensor bad = from_vector({0, 7, 0, 0}, {4}, DType::int64).to(d);
    CHECK_THROWS_WITH(dispatch<CrossEntropyBackwardKernel>("cross_entropy.backward", d, logits.to(d), bad, g, gl),
                      Catch::Contains("target 7") && Catch::Contains("3 classes"));
  });
  CHECK_THROWS_WITH(nll_loss(logits, from_vector({0, 1, 3, 2}, {4}, DType::int64)), Catch::Contains("out of range"));
}
