// exercises/04-tiled-matmul/check.cpp — the checker of exercise 4: the blocked matmul against the naive
// reference on sizes inside one tile, on tile edges and across several tiles, with leftover rows, in batches;
// the declines it is allowed (transposes, float64); through the op matmul(); then the bench next to ikj,
// blocked and OpenBLAS.
#include <cmath>

#include "exercises/04-tiled-matmul/matmul_tiled.h"
#include "exercises/common/exercise.h"
#include "ops/kernel_signatures.h"
#include "ops/ops.h"
#include "tests/test_util.h"

using namespace minidl;
using exercise::kStudent;

namespace {

// One call of the student's kernel on [batch, M, K] x [batch, K, N] against the naive kernel.
std::string check_product(int64_t batch, int64_t M, int64_t N, int64_t K) {
  const Tensor a = testing::uniform({batch, M, K}, -1, 1, DType::float32);
  const Tensor b = testing::uniform({batch, K, N}, -1, 1, DType::float32);
  Tensor expected = empty({batch, M, N});
  exercise::call_kernel<MatmulKernel>("matmul", DeviceType::cpu, "naive", a, b, expected, false, false);
  Tensor out = full({batch, M, N}, NAN);  // a sentinel: outputs never written stay NaN
  if (!exercise::call_kernel<MatmulKernel>("matmul", DeviceType::cpu, kStudent, a, b, out, false, false))
    return "your kernel declined a float32 product without transposes; it must serve it";
  // float32 sums of K products of values in [-1, 1]: rounding grows with K.
  const std::string diff = testing::compare(out, expected, 1e-4, 1e-5 + 2e-7 * static_cast<double>(K));
  if (diff.empty()) return "";
  // Rows left at zero: zeroed, then never updated.
  const std::vector<float> got = out.to_vector<float>();
  std::string zero_rows;
  int zero_count = 0;
  for (int64_t r = 0; r < batch * M; ++r) {
    bool all_zero = true;
    for (int64_t n = 0; n < N && all_zero; ++n) all_zero = got[r * N + n] == 0.0f;
    if (all_zero && zero_count++ < 6) zero_rows += str_cat(zero_rows.empty() ? "" : ", ", r % M);
  }
  const std::string rows_hint =
      zero_count == 0 ? ""
                      : str_cat(zero_count == 1 ? "Row " : "Rows ", zero_rows, zero_count > 6 ? ", ..." : "",
                                " of c ", zero_count == 1 ? "is" : "are", " all zero: never updated after c was zeroed "
                                "(the leftover rows when M is not a multiple of 4?).");
  bool has_nan = false;
  for (float v : got) has_nan = has_nan || std::isnan(v);
  const std::string nan_hint =
      has_nan ? "NaN: out starts as NaN here, so an output never written (at a skipped tile edge, say) stays NaN, "
                "and so does one accumulated into (+=) without zeroing c first."
              : "";
  const std::string hint = !rows_hint.empty() ? rows_hint
                           : !nan_hint.empty() ? nan_hint
                                               : "Wrong values: an index mixed up (a row stride, a tile's corner)?";
  return str_cat("out [", batch, ", ", M, ", ", N, "] = a [", batch, ", ", M, ", ", K, "] x b [", batch, ", ", K, ", ", N,
                 "]\n", diff, hint);
}

// A documented decline (a transpose, float64) is fine; serving it must then be right.
std::string check_may_decline(bool ta, bool tb, DType dtype) {
  const int64_t M = 9, N = 7, K = 5;
  const Tensor a = testing::uniform(ta ? Shape{1, K, M} : Shape{1, M, K}, -1, 1, dtype);
  const Tensor b = testing::uniform(tb ? Shape{1, N, K} : Shape{1, K, N}, -1, 1, dtype);
  Tensor expected = empty({1, M, N}, dtype), out = full({1, M, N}, NAN, dtype);
  exercise::call_kernel<MatmulKernel>("matmul", DeviceType::cpu, "naive", a, b, expected, ta, tb);
  if (!exercise::call_kernel<MatmulKernel>("matmul", DeviceType::cpu, kStudent, a, b, out, ta, tb)) return "";
  return testing::compare(out, expected, 1e-4, 1e-5);
}

}  // namespace

int main(int argc, char** argv) {
  exercise::Checker c(argc, argv, {4, "a register- and cache-blocked matmul on the CPU", "exercises/04-tiled-matmul/matmul_tiled.cpp"});
  c.require_cpu_features(MINIDL_EXERCISE_CPU_FEATURES, MINIDL_EXERCISE_VECTOR_FLAGS);  // exercises/CMakeLists.txt
  register_student_matmul();

  c.section("the kernel \"student\" against the naive reference (4 rows of c per pass; tiles of b: 128 x 256)");
  c.check("registered for key \"matmul\" on the CPU",
          [] { return exercise::registered("matmul", DeviceType::cpu, "register_student_matmul()"); });
  c.check("1 x 1 x 1", [] { return check_product(1, 1, 1, 1); });
  c.check("3 x 5 x 7 (M x N x K: smaller than one tile)", [] { return check_product(1, 3, 5, 7); });
  c.check("64 x 256 x 128 (exactly one tile of b, rows a multiple of 4)", [] { return check_product(1, 64, 256, 128); });
  c.check("65 x 257 x 129 (one more than a tile in every dimension, one leftover row)",
          [] { return check_product(1, 65, 257, 129); });
  c.check("200 x 300 x 400 (several tiles, ragged ends)", [] { return check_product(1, 200, 300, 400); });
  c.check("a batch of 3: 17 x 19 x 23 each", [] { return check_product(3, 17, 19, 23); });
  c.check("trans_a (may be declined)", [] { return check_may_decline(true, false, DType::float32); });
  c.check("trans_b (may be declined)", [] { return check_may_decline(false, true, DType::float32); });
  c.check("float64 (may be declined)", [] { return check_may_decline(false, false, DType::float64); });

  c.section("through the ops, with --kernel matmul=student");
  c.check("matmul(a [33, 70], b [70, 45]) is served by your kernel", [] {
    const Tensor a = testing::uniform({33, 70}, -1, 1, DType::float32), b = testing::uniform({70, 45}, -1, 1, DType::float32);
    Tensor expected;
    {
      exercise::Selected s("matmul", DeviceType::cpu, "naive");
      expected = matmul(a, b);
    }
    exercise::Selected s("matmul", DeviceType::cpu, kStudent);
    const Tensor got = matmul(a, b);
    if (last_kernel("matmul", DeviceType::cpu) != kStudent)
      return str_cat("served by \"", last_kernel("matmul", DeviceType::cpu), "\", not by your kernel");
    return testing::compare(got, expected, 1e-4, 1e-4);
  });

  // 1024^3: B (4 MiB) no longer fits a 2 MiB L2, which is where tiling pays. naive is left out of the rows
  // (it would take seconds there); it is still the reference of the smaller shapes.
  c.bench({"matmul"}, {kStudent, "ikj", "blocked", "openblas"},
          {"matmul:256x256x256", "matmul:512x512x512", "matmul:1024x1024x1024"});
  return c.finish();
}
