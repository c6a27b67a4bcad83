// exercises/06-cuda-tiled-matmul/check.cpp — the checker of exercise 6 (GPU): the shared-memory tiled matmul
// "student" on cuda against the CPU's naive kernel, on sizes inside one tile, on tile edges and across
// many tiles, in batches; through the op; then the bench next to the GEMM ladder's v1, v2, v3 and cuBLAS.
// Without a usable GPU it exits 77 (skipped), after the build has compiled the student's file.
#include <cmath>

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
                 "(NaN: an output never stored, or a tile element outside a or b not loaded as 0)");
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
