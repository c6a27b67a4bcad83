// tests/test_optim_kernels.cpp — the fused optimizer updates (ops/optim_ops.h): values by hand for one and
// two steps of every SGD and Adam variant, every kernel against the naive CPU reference, errors.
#include <catch2/catch.hpp>
#include <cmath>

#include "core/dispatch.h"
#include "core/random.h"
#include "nn/optim.h"
#include "ops/optim_ops.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

// One parameter p = 1 with a constant gradient g = 0.5: p after each of `steps` SGD steps.
std::vector<float> sgd_from_one(Device d, SgdParams h, int steps) {
  std::vector<Tensor> params{ones({1}, d)}, grads{full({1}, 0.5, d)}, buffers;
  // Garbage in the buffer: the first step must overwrite it with g'.
  if (h.momentum > 0) buffers.push_back(full({1}, 123.0, d));
  std::vector<float> out;
  for (int s = 0; s < steps; ++s) {
    h.first_step = s == 0;
    sgd_step(params, grads, buffers, h);
    out.push_back(params[0].item<float>());
  }
  return out;
}

// The same for Adam (t = 1, 2, ...), moments starting at zero.
std::vector<float> adam_from_one(Device d, AdamParams h, int steps) {
  std::vector<Tensor> params{ones({1}, d)}, grads{full({1}, 0.5, d)}, m{zeros({1}, d)}, v{zeros({1}, d)};
  std::vector<float> out;
  for (int s = 1; s <= steps; ++s) {
    h.step = s;
    adam_step(params, grads, m, v, h);
    out.push_back(params[0].item<float>());
  }
  return out;
}

std::vector<Tensor> copies_on(const std::vector<Tensor>& ts, Device d) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.to(d).clone());
  return out;
}

// Odd sizes, and one tensor above the 32k elements where fused_omp uses threads.
const std::vector<Shape> kShapes = {{7}, {13, 5}, {3, 1, 9}, {211, 203}, {1}};

std::vector<Tensor> random_list(double lo, double hi) {
  std::vector<Tensor> out;
  for (const Shape& s : kShapes) out.push_back(uniform(s, lo, hi, DType::float32));
  return out;
}

std::string compare_lists(const std::vector<Tensor>& got, const std::vector<Tensor>& ref, double rtol, double atol) {
  std::string msg;
  for (size_t i = 0; i < got.size(); ++i) {
    const std::string m = compare(got[i], ref[i], rtol, atol);
    if (!m.empty()) msg += "tensor " + std::to_string(i) + ": " + m;
  }
  return msg;
}

}  // namespace

TEST_CASE("sgd_step: one and two steps by hand", "[optim]") {
  for_each_kernel("sgd_step", [&](Device d, const std::string& name) {
    SgdParams h;
    h.lr = 0.1;
    // plain: p -= 0.1 * 0.5
    auto p = sgd_from_one(d, h, 2);
    CHECK(last_kernel("sgd_step", d.type) == name);
    CHECK(p[0] == Approx(0.95));
    CHECK(p[1] == Approx(0.9));

    SgdParams decay = h;  // g' = 0.5 + 0.1 p
    decay.weight_decay = 0.1;
    p = sgd_from_one(d, decay, 2);
    CHECK(p[0] == Approx(0.94));
    CHECK(p[1] == Approx(0.8806));  // 0.94 - 0.1 * (0.5 + 0.094)

    SgdParams momentum = h;  // b = 0.5, then 0.9 * 0.5 + 0.5 = 0.95
    momentum.momentum = 0.9;
    p = sgd_from_one(d, momentum, 2);
    CHECK(p[0] == Approx(0.95));
    CHECK(p[1] == Approx(0.855));

    SgdParams dampening = momentum;  // first step ignores dampening; then b = 0.45 + 0.5 * 0.5 = 0.7
    dampening.dampening = 0.5;
    p = sgd_from_one(d, dampening, 2);
    CHECK(p[0] == Approx(0.95));
    CHECK(p[1] == Approx(0.88));

    SgdParams nesterov = momentum;  // d = g' + 0.9 b: 0.5 + 0.45, then 0.5 + 0.9 * 0.95
    nesterov.nesterov = true;
    p = sgd_from_one(d, nesterov, 2);
    CHECK(p[0] == Approx(0.905));
    CHECK(p[1] == Approx(0.7695));

    nesterov.weight_decay = 0.1;  // g' = 0.6: b = 0.6, d = 1.14; then g' = 0.5886, b = 1.1286, d = 1.60434
    p = sgd_from_one(d, nesterov, 2);
    CHECK(p[0] == Approx(0.886));
    CHECK(p[1] == Approx(0.725566));
  });
}

