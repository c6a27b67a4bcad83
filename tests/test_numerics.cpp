// tests/test_numerics.cpp — finding NaN and infinity (core/numerics.h): first_non_finite on any layout and
// device, and the MINIDL_CHECK_NUMERICS mode of the dispatcher, which must name the op, the kernel and
// the first bad index of the first kernel that produces one, and must not fire on a healthy training step.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/autograd.h"
#include "core/numerics.h"
#include "core/random.h"
#include "examples/captcha/model.h"
#include "nn/optim.h"
#include "ops/optim_ops.h"
#include "tests/test_util.h"

using namespace minidl;
using minidl::testing::test_devices;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Turns the check on for a scope and restores the previous state.
struct NumericsScope {
  explicit NumericsScope(bool on) : previous(numerics_checking()) { set_numerics_checking(on); }
  ~NumericsScope() { set_numerics_checking(previous); }
  bool previous;
};

// A captcha model small enough for a test: every layer kind of the real one (conv, batch norm, relu,
// max-pool, dropout, bidirectional GRU, linear, log_softmax), trained with ctc_loss.
captcha::ModelConfig tiny_captcha_config() {
  captcha::ModelConfig c;
  c.width = 32;
  c.height = 16;
  c.classes = 5;
  c.channels = {4, 4};
  c.convs_per_block = 1;
  c.gru_hidden = 8;
  c.gru_layers = 1;
  c.dropout = 0.1;
  return c;
}

}  // namespace

TEST_CASE("first_non_finite: finds the first NaN or infinity in row-major order, any layout", "[numerics]") {
  for (DType t : {DType::float32, DType::float64}) {
    INFO(dtype_name(t));
    CHECK_FALSE(first_non_finite(from_vector({1, 2, 3}, {3}, t)).found());
    const NonFinite nan_at_2 = first_non_finite(from_vector({1, 2, kNaN, kInf}, {2, 2}, t));
    CHECK(nan_at_2.index == 2);
    CHECK(std::isnan(nan_at_2.value));
    const NonFinite inf = first_non_finite(from_vector({0, -kInf, 1}, {3}, t));
    CHECK(inf.index == 1);
    CHECK(inf.value == -kInf);
    // A transposed view: row-major order of the view, not of the storage.
    const Tensor x = from_vector({0, 1, 2, kNaN, 4, 5}, {2, 3}, t).transpose(0, 1);  // [3, 2]; NaN at (0, 1)
    CHECK(first_non_finite(x).index == 1);
  }
  CHECK_FALSE(first_non_finite(from_vector({1, 2}, {2}, DType::int64)).found());
  CHECK_FALSE(first_non_finite(Tensor()).found());
  CHECK(index_str({2, 3, 4}, 23) == "[1,2,3]");
  CHECK(index_str({}, 0) == "[]");
  CHECK(number_str(kNaN) == "nan");
  CHECK(number_str(-kNaN) == "nan");
  CHECK(number_str(-kInf) == "-inf");
  CHECK(number_str(0.5) == "0.5");
}

TEST_CASE("MINIDL_CHECK_NUMERICS: the first kernel that writes NaN or inf is named with the index",
          "[numerics]") {
  NumericsScope on(true);
  // log(-1) = NaN at [1, 0]: the op is log, whatever kernel serves it.
  const Tensor x = from_vector({1, 2, -1, 4}, {2, 2});
  try {
    log(x);
    FAIL("log(-1) passed the numerics check");
  } catch (const NonFiniteError& e) {
    const std::string kernel = last_kernel("log", DeviceType::cpu);
    CHECK_THAT(e.what(), Catch::StartsWith("numerics: log (kernel '" + kernel + "' on cpu) wrote nan") &&
                             Catch::Contains("output 1 of 1, [2,2] float32") &&
                             Catch::Contains("at index [1,0] (flat 2)"));
  }
  // 1 / 0 = inf.
  CHECK_THROWS_WITH(div(from_vector({1, 1}, {2}), from_vector({1, 0}, {2})),
                    Catch::StartsWith("numerics: div") && Catch::Contains("wrote inf") && Catch::Contains("[1]"));
  // A NaN that comes from outside the kernels (data, loaded parameters) is reported by the first kernel
  // that writes it on.
  Tensor outside;
  {
    NumericsScope off(false);
    outside = from_vector({0, kNaN}, {2});
  }
  CHECK_THROWS_WITH(neg(outside), Catch::StartsWith("numerics: neg") && Catch::Contains("[1]"));
  // Finite results pass.
  CHECK(exp(from_vector({0}, {1})).item<double>() == 1);
}

