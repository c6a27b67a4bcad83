// tests/test_optim.cpp — SGD, Adam and AdamW through the Optimizer classes against values computed by
// hand (and, for longer runs, against the formulas of ops/kernel_signatures.h in double precision);
// undefined gradients, late parameters, state_dict; the learning-rate schedules against their closed forms.
#include <catch2/catch.hpp>
#include <cmath>

#include "nn/lr_schedule.h"
#include "nn/optim.h"

using namespace minidl;

namespace {

Tensor param(std::vector<double> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return from_vector(values, {n}).requires_grad_(true);
}

void set_grad(const Tensor& p, std::vector<double> values) {
  p.set_grad(from_vector(values, {static_cast<int64_t>(values.size())}));
}

// Adam in double, the formula of ops/kernel_signatures.h, for one scalar parameter.
struct RefAdam {
  double p, m = 0, v = 0;
  int64_t t = 0;
  void step(double g, const AdamOptions& o, bool decoupled) {
    ++t;
    if (decoupled)
      p -= o.lr * o.weight_decay * p;
    else
      g += o.weight_decay * p;
    m = o.beta1 * m + (1 - o.beta1) * g;
    v = o.beta2 * v + (1 - o.beta2) * g * g;
    p -= o.lr * (m / (1 - std::pow(o.beta1, t))) / (std::sqrt(v / (1 - std::pow(o.beta2, t))) + o.eps);
  }
};

}  // namespace

TEST_CASE("optim: SGD steps match hand-computed values", "[optim]") {
  // p = 1, g = 0.5 every step, lr = 0.1.
  struct Case {
    const char* what;
    SgdOptions o;
    double after1, after2;
  };
  auto opts = [](double momentum, double dampening, double wd, bool nesterov) {
    SgdOptions o;
    o.lr = 0.1;
    o.momentum = momentum;
    o.dampening = dampening;
    o.weight_decay = wd;
    o.nesterov = nesterov;
    return o;
  };
  const Case cases[] = {
      {"plain: p -= 0.1 * 0.5", opts(0, 0, 0, false), 0.95, 0.90},
      {"weight decay: g' = 0.5 + 0.1 p", opts(0, 0, 0.1, false), 0.94, 0.94 - 0.1 * (0.5 + 0.094)},
      {"momentum: b1 = 0.5, b2 = 0.9 * 0.5 + 0.5", opts(0.9, 0, 0, false), 0.95, 0.855},
      {"dampening: b1 = g, b2 = 0.9 * 0.5 + 0.5 * 0.5", opts(0.9, 0.5, 0, false), 0.95, 0.88},
      {"nesterov: d = g + 0.9 b", opts(0.9, 0, 0, true), 0.905, 0.7695},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    Tensor p = param({1.0});
    SGD sgd({p}, c.o);
    set_grad(p, {0.5});
    sgd.step();
    CHECK(p.item<float>() == Approx(c.after1).epsilon(1e-6));
    set_grad(p, {0.5});
    sgd.step();
    CHECK(p.item<float>() == Approx(c.after2).epsilon(1e-6));
    CHECK(sgd.step_count() == 2);
  }
}