TEST_CASE("sgd_step initialises the momentum buffer on the first step", "[optim]") {
  for_each_kernel("sgd_step", [&](Device d, const std::string&) {
    std::vector<Tensor> params{from_vector({1, 2}, {2}).to(d)}, grads{from_vector({0.5, -1}, {2}).to(d)};
    std::vector<Tensor> buffers{full({2}, 7.0, d)};
    SgdParams h;
    h.lr = 0.1;
    h.momentum = 0.9;
    h.dampening = 0.5;
    h.weight_decay = 0.1;
    h.first_step = true;
    sgd_step(params, grads, buffers, h);
    // b = g' = g + 0.1 p
    CHECK(compare(buffers[0], from_vector({0.6, -0.8}, {2}), 1e-6, 1e-7) == "");
    CHECK(compare(params[0], from_vector({0.94, 2.08}, {2}), 1e-6, 1e-7) == "");
  });
}

TEST_CASE("adam_step: Adam and AdamW, one and two steps by hand, with bias correction", "[optim]") {
  for_each_kernel("adam_step", [&](Device d, const std::string& name) {
    AdamParams h;
    h.lr = 0.1;
    // Step 1: m/c1 = g, v/c2 = g^2, so p moves by lr * g / (|g| + eps) ~ lr; with a constant gradient
    // the bias-corrected step stays ~lr on step 2 too.
    auto p = adam_from_one(d, h, 2);
    CHECK(last_kernel("adam_step", d.type) == name);
    CHECK(p[0] == Approx(0.900000002).epsilon(1e-6));
    CHECK(p[1] == Approx(0.800000004).epsilon(1e-6));

    AdamParams coupled = h;  // g += 0.1 p: invisible on step 1 (normalised), visible on step 2
    coupled.weight_decay = 0.1;
    p = adam_from_one(d, coupled, 2);
    CHECK(p[0] == Approx(0.9000000017).epsilon(1e-6));
    CHECK(p[1] == Approx(0.8000473405).epsilon(1e-6));

    AdamParams decoupled = coupled;  // p *= 1 - lr * wd before the Adam step
    decoupled.decoupled_weight_decay = true;
    p = adam_from_one(d, decoupled, 2);
    CHECK(p[0] == Approx(0.890000002).epsilon(1e-6));
    CHECK(p[1] == Approx(0.78110000398).epsilon(1e-6));
  });
}

TEST_CASE("optimizer kernels match the naive reference on random lists", "[optim]") {
  manual_seed(51);
  const std::vector<Tensor> params = random_list(-1, 1), grads1 = random_list(-2, 2), grads2 = random_list(-2, 2);

  struct SgdCase {
    const char* name;
    SgdParams h;
  };
  std::vector<SgdCase> sgd_cases(4);
  sgd_cases[0] = {"plain", {}};
  sgd_cases[1] = {"momentum, dampening, weight decay", {}};
  sgd_cases[1].h.momentum = 0.9;
  sgd_cases[1].h.dampening = 0.3;
  sgd_cases[1].h.weight_decay = 1e-2;
  sgd_cases[2] = {"nesterov", {}};
  sgd_cases[2].h.momentum = 0.8;
  sgd_cases[2].h.nesterov = true;
  sgd_cases[3] = {"nesterov with weight decay", sgd_cases[2].h};
  sgd_cases[3].h.weight_decay = 0.05;
  for (const SgdCase& c : sgd_cases) {
    INFO("sgd " << c.name);
    // Two steps (the first initialises the buffers) with different gradients.
    auto run = [&](Device d, std::vector<Tensor>& buffers) {
      std::vector<Tensor> p = copies_on(params, d);
      buffers = c.h.momentum > 0 ? copies_on(random_list(5, 6), d) : std::vector<Tensor>{};
      SgdParams h = c.h;
      h.lr = 0.05;
      h.first_step = true;
      sgd_step(p, copies_on(grads1, d), buffers, h);
      h.first_step = false;
      sgd_step(p, copies_on(grads2, d), buffers, h);
      return p;
    };
    std::vector<Tensor> ref_buffers;
    std::vector<Tensor> ref;
    {
      SelectionReset reset;
      select_kernel("sgd_step", DeviceType::cpu, "naive");
      ref = run(Device::cpu(), ref_buffers);
    }
    for_each_kernel("sgd_step", [&](Device d, const std::string& name) {
      std::vector<Tensor> buffers;
      const std::vector<Tensor> got = run(d, buffers);
      CHECK(last_kernel("sgd_step", d.type) == name);
      CHECK(compare_lists(got, ref, 1e-6, 1e-6) == "");
      CHECK(compare_lists(buffers, ref_buffers, 1e-6, 1e-6) == "");
    });
  }

  for (bool decoupled : {false, true}) {
    INFO("adam, decoupled weight decay " << decoupled);
    auto run = [&](Device d, std::vector<Tensor>& m, std::vector<Tensor>& v) {
      std::vector<Tensor> p = copies_on(params, d);
      m.clear();
      v.clear();
      for (const Tensor& t : params) {
        m.push_back(zeros(t.shape(), d));
        v.push_back(zeros(t.shape(), d));
      }
      AdamParams h;
      h.lr = 0.01;
      h.weight_decay = 0.1;
      h.decoupled_weight_decay = decoupled;
      for (int64_t t = 1; t <= 3; ++t) {
        h.step = t;
        adam_step(p, copies_on(t % 2 ? grads1 : grads2, d), m, v, h);
      }
      return p;
    };
    std::vector<Tensor> ref_m, ref_v, ref;
    {
      SelectionReset reset;
      select_kernel("adam_step", DeviceType::cpu, "naive");
      ref = run(Device::cpu(), ref_m, ref_v);
    }
    for_each_kernel("adam_step", [&](Device d, const std::string& name) {
      std::vector<Tensor> m, v;
      const std::vector<Tensor> got = run(d, m, v);
      CHECK(last_kernel("adam_step", d.type) == name);
      CHECK(compare_lists(got, ref, 1e-6, 1e-6) == "");
      CHECK(compare_lists(m, ref_m, 1e-5, 1e-7) == "");
      CHECK(compare_lists(v, ref_v, 1e-5, 1e-9) == "");
    });
  }
}

