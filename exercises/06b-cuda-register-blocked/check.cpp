// exercises/06b-cuda-register-blocked/check.cpp — the checker of exercise 6b (GPU): the register-blocked matmul
// "student" on cuda against the CPU's naive kernel, on sizes inside one 64 x 64 tile, on tile edges, odd sizes
// across many tiles and batches; through the op; then the bench (GFLOP/s) next to the GEMM ladder's v2, v3 and
// cuBLAS. Without a usable GPU it exits 77 (skipped), after the build has compiled the student's file.
#include <cmath>

#include "exercises/06b-cuda-register-blocked/matmul_register_blocked.h"
#include "exercises/common/exercise.h"
#include "ops/kernel_signatures.h"
#include "ops/ops.h"
#include "tests/test_util.h"

using namespace minidl;
using exercise::kStudent;

namespace {

std::string check_product(int64_t batch, int64_t M, int64_t N, int64_t K) {
  const Tensor a = testing::uniform({batch, M, K}, -1, 1, DType::float32);
  const Tensor b = testing::uniform({batch, K, N}, -1, 1, DType::float32);
  Tensor expected = empty({batch, M, N});
  exercise::call_kernel<MatmulKernel>("matmul", DeviceType::cpu, "naive", a, b, expected, false, false);
  const Device gpu = Device::cuda(0);
  Tensor out = full({batch, M, N}, NAN, TensorOptions(DType::float32, gpu));
  if (!exercise::call_kernel<MatmulKernel>("matmul", DeviceType::cuda, kStudent, a.to(gpu), b.to(gpu), out, false, false))
    return "your kernel declined a float32 product without transposes; it must serve it";
  const std::string diff = testing::compare(out, expected, 1e-4, 1e-5 + 2e-7 * static_cast<double>(K));
  if (diff.empty()) return "";
  // Which of a thread's 4 x 4 outputs are wrong says which index is off: thread (ty, tx) owns rows
  // ty + 16 i and columns tx + 16 j of its block's 64 x 64 tile.
  const std::vector<float> got = out.to(Device::cpu()).to_vector<float>(), want = expected.to_vector<float>();
  int wrong_by_i[4] = {}, wrong_by_j[4] = {};
  bool any_nan = false;
  for (int64_t e = 0; e < batch * M * N; ++e) {
    const int64_t m = (e / N) % M, n = e % N;
    const double err = std::fabs(static_cast<double>(got[e]) - want[e]);
    if (err <= 1e-5 + 2e-7 * static_cast<double>(K) + 1e-4 * std::fabs(want[e])) continue;
    any_nan = any_nan || std::isnan(got[e]);
    ++wrong_by_i[(m % 64) / 16];
    ++wrong_by_j[(n % 64) / 16];
  }
  std::string pattern = "wrong outputs by i (row ty + 16 i of the tile): ";
  for (int i = 0; i < 4; ++i) pattern += str_cat(i ? ", " : "", wrong_by_i[i]);
  pattern += "; by j (column tx + 16 j): ";
  for (int j = 0; j < 4; ++j) pattern += str_cat(j ? ", " : "", wrong_by_j[j]);
  return str_cat("out [", batch, ", ", M, ", ", N, "] = a [", batch, ", ", M, ", ", K, "] x b [", batch, ", ", K, ", ", N,
                 "], tiles of 64 x 64, 4 x 4 outputs per thread\n", diff, pattern, "\n",
                 any_nan ? "(NaN: an output never stored: every i and j of acc must be stored where (m, n) is inside c)"
                         : "(only some i or j wrong: that index of a_frag, b_frag or the store is off; all of them: the "
                           "sum over kk or the store's m, n)");
}

}  // namespace

int main(int argc, char** argv) {
  exercise::Checker c(argc, argv, {"6b", "a register-blocked matmul on the GPU",
                                   "exercises/06b-cuda-register-blocked/matmul_register_blocked.cu"});
  c.require_cuda();
  register_student_register_blocked_matmul();

  c.section("the kernel \"student\" on the GPU against the CPU's naive matmul");
  c.check("registered for key \"matmul\" on cuda", [] {
    return exercise::registered("matmul", DeviceType::cuda, "register_student_register_blocked_matmul()");
  });
  c.check("1 x 1 x 1", [] { return check_product(1, 1, 1, 1); });
  c.check("64 x 64 x 8 (one tile of c, one step along K)", [] { return check_product(1, 64, 64, 8); });
  c.check("63 x 65 x 9 (M x N x K: ragged in every dimension)", [] { return check_product(1, 63, 65, 9); });
  c.check("100 x 200 x 300", [] { return check_product(1, 100, 200, 300); });
  c.check("a batch of 3: 17 x 19 x 23 each", [] { return check_product(3, 17, 19, 23); });
  c.check("517 x 263 x 129 (odd, many tiles)", [] { return check_product(1, 517, 263, 129); });
  c.check("512 x 512 x 512", [] { return check_product(1, 512, 512, 512); });

  c.section("through the op, with --kernel matmul=student");
  c.check("matmul(a [70, 33], b [33, 45]) on cuda is served by your kernel", [] {
    const Tensor a = testing::uniform({70, 33}, -1, 1, DType::float32), b = testing::uniform({33, 45}, -1, 1, DType::float32);
    const Tensor expected = matmul(a, b);
    exercise::Selected s("matmul", DeviceType::cuda, kStudent);
    const Tensor got = matmul(a.to(Device::cuda(0)), b.to(Device::cuda(0)));
    if (last_kernel("matmul", DeviceType::cuda) != kStudent)
      return str_cat("served by \"", last_kernel("matmul", DeviceType::cuda), "\", not by your kernel");
    return testing::compare(got, expected, 1e-4, 1e-4);
  });

  c.bench({"matmul"}, {kStudent, "v2_smem_tiled", "v3_register_blocked", "cublas"},
          {"matmul:512x512x512", "matmul:1024x1024x1024", "matmul:2048x2048x2048"}, "cuda");
  return c.finish();
}