TEST_CASE("optim: Adam and AdamW match hand-computed values and the double-precision formula", "[optim]") {
  AdamOptions o;
  o.lr = 0.1;
  Tensor p = param({1.0, -2.0});
  Adam adam({p}, o);
  set_grad(p, {0.5, -3.0});
  adam.step();
  // Step 1: m_hat = g and v_hat = g^2, so each parameter moves by lr * sign(g).
  CHECK(p.to_vector<float>()[0] == Approx(0.9).epsilon(1e-6));
  CHECK(p.to_vector<float>()[1] == Approx(-1.9).epsilon(1e-6));
  set_grad(p, {0.25, -3.0});
  adam.step();
  // Step 2 by hand for the first entry: m = 0.07, v = 0.00031225, m_hat = 0.07 / 0.19, v_hat = 0.00031225 / 0.001999.
  CHECK(p.to_vector<float>()[0] == Approx(0.9 - 0.1 * (0.07 / 0.19) / std::sqrt(0.00031225 / 0.001999)).epsilon(1e-5));

  for (bool decoupled : {false, true}) {
    INFO((decoupled ? "AdamW" : "Adam with L2 weight decay"));
    AdamOptions w;
    w.lr = 0.05;
    w.weight_decay = 0.1;
    w.beta1 = 0.8;
    Tensor q = param({1.0, -0.5, 2.0});
    std::unique_ptr<Optimizer> opt;
    if (decoupled)
      opt = std::make_unique<AdamW>(std::vector<Tensor>{q}, w);
    else
      opt = std::make_unique<Adam>(std::vector<Tensor>{q}, w);
    RefAdam ref[3] = {{1.0}, {-0.5}, {2.0}};
    for (int s = 1; s <= 6; ++s) {
      const std::vector<double> g = {0.3 * s, -0.1, std::sin(s)};
      set_grad(q, g);
      opt->step();
      for (int i = 0; i < 3; ++i) ref[i].step(g[i], w, decoupled);
    }
    const std::vector<float> got = q.to_vector<float>();
    for (int i = 0; i < 3; ++i) CHECK(got[i] == Approx(ref[i].p).epsilon(1e-5));
  }
  // The first AdamW step by hand: p = 1 - 0.1 * 0.01 * 1, then - 0.1 * sign(g).
  Tensor r = param({1.0});
  AdamOptions aw = AdamW::default_options();
  aw.lr = 0.1;
  AdamW adamw({r}, aw);
  set_grad(r, {0.5});
  adamw.step();
  CHECK(r.item<float>() == Approx(1 - 0.001 - 0.1).epsilon(1e-6));
}

TEST_CASE("optim: AdamW with weight decay 0 is Adam, bit for bit, with decay, one step is the hand math", "[optim]") {
  AdamOptions o;
  o.lr = 0.05;
  Tensor a = param({1.0, -2.0, 0.25}), b = param({1.0, -2.0, 0.25});
  Adam adam({a}, o);
  AdamW adamw({b}, o);  // weight_decay 0
  const std::vector<std::vector<double>> grads = {{0.5, -1.0, 2.0}, {-0.25, 0.5, 0.0}, {1.0, 1.0, -3.0}};
  for (const auto& g : grads) {
    set_grad(a, g);
    set_grad(b, g);
    adam.step();
    adamw.step();
    REQUIRE(a.to_vector<float>() == b.to_vector<float>());
  }
  // One AdamW step by hand with lr 0.01, decay 0.1, p = 2, g = -4: the decay first, p = 2 - 0.01 * 0.1 * 2 =
  // 1.998; then m^ = g, v^ = g^2 (bias-corrected first step), p -= 0.01 * (-4) / (4 + 1e-8) -> 2.008.
  AdamOptions w;
  w.lr = 0.01;
  w.weight_decay = 0.1;
  Tensor c = param({2.0});
  AdamW decayed({c}, w);
  set_grad(c, {-4.0});
  decayed.step();
  CHECK(c.item<float>() == Approx(2.0 - 0.01 * 0.1 * 2.0 + 0.01 * 4.0 / (4.0 + 1e-8)).epsilon(1e-6));
}

TEST_CASE("optim: undefined gradients are skipped, a late parameter starts at step 1", "[optim]") {
  AdamOptions o;
  o.lr = 0.1;
  Tensor a = param({1.0}), b = param({5.0});
  Adam adam({a, b}, o);
  for (int s = 0; s < 3; ++s) {
    set_grad(a, {0.5});
    b.zero_grad();
    adam.step();
  }
  CHECK(b.item<float>() == 5.0f);
  NamedTensors state = adam.state_dict();
  auto has = [&](const std::string& name) {
    for (auto& [n, t] : state)
      if (n == name) return true;
    return false;
  };
  CHECK(has("param.0.exp_avg"));
  CHECK_FALSE(has("param.1.exp_avg"));

  // b's first update is a step-1 update (bias correction with t = 1): it moves by lr * sign(g).
  set_grad(a, {0.5});
  set_grad(b, {-2.0});
  adam.step();
  CHECK(b.item<float>() == Approx(5.1).epsilon(1e-6));
  RefAdam ra{1.0};
  for (int s = 0; s < 4; ++s) ra.step(0.5, o, false);
  CHECK(a.item<float>() == Approx(ra.p).epsilon(1e-6));
  CHECK(adam.step_count() == 4);

  adam.zero_grad();
  CHECK_FALSE(a.grad().defined());
  CHECK_FALSE(b.grad().defined());
}