TEST_CASE("optimizer updates report bad arguments", "[optim][errors]") {
  std::vector<Tensor> p{zeros({2}), zeros({3})}, g{zeros({2}), zeros({3})}, b{zeros({2}), zeros({3})};
  SgdParams h;
  h.momentum = 0.9;
  std::vector<Tensor> one_grad{zeros({2})}, none;
  CHECK_THROWS_WITH(sgd_step(p, one_grad, b, h), Catch::Contains("sgd_step: 2 params but 1 grads"));
  CHECK_THROWS_WITH(sgd_step(p, g, none, h), Catch::Contains("2 params but 0 momentum_buffers"));
  std::vector<Tensor> bad_shape{zeros({2}), zeros({4})};
  CHECK_THROWS_WITH(sgd_step(p, bad_shape, b, h),
                    Catch::Contains("grads[1] has shape [4] but params[1] has shape [3]"));
  std::vector<Tensor> f64{zeros({2}, DType::float64), zeros({3})};
  CHECK_THROWS_WITH(sgd_step(f64, g, b, h), Catch::Contains("params[0] is float64") && Catch::Contains("float32"));
  std::vector<Tensor> strided{zeros({2, 3}).transpose(0, 1)}, g23{zeros({3, 2})}, b23{zeros({3, 2})};
  CHECK_THROWS_WITH(sgd_step(strided, g23, b23, h), Catch::Contains("params[0] of shape [3,2] is not contiguous"));
  SgdParams nesterov_without_momentum;
  nesterov_without_momentum.nesterov = true;
  CHECK_THROWS_WITH(sgd_step(p, g, none, nesterov_without_momentum), Catch::Contains("nesterov"));

  AdamParams a;
  a.step = 0;
  CHECK_THROWS_WITH(adam_step(p, g, b, b, a), Catch::Contains("adam_step: step counts from 1, got 0"));
  a.step = 1;
  std::vector<Tensor> one_m{zeros({2})};
  CHECK_THROWS_WITH(adam_step(p, g, one_m, b, a), Catch::Contains("2 params but 1 m"));

  // Without momentum the buffer list may be empty; an empty parameter list does nothing.
  SgdParams plain;
  CHECK_NOTHROW(sgd_step(p, g, none, plain));
  std::vector<Tensor> empty_list;
  CHECK_NOTHROW(adam_step(empty_list, empty_list, empty_list, empty_list, a));
}

