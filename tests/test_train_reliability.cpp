// tests/test_train_reliability.cpp — the checks that make the training programs fail early and clearly:
// MINIDL_* variables validated up front on any device, the flag checks of examples/flags.h, the step
// count a one-cycle schedule needs, progress over an empty loop. (The programs themselves are exercised
// by tests/train_reliability_test.sh.)
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <limits>
#include <string>

#include "core/backend.h"
#include "core/numerics.h"
#include "core/random.h"
#include "examples/flags.h"
#include "examples/train_guard.h"
#include "nn/layers.h"
#include "nn/lr_schedule.h"
#include "nn/optim.h"
#include "nn/progress.h"
#include "ops/ops.h"
#include "tools/settings.h"
#include "tests/env_scope.h"

using namespace minidl;
using minidl::testing::EnvScope;

namespace {

// What a CLI11 validator says about `text` ("" when it accepts it).
std::string verdict(const CLI::Validator& v, std::string text) { return v(text); }

}  // namespace

TEST_CASE("environment: a malformed MINIDL_CUDA_MEMORY_LIMIT fails up front, whatever the device",
          "[reliability]") {
  {
    EnvScope limit("MINIDL_CUDA_MEMORY_LIMIT", "garbage");
    CHECK_THROWS_WITH(check_environment(), Catch::Contains("MINIDL_CUDA_MEMORY_LIMIT") && Catch::Contains("'garbage'"));
    CHECK_THAT(describe_cuda_memory_limit_environment(), Catch::StartsWith("INVALID: ") && Catch::Contains("garbage"));
  }
  {
    EnvScope limit("MINIDL_CUDA_MEMORY_LIMIT", "50%");
    CHECK_NOTHROW(check_environment());
    CHECK(describe_cuda_memory_limit_environment() == "MINIDL_CUDA_MEMORY_LIMIT=50%");
  }
  {
    EnvScope limit("MINIDL_CUDA_MEMORY_LIMIT", "");
    CHECK(describe_cuda_memory_limit_environment() == "none set");
  }
  {
    EnvScope numerics("MINIDL_CHECK_NUMERICS", "2");
    CHECK_THROWS_WITH(check_environment(), Catch::Contains("MINIDL_CHECK_NUMERICS"));
  }
  {
    EnvScope fuse("MINIDL_FUSE_RELU", "maybe");
    CHECK_THROWS_WITH(check_fusion_environment(), Catch::Contains("MINIDL_FUSE_RELU='maybe' is not valid"));
  }
  for (const char* ok : {"0", "1", "", "off", "yes"}) {
    EnvScope fuse("MINIDL_FUSE_RELU", ok);
    CHECK_NOTHROW(check_fusion_environment());
  }
  // The parser itself (also built without CUDA now).
  CHECK(parse_cuda_memory_limit("512M", 0) == size_t(512) << 20);
  CHECK_THROWS_WITH(parse_cuda_memory_limit("4X", 0), Catch::Contains("cannot parse '4X'"));
}

TEST_CASE("minidl info settings: the fusion, its devices, the numerics check, and invalid values",
          "[reliability]") {
  {
    EnvScope fuse("MINIDL_FUSE_RELU", "");
    EnvScope numerics("MINIDL_CHECK_NUMERICS", "");
    const std::string report = settings_report();
    CHECK_THAT(report, Catch::Contains("MINIDL_FUSE_RELU           on:") && Catch::Contains("bias_relu: cpu") &&
                           Catch::Contains("batch_norm_relu: cpu"));
    CHECK_THAT(report, Catch::Contains("MINIDL_CHECK_NUMERICS      off"));
  }
  {
    EnvScope fuse("MINIDL_FUSE_RELU", "maybe");
    EnvScope numerics("MINIDL_CHECK_NUMERICS", "7");
    const std::string report = settings_report();
    CHECK_THAT(report, Catch::Contains("MINIDL_FUSE_RELU           INVALID: ") &&
                           Catch::Contains("MINIDL_FUSE_RELU='maybe' is not valid"));
    CHECK_THAT(report, Catch::Contains("MINIDL_CHECK_NUMERICS      INVALID:") && Catch::Contains("'7'"));
  }
  set_relu_fusion(false);
  CHECK_THAT(settings_report(), Catch::Contains("MINIDL_FUSE_RELU           off"));
  set_relu_fusion(true);
}