TEST_CASE("optim: state_dict round trip and clear errors", "[optim]") {
  SgdOptions o;
  o.lr = 0.1;
  o.momentum = 0.9;
  Tensor p = param({1.0, 2.0});
  SGD sgd({p}, o);
  set_grad(p, {0.5, 0.5});
  sgd.step();
  sgd.set_lr(0.05);

  Tensor p2 = param({1.0, 2.0});
  copy_(p2, p);
  SGD sgd2({p2}, o);
  sgd2.load_state_dict(sgd.state_dict());
  CHECK(sgd2.lr() == 0.05);
  CHECK(sgd2.step_count() == 1);
  set_grad(p, {0.25, -1.0});
  set_grad(p2, {0.25, -1.0});
  sgd.step();
  sgd2.step();
  CHECK(p2.to_vector<float>() == p.to_vector<float>());

  Tensor wide = param({1.0, 2.0, 3.0});
  SGD sgd3({wide}, o);
  CHECK_THROWS_WITH(sgd3.load_state_dict(sgd.state_dict()),
                    Catch::Contains("param.0.momentum_buffer has shape [2], expected [3]"));
  NamedTensors extra = sgd.state_dict();
  extra.emplace_back("param.7.step", zeros({1}, DType::int64));
  CHECK_THROWS_WITH(sgd2.load_state_dict(extra), Catch::Contains("unexpected param.7.step"));
  CHECK_THROWS_WITH(SGD({}, o), Catch::Contains("no parameters"));
  CHECK_THROWS_WITH(SGD({from_vector({1.0}, {1})}, o), Catch::Contains("requires grad"));
}

TEST_CASE("lr schedules follow their closed forms", "[optim][lr_schedule]") {
  const double pi = 3.14159265358979323846;
  Tensor p = param({0.0});
  SgdOptions o;
  o.lr = 1.0;

  SGD s1({p}, o);
  StepLR step_lr(s1, 2, 0.5);
  std::vector<double> got = {s1.lr()};
  for (int t = 1; t <= 6; ++t) {
    step_lr.step();
    got.push_back(s1.lr());
  }
  CHECK(got == std::vector<double>{1, 1, 0.5, 0.5, 0.25, 0.25, 0.125});

  SGD s2({p}, o);
  CosineAnnealingLR cosine(s2, 4, 0.1);
  const double expected_cos[] = {1.0, 0.1 + 0.9 * (1 + std::cos(pi / 4)) / 2, 0.55, 0.1 + 0.9 * (1 + std::cos(3 * pi / 4)) / 2,
                                 0.1, 0.1};
  CHECK(s2.lr() == Approx(expected_cos[0]));
  for (int t = 1; t <= 5; ++t) {
    cosine.step();
    CHECK(s2.lr() == Approx(expected_cos[t]));
  }

  // OneCycle: max 1, 10 steps, warm-up until step 2 (0.3 * 10 - 1), from 1/25 = 0.04 up to 1, then down
  // to 0.04 / 1e4 at step 9.
  SGD s3({p}, o);
  OneCycleLR one(s3, 1.0, 10);
  std::vector<double> lrs = {s3.lr()};
  for (int t = 1; t <= 9; ++t) {
    one.step();
    lrs.push_back(s3.lr());
  }
  CHECK(lrs[0] == Approx(0.04));
  CHECK(lrs[1] == Approx(0.52));  // half way up the cosine: (0.04 + 1) / 2
  CHECK(lrs[2] == Approx(1.0));
  for (int t = 3; t <= 9; ++t) {
    const double f = (t - 2) / 7.0;
    CHECK(lrs[t] == Approx(4e-6 + (1 - 4e-6) * (1 + std::cos(pi * f)) / 2));
  }
  CHECK(lrs[9] == Approx(4e-6));
  one.set_step(2);
  CHECK(s3.lr() == Approx(1.0));
  CHECK_THROWS_WITH(OneCycleLR(s3, 1.0, 2, 0.3), Catch::Contains("leaves no room"));
}