TEST_CASE("optimizer kernels: device scalars give the updates of the same plain values", "[optim]") {
  // What a captured CUDA graph relies on (SgdParams/AdamParams::scalars): the learning rate and step read
  // from a float64 tensor on the device when the kernel runs.
  for_each_kernel("adam_step", [&](Device d, const std::string& name) {
    const Tensor p0 = uniform({1000}, -1, 1, DType::float32), g = uniform({1000}, -1, 1, DType::float32);
    const Tensor m0 = uniform({1000}, -0.1, 0.1, DType::float32), v0 = uniform({1000}, 0, 0.1, DType::float32);
    auto run = [&](bool with_scalars) {
      std::vector<Tensor> p{p0.clone().to(d)}, gs{g.to(d)}, m{m0.clone().to(d)}, v{v0.clone().to(d)};
      AdamParams h;
      h.lr = with_scalars ? 99.0 : 3e-3;  // ignored when scalars are given
      h.step = with_scalars ? 1 : 7;
      if (with_scalars) h.scalars = from_vector({3e-3, 7.0}, {2}, TensorOptions(DType::float64, d));
      adam_step(p, gs, m, v, h);
      CHECK(last_kernel("adam_step", d.type) == name);
      return std::vector<std::vector<float>>{p[0].to_vector<float>(), m[0].to_vector<float>(), v[0].to_vector<float>()};
    };
    CHECK(run(true) == run(false));
  });
  for_each_kernel("sgd_step", [&](Device d, const std::string& name) {
    const Tensor p0 = uniform({1000}, -1, 1, DType::float32), g = uniform({1000}, -1, 1, DType::float32);
    const Tensor b0 = uniform({1000}, -0.1, 0.1, DType::float32);
    for (bool first : {true, false}) {
      auto run = [&](bool with_scalars) {
        std::vector<Tensor> p{p0.clone().to(d)}, gs{g.to(d)}, b{b0.clone().to(d)};
        SgdParams h;
        h.momentum = 0.9;
        h.lr = with_scalars ? 99.0 : 0.05;
        h.first_step = with_scalars ? !first : first;  // ignored when scalars are given
        if (with_scalars) h.scalars = from_vector({0.05, first ? 1.0 : 0.0}, {2}, TensorOptions(DType::float64, d));
        sgd_step(p, gs, b, h);
        CHECK(last_kernel("sgd_step", d.type) == name);
        return std::vector<std::vector<float>>{p[0].to_vector<float>(), b[0].to_vector<float>()};
      };
      CHECK(run(true) == run(false));
    }
  });
  std::vector<Tensor> p{zeros({3})}, g{zeros({3})}, m{zeros({3})}, v{zeros({3})};
  AdamParams h;
  h.scalars = from_vector({1e-3, 1.0, 0.0}, {3}, TensorOptions(DType::float64, Device::cpu()));
  CHECK_THROWS_WITH(adam_step(p, g, m, v, h), Catch::Contains("scalars must be 2 float64 values"));
}

TEST_CASE("optimizer: begin_step and finish_step make one step, and every_parameter needs every gradient", "[optim]") {
  auto make = [] {
    Tensor w = from_vector({1.0, 2.0, 3.0}, {3}, TensorOptions(DType::float32, Device::cpu()).with_requires_grad());
    Tensor b = from_vector({0.5}, {1}, TensorOptions(DType::float32, Device::cpu()).with_requires_grad());
    return std::vector<Tensor>{w, b};
  };
  const std::vector<Tensor> a = make(), split = make();
  AdamOptions o;
  o.lr = 0.1;
  Adam one(a, o), two(split, o);
  for (int step = 0; step < 3; ++step) {
    for (const auto& ps : {a, split}) {
      ps[0].set_grad(from_vector({0.1 * step, -0.2, 0.3}, {3}, TensorOptions(DType::float32, Device::cpu())));
      ps[1].set_grad(from_vector({1.0}, {1}, TensorOptions(DType::float32, Device::cpu())));
    }
    one.step();
    two.begin_step();
    two.finish_step();
  }
  CHECK(a[0].to_vector<float>() == split[0].to_vector<float>());
  CHECK(a[1].to_vector<float>() == split[1].to_vector<float>());
  CHECK(two.step_count() == 3);
  // A parameter counted by begin_step(true) that then has no gradient is an error, not a silent skip.
  split[1].zero_grad();
  two.begin_step(/*every_parameter=*/true);
  CHECK_THROWS_WITH(two.finish_step(), Catch::Contains("parameter 1 has no gradient"));
  CHECK_THROWS_WITH([&] { two.begin_step(); two.begin_step(); }(), Catch::Contains("twice"));
  // A replayed graph ran the update: finish_step_replayed() ends the step without updating anything.
  const std::vector<float> before = split[0].to_vector<float>();
  const int64_t steps = two.step_count();
  CHECK(two.step_pending());
  two.finish_step_replayed();
  CHECK_FALSE(two.step_pending());
  CHECK(split[0].to_vector<float>() == before);
  two.begin_step();
  two.finish_step_replayed();
  CHECK(two.step_count() == steps + 1);
  CHECK_THROWS_WITH(two.finish_step_replayed(), Catch::Contains("without begin_step"));
}
