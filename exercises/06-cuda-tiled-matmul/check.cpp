// exercises/06-cuda-tiled-matmul/check.cpp — the checker of exercise 6 (GPU): the shared-memory tiled matmul
// "student" on cuda against the CPU's naive kernel, on sizes inside one tile, on tile edges and across
// many tiles, in batches; through the op; then the bench next to the GEMM ladder's v1, v2, v3 and cuBLAS.
// A last check looks for a race: a result whose bits change from run to run, or that is right with one tile
// step along K and wrong with several; it names the __syncthreads() that is likely missing.
// Without a usable GPU it exits 77 (skipped), after the build has compiled the student's file.
#include <cmath>
#include <cstring>
#include <vector>

#include "exercises/06-cuda-tiled-matmul/matmul_smem.h"
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
  return str_cat("out [", batch, ", ", M, ", ", N, "] = a [", batch, ", ", M, ", ", K, "] x b [", batch, ", ", K, ", ", N,
                 "], tiles of 16 x 16\n", diff,
                 "(NaN: an output never stored, or a tile element outside a or b not loaded as 0; values that change\n"
                 "from run to run are a race: the last check, \"barriers\", says which barrier)");
}

// The student's kernel on fixed operands [1, M, K] x [1, K, N], `runs` times: whether every run matched the
// CPU's naive matmul, and whether every run gave the same bits as the first.
struct Runs {
  bool all_right = true;
  bool same_bits = true;
};
Runs run_repeatedly(int64_t M, int64_t N, int64_t K, int runs) {
  const Tensor a = testing::uniform({1, M, K}, -1, 1, DType::float32);
  const Tensor b = testing::uniform({1, K, N}, -1, 1, DType::float32);
  Tensor expected = empty({1, M, N});
  exercise::call_kernel<MatmulKernel>("matmul", DeviceType::cpu, "naive", a, b, expected, false, false);
  const Device gpu = Device::cuda(0);
  const Tensor ag = a.to(gpu), bg = b.to(gpu);
  Runs r;
  std::vector<float> first;
  for (int i = 0; i < runs; ++i) {
    Tensor out = full({1, M, N}, NAN, TensorOptions(DType::float32, gpu));
    exercise::call_kernel<MatmulKernel>("matmul", DeviceType::cuda, kStudent, ag, bg, out, false, false);
    r.all_right = r.all_right && testing::compare(out, expected, 1e-4, 1e-5 + 2e-7 * static_cast<double>(K)).empty();
    const std::vector<float> got = out.to_vector<float>();
    if (i == 0) first = got;
    // memcmp, not ==: bits, so that NaN == NaN
    r.same_bits = r.same_bits && std::memcmp(first.data(), got.data(), sizeof(float) * got.size()) == 0;
  }
  return r;
}

// The barriers of a tiled kernel guard two hazards, and each shows its own pattern:
//   - after the loads: a thread reads a_tile and b_tile elements other warps have not stored yet. Wrong even
//     with K = 16 (one tile step), and the values change from run to run (whatever was in shared memory);
//   - after the products: a warp that finishes its step early overwrites the tiles with the next step's
//     elements while slower warps still read them. Right with K = 16 (there is no next step), wrong or
//     changing with several steps.
// Many blocks (512 x 512 outputs: 1,024 blocks) and several runs give the scheduler room to interleave warps.
std::string check_barriers() {
  constexpr int kRuns = 5;
  const Runs one = run_repeatedly(512, 512, 16, kRuns);    // one tile step along K
  const Runs many = run_repeatedly(512, 512, 512, kRuns);  // 32 tile steps
  if (one.all_right && one.same_bits && many.all_right && many.same_bits) return "";
  const std::string seen =
      str_cat("512 x 512 x 16 (one tile step along K): ", one.all_right ? "right" : "WRONG", ", ",
              one.same_bits ? "the same bits in " : "DIFFERENT bits across ", kRuns, " runs\n512 x 512 x 512 (32 steps): ",
              many.all_right ? "right" : "WRONG", ", ", many.same_bits ? "the same bits in " : "DIFFERENT bits across ",
              kRuns, " runs\n");
  const std::string sanitizer =
      "To see the race itself: compute-sanitizer --tool racecheck build/bin/exercise_6 --no-bench (it names the "
      "shared-memory\nread and write that collide, with their source lines).";
  if (!one.same_bits || (!one.all_right && !many.same_bits))
    return str_cat(seen,
                   "Likely missing: the __syncthreads() between loading the tiles and using them. Without it a thread "
                   "reads\nb_tile[kk][tx] (stored by the threads of other warps) before those threads have stored it, "
                   "and gets\nwhatever shared memory held: wrong even with one tile step, and different on every run.\n",
                   sanitizer);
  if (one.all_right && one.same_bits)
    return str_cat(seen,
                   "Likely missing: the __syncthreads() after the products, before the next step's loads. With one "
                   "tile step\nthere is no next load, so it is right; with several, a warp that finishes its products "
                   "early stores the\nnext step's elements into a_tile and b_tile while slower warps still read them.",
                   many.same_bits ? "\n(The bits do not change from run to run, so it may instead be the step along "
                                    "K: the loads must read\ncolumn k0 + tx of a and row k0 + ty of b.)\n"
                                  : "\n",
                   sanitizer);
  return str_cat(seen,
                 "Wrong with one tile step, and the same bits every run: not a race, an index. Check the loads "
                 "(a[m, k0 + tx],\nb[k0 + ty, n], 0 outside), the sum over kk (a_tile[ty][kk] * b_tile[kk][tx]) and the "
                 "store to c[m, n].");
}

}  // namespace

int main(int argc, char** argv) {
  exercise::Checker c(argc, argv, {6, "a shared-memory tiled matmul on the GPU", "exercises/06-cuda-tiled-matmul/matmul_smem.cu"});
  c.require_cuda();
  register_student_cuda_matmul();

  c.section("the kernel \"student\" on the GPU against the CPU's naive matmul");
  c.check("registered for key \"matmul\" on cuda",
          [] { return exercise::registered("matmul", DeviceType::cuda, "register_student_cuda_matmul()"); });
  c.check("1 x 1 x 1", [] { return check_product(1, 1, 1, 1); });
  c.check("16 x 16 x 16 (one tile, one step along K)", [] { return check_product(1, 16, 16, 16); });
  c.check("15 x 17 x 33 (M x N x K: ragged in every dimension)", [] { return check_product(1, 15, 17, 33); });
  c.check("100 x 200 x 300", [] { return check_product(1, 100, 200, 300); });
  c.check("a batch of 3: 17 x 19 x 23 each", [] { return check_product(3, 17, 19, 23); });
  c.check("512 x 512 x 512", [] { return check_product(1, 512, 512, 512); });
  c.check("barriers: 512 x 512 x 16 and 512 x 512 x 512, 5 runs each: right, and the same bits every run",
          [] { return check_barriers(); });

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

  c.bench({"matmul"}, {kStudent, "v1_naive", "v2_smem_tiled", "v3_register_blocked", "cublas"},
          {"matmul:512x512x512", "matmul:1024x1024x1024", "matmul:2048x2048x2048"}, "cuda");
  return c.finish();
}