TEST_CASE("flag checks: one range check for every numeric flag, with plain numbers in its message",
          "[reliability]") {
  using examples::FlagRange;
  using examples::number_in;
  const CLI::Validator lr = number_in(FlagRange::above(0));
  CHECK(verdict(lr, "2e-3").empty());
  CHECK(verdict(lr, "inf") == "must be a finite number above 0, got inf");
  CHECK(verdict(lr, "nan") == "must be a finite number above 0, got nan");
  CHECK(verdict(lr, "0") == "must be a finite number above 0, got 0");
  CHECK(verdict(lr, "-1") == "must be a finite number above 0, got -1");
  CHECK(verdict(lr, "1e999") == "must be a finite number above 0, got 1e999");  // infinite as a double
  CHECK(verdict(lr, "fast") == "'fast' is not a number");
  CHECK(verdict(lr, "1e-3x") == "'1e-3x' is not a number");
  CHECK(verdict(lr, " 1") == "' 1' is not a number");

  const CLI::Validator p = number_in(FlagRange::real(0, 1).excluding_hi());
  CHECK(verdict(p, "0").empty());
  CHECK(verdict(p, "0.5").empty());
  CHECK(verdict(p, "1") == "must be a number in [0, 1), got 1");
  CHECK(verdict(p, "-0.1") == "must be a number in [0, 1), got -0.1");
  // `captcha train --weight-decay nan` ran with 0.01 (CLI11's Range lets NaN through its comparisons).
  CHECK(verdict(number_in(FlagRange::real(0, 1)), "nan") == "must be a number in [0, 1], got nan");
  CHECK(verdict(number_in(FlagRange::real(0, 1).excluding_lo().with_note("a fraction, e.g. 0.99")), "99") ==
        "must be a number in (0, 1] (a fraction, e.g. 0.99), got 99");

  // Whole numbers: the type's bound in plain digits (`--count 0` printed a 300-digit bound), negatives
  // refused for unsigned flags (CLI11 wraps -1 to 2^64 - 1: `--seed -1` was accepted).
  CHECK(verdict(number_in(FlagRange::whole<int64_t>(1)), "0") ==
        "must be a whole number from 1 to 9223372036854775807, got 0");
  const CLI::Validator seed = number_in(FlagRange::whole<uint64_t>(0));
  CHECK(verdict(seed, "18446744073709551615").empty());
  CHECK(verdict(seed, "-1") == "must be a whole number from 0 to 18446744073709551615, got -1");
  CHECK(verdict(seed, "18446744073709551616") == "must be a whole number from 0 to 18446744073709551615, got "
                                                 "18446744073709551616");
  CHECK(verdict(seed, "1e3") == "'1e3' is not a whole number");
  CHECK(verdict(seed, "2.5") == "'2.5' is not a whole number");
  CHECK(verdict(seed, "nan") == "'nan' is not a whole number");
  CHECK(verdict(number_in(FlagRange::whole<int>(0, 1024)), "-1") == "must be a whole number from 0 to 1024, got -1");
  CHECK(verdict(number_in(FlagRange::whole<int>(0, 1024)), "+7").empty());

  CHECK(verdict(examples::non_empty(), "m.ckpt").empty());
  CHECK(verdict(examples::non_empty(), "") == "needs a file name, got an empty one");
}

TEST_CASE("flag checks: a flag given twice says so, naming it", "[reliability]") {
  CLI::App app{"test"};
  int epochs = 0;
  app.add_option("--epochs", epochs);
  std::string message;
  try {
    app.parse(std::vector<std::string>{"2", "--epochs", "1", "--epochs"});  // reversed: "--epochs 1 --epochs 2"
  } catch (const CLI::ParseError& e) {
    CHECK(std::string(e.what()) == "--epochs: At Most 1 required but received 2");  // CLI11's words
    message = examples::parse_error_message(e);
  }
  CHECK(message == "--epochs was given twice: give it once");
  try {
    app.parse(std::vector<std::string>{"3", "--epochs", "2", "--epochs", "1", "--epochs"});
  } catch (const CLI::ParseError& e) {
    message = examples::parse_error_message(e);
  }
  CHECK(message == "--epochs was given 3 times: give it once");
  try {  // other errors keep CLI11's words
    app.parse(std::vector<std::string>{"--nope"});
  } catch (const CLI::ParseError& e) {
    message = examples::parse_error_message(e);
  }
  CHECK_THAT(message, Catch::Contains("--nope"));
}

TEST_CASE("OneCycleLR: the fewest steps it can schedule, and a message that says so", "[reliability]") {
  CHECK(OneCycleLR::min_total_steps(0.3) == 4);
  CHECK(OneCycleLR::min_total_steps(0.25) == 5);
  CHECK(OneCycleLR::min_total_steps(0.5) == 3);
  Tensor w = zeros({1}, TensorOptions().with_requires_grad());
  SGD sgd({w}, SgdOptions());
  CHECK_NOTHROW(OneCycleLR(sgd, 1.0, 4));
  CHECK_THROWS_WITH(OneCycleLR(sgd, 1.0, 3), Catch::Contains("leaves no room") && Catch::Contains("at least 4 steps"));
  CHECK_THROWS_WITH(OneCycleLR(sgd, std::numeric_limits<double>::infinity(), 100), Catch::Contains("max_lr inf"));
}

