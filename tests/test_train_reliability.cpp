// tests/test_train_reliability.cpp — the checks that make the training programs fail early and clearly:
// MINIDL_* variables validated up front on any device, the flag checks of examples/flags.h, the step
// count a one-cycle schedule needs, progress over an empty loop. (The programs themselves are exercised
// by tests/train_reliability_test.sh.)
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "core/backend.h"
#include "examples/flags.h"
#include "nn/layers.h"
#include "nn/lr_schedule.h"
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

TEST_CASE("flag checks: finite positive numbers, half-open ranges, non-empty file names", "[reliability]") {
  const CLI::Validator lr = examples::finite_positive();
  CHECK(verdict(lr, "2e-3").empty());
  CHECK(verdict(lr, "inf") == "must be a finite positive number, got inf");
  CHECK(verdict(lr, "nan") == "must be a finite positive number, got nan");
  CHECK(verdict(lr, "0") == "must be a finite positive number, got 0");
  CHECK(verdict(lr, "-1") == "must be a finite positive number, got -1");
  CHECK(verdict(lr, "fast") == "'fast' is not a number");

  const CLI::Validator p = examples::at_least_and_below(0, 1);
  CHECK(verdict(p, "0").empty());
  CHECK(verdict(p, "0.5").empty());
  CHECK(verdict(p, "1") == "must be in [0, 1), got 1");
  CHECK(verdict(p, "-0.1") == "must be in [0, 1), got -0.1");

  CHECK(verdict(examples::non_empty(), "m.ckpt").empty());
  CHECK(verdict(examples::non_empty(), "") == "needs a file name, got an empty one");
  CHECK(verdict(examples::at_least(0), "-1") == "must be at least 0, got -1");
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