TEST_CASE("MINIDL_CHECK_NUMERICS: in-place outputs (optimizer parameters, moments) are checked", "[numerics]") {
  NumericsScope on(true);
  std::vector<Tensor> params = {from_vector({1, 2}, {2}), from_vector({3}, {1})};
  std::vector<Tensor> grads = {from_vector({0.1, 0.2}, {2}), from_vector({kNaN}, {1})};
  std::vector<Tensor> m = {zeros({2}), zeros({1})}, v = {zeros({2}), zeros({1})};
  AdamParams h;
  CHECK_THROWS_WITH(adam_step(params, grads, m, v, h),
                    Catch::StartsWith("numerics: adam_step") && Catch::Contains("output 1[1] of 3") &&
                        Catch::Contains("wrote nan"));
}

TEST_CASE("MINIDL_CHECK_NUMERICS: off, nothing is checked", "[numerics]") {
  NumericsScope off(false);
  CHECK(std::isnan(log(from_vector({-1}, {1})).item<double>()));
}

TEST_CASE("MINIDL_CHECK_NUMERICS: a healthy training step of every layer kind passes", "[numerics]") {
  for (Device device : test_devices()) {
    INFO(device.str());
    manual_seed(3);
    captcha::CaptchaModel model(tiny_captcha_config());
    model.to(device);
    Adam adam(model.parameters(), AdamOptions());
    const Tensor x = rand({2, 3, 16, 32}).to(device);
    // ctc_loss's log_alpha holds -inf for unreachable states by contract: it must not be reported.
    const Tensor targets = from_vector({1, 2, 3, 1, 0, 0}, {2, 3}, DType::int64);
    const Tensor input_lengths = from_vector({16, 16}, {2}, DType::int64);
    const Tensor target_lengths = from_vector({3, 1}, {2}, DType::int64);
    NumericsScope on(true);
    for (int step = 0; step < 2; ++step) {
      const Tensor loss = ctc_loss(model(x), targets, input_lengths, target_lengths, 0, true);
      adam.zero_grad();
      loss.backward();
      adam.step();
      CHECK(std::isfinite(loss.item<double>()));
    }
    // And a classifier's step: cross-entropy, argmax.
    const Tensor logits = from_vector({0.5, -1, 2, 0}, {2, 2}).to(device);
    CHECK(std::isfinite(cross_entropy(logits, from_vector({0, 1}, {2}, DType::int64).to(device)).item<double>()));
  }
}

TEST_CASE("MINIDL_CHECK_NUMERICS: the variable must be a switch", "[numerics]") {
  const char* old = std::getenv("MINIDL_CHECK_NUMERICS");
  const std::string saved = old ? old : "";
  ::setenv("MINIDL_CHECK_NUMERICS", "maybe", 1);
  CHECK_THROWS_WITH(check_numerics_environment(),
                    Catch::Contains("MINIDL_CHECK_NUMERICS='maybe' is not valid; expected 1 or 0"));
  for (const char* ok : {"1", "yes", "0", "off"}) {
    ::setenv("MINIDL_CHECK_NUMERICS", ok, 1);
    CHECK_NOTHROW(check_numerics_environment());
  }
  if (old)
    ::setenv("MINIDL_CHECK_NUMERICS", saved.c_str(), 1);
  else
    ::unsetenv("MINIDL_CHECK_NUMERICS");
}

TEST_CASE("MINIDL_CHECK_NUMERICS on the GPU: outputs are copied to the host and checked", "[cuda]") {
  const std::vector<Device> devices = test_devices();
  if (devices.size() < 2) return;  // test_devices() has said why
  const Device gpu = devices[1];
  NumericsScope on(true);
  const Tensor x = from_vector({1, 2, -1, 4, 5, 6}, {2, 3}).to(gpu);
  try {
    log(x);
    FAIL("log(-1) on the GPU passed the numerics check");
  } catch (const NonFiniteError& e) {
    const std::string kernel = last_kernel("log", DeviceType::cuda);
    CHECK_THAT(e.what(), Catch::StartsWith("numerics: log (kernel '" + kernel + "' on cuda) wrote nan") &&
                             Catch::Contains("at index [0,2] (flat 2)"));
  }
  std::vector<Tensor> params = {from_vector({1, 2}, {2}).to(gpu)};
  std::vector<Tensor> grads = {from_vector({kInf, 0}, {2}).to(gpu)};
  std::vector<Tensor> m = {zeros({2}, gpu)}, v = {zeros({2}, gpu)};
  CHECK_THROWS_WITH(adam_step(params, grads, m, v, AdamParams()), Catch::StartsWith("numerics: adam_step"));
}