TEST_CASE("Progress: a loop of zero steps is not an error", "[reliability]") {
  std::FILE* out = std::tmpfile();
  REQUIRE(out != nullptr);
  Progress progress("test", 0, Progress::Mode::plain, out);
  CHECK_FALSE(progress.due(0));
  progress.update(0, 0, 0, 0);
  progress.finish("done");
  std::rewind(out);
  char line[64] = {};
  CHECK(std::fgets(line, sizeof line, out) != nullptr);
  CHECK(std::string(line) == "done\n");
  std::fclose(out);
  CHECK_THROWS_WITH(Progress("test", -1), Catch::Contains("must not be negative"));
}

TEST_CASE("divergence guard: a loss far above the run's first stops the run, after a resume too",
          "[reliability]") {
  examples::DivergenceGuard guard("m.ckpt");
  CHECK(guard.metadata().empty());
  guard.check_loss(2.3, 1, 1e-3);
  CHECK(guard.metadata().at("first_loss") == examples::exact_number(2.3));
  CHECK_NOTHROW(guard.check_loss(2.3 * 9999, 2, 1e-3));  // a spike, but within the bound
  // `--lr 1e4`: a train loss of 7.5e17 was saved with exit 0.
  CHECK_THROWS_AS(guard.check_loss(7.5e17, 3, 1e4), NonFiniteError);
  CHECK_THROWS_WITH(guard.check_loss(7.5e17, 3, 1e4),
                    Catch::StartsWith("training diverged: the loss is 7.5e+17 at step 3 (learning rate 10000), more "
                                      "than 10000 times the run's first loss 2.3") &&
                        Catch::Contains("m.ckpt was not written by this run"));
  CHECK_NOTHROW(guard.check_eval_loss(1.0, "validation", 1, 10));
  CHECK_THROWS_WITH(guard.check_eval_loss(2.3e5, "validation", 1, 10),
                    Catch::StartsWith("training diverged: the validation loss after epoch 1 is 230000, more than"));
  CHECK_THROWS_WITH(guard.check_eval_loss(std::nan(""), "test", 1, 10),
                    Catch::StartsWith("training diverged: the test loss after epoch 1 is nan."));

  // Resumed: the saved first loss is the reference, not the (small) first loss of this invocation.
  examples::DivergenceGuard resumed("m.ckpt");
  CHECK(resumed.resumed(guard.metadata(), "m.ckpt").empty());
  CHECK_NOTHROW(resumed.check_loss(0.01, 500, 1e-3));
  CHECK_NOTHROW(resumed.check_loss(20, 501, 1e-3));
  CHECK_THROWS_AS(resumed.check_loss(2.3e5, 502, 1e-3), NonFiniteError);
  // A file without first_loss (an older minidl): only NaN and infinity stop the run, and the log says so.
  examples::DivergenceGuard old("m.ckpt");
  CHECK_THAT(old.resumed({{"epoch", "1"}}, "m.ckpt"), Catch::Contains("m.ckpt has no first_loss"));
  CHECK_NOTHROW(old.check_loss(0.001, 500, 1e-3));
  CHECK_NOTHROW(old.check_loss(1e6, 501, 1e-3));
  CHECK(old.metadata().empty());
  CHECK_THROWS_AS(old.check_loss(std::numeric_limits<double>::infinity(), 502, 1e-3), NonFiniteError);
}

TEST_CASE("divergence guard: weights and optimizer state are checked before a save", "[reliability]") {
  manual_seed(3);
  Linear model(3, 2);
  Adam adam(model.parameters(), AdamOptions());
  const Tensor x = ones({4, 3});
  adam.zero_grad();
  sum(model(x)).backward();
  adam.step();
  examples::DivergenceGuard guard("m.ckpt");
  CHECK_NOTHROW(guard.check_state(model, &adam, 1, 1, 1e-3));

  // Adam's moments are checked (a save holds them: a resumed run would start from NaN).
  Tensor exp_avg;
  for (const auto& [name, t] : adam.state_dict())
    if (name == "param.0.exp_avg") exp_avg = t;
  REQUIRE(exp_avg.defined());
  const float kept = exp_avg.data<float>()[1];
  exp_avg.data<float>()[1] = std::nanf("");
  CHECK_NOTHROW(guard.check_state(model, nullptr, 1, 1, 1e-3));
  CHECK_THROWS_WITH(guard.check_state(model, &adam, 1, 7, 1e-3),
                    Catch::StartsWith("training diverged: at step 7 (epoch 1, learning rate 0.001) Adam's state "
                                      "'param.0.exp_avg' holds nan at [0,1]"));
  exp_avg.data<float>()[1] = kept;

  // A finite but absurd weight (the state --save-every 1 kept after one step of --lr 1e30).
  Tensor weight = model.named_parameters()[0].second;
  weight.data<float>()[2] = 1e30f;
  CHECK_THROWS_WITH(guard.check_state(model, &adam, 1, 1, 1e30),
                    Catch::Contains("the model's 'weight' holds 1e+30 at [0,2], beyond the 1e+06 no healthy run's "
                                    "weights come near"));
  weight.data<float>()[2] = static_cast<float>(examples::kMaxParameter);  // the bound itself is allowed
  CHECK_NOTHROW(guard.check_state(model, &adam, 1, 1, 1e-3));
}
