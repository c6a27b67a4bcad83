// tests/test_precision.cpp — the float32 precision switch (core/precision.h, `--precision` in the
// programs): parsing, the API overriding the environment, and on a GPU ([cuda], skipped without one) that
// it really changes cuBLAS's math: strict FP32 matches the CPU to float32 rounding, TF32 differs from it
// by more than that and by no more than TF32's error bound.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dispatch.h"
#include "core/precision.h"
#include "ops/ops.h"
#include "tests/test_util.h"

using namespace minidl;

using testing::PrecisionScope;

TEST_CASE("precision: fp32, tf32 and bf16 parse, anything else is refused with their names", "[precision]") {
  CHECK(parse_precision("fp32") == Precision::fp32);
  CHECK(parse_precision("tf32") == Precision::tf32);
  CHECK(parse_precision("bf16") == Precision::bf16);
  CHECK(std::string(precision_name(Precision::tf32)) == "tf32");
  CHECK(std::string(precision_name(Precision::bf16)) == "bf16");
  CHECK_THROWS_WITH(parse_precision("fp16"),
                    Catch::Contains("fp32") && Catch::Contains("tf32") && Catch::Contains("bf16"));
  CHECK_THROWS_WITH(parse_precision("FP32"), Catch::Contains("precision 'FP32'"));
}

TEST_CASE("precision: set_float32_precision overrides the environment's choice", "[precision]") {
  {
    const PrecisionScope tf32(Precision::tf32);
    CHECK(float32_precision() == Precision::tf32);
  }
  const PrecisionScope fp32(Precision::fp32);
  CHECK(float32_precision() == Precision::fp32);
}

TEST_CASE("precision: on a GPU, tf32 changes cuBLAS's products and fp32 keeps them exact", "[precision][cuda]") {
  if (!testing::have_gpu()) return;
  const Device gpu = Device::cuda(0);
  const int64_t n = 256;
  const Tensor a = testing::uniform({n, n}, -1, 1, DType::float32), b = testing::uniform({n, n}, -1, 1, DType::float32);
  const std::vector<double> reference = matmul(a.to(DType::float64), b.to(DType::float64)).to_vector<double>();
  select_kernel("matmul", DeviceType::cuda, "cublas");
  auto max_error = [&](Precision p) {
    const PrecisionScope scope(p);
    const std::vector<double> got = matmul(a.to(gpu), b.to(gpu)).to(DType::float64).to_vector<double>();
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - reference[i]));
    return worst;
  };
  const double fp32_error = max_error(Precision::fp32), tf32_error = max_error(Precision::tf32);
  reset_kernel_selection();
  INFO("max |error|: fp32 " << fp32_error << ", tf32 " << tf32_error);
  CHECK(fp32_error < 1e-4);  // 256 terms of |x| < 1 in float32: a few 1e-6 at most
  CHECK(tf32_error > 10 * fp32_error);
  CHECK(tf32_error < testing::tf32_atol(n));
}
