// exercises/04-tiled-matmul/matmul_tiled.cpp — EXERCISE 4, no scaffolding: a register- and cache-blocked
// matrix product on the CPU. Read first: docs/course/04-cpu-kernels.md. Check your work: `make exercise N=4`.
//
// Contract:
//   matmul_one(a, b, c, M, N, K): c [M, N] = a [M, K] b [K, N], row-major float32, contiguous, overwriting
//     c (`=`, not `+=`), for any M, N, K >= 0. Faster than cpu/matmul_ikj.cpp is the point: blocking for
//     registers (several rows of c per pass over b) and for the cache (tiles of b reused while they are in
//     L2); the checker prints GFLOP/s against ikj. This file is compiled with the machine's vector flags.
//   matmul_student and register_student_matmul are given: the kernel "student" of key "matmul" on the CPU,
//     serving float32 calls without transposes.
#include "exercises/04-tiled-matmul/matmul_tiled.h"

#include <algorithm>

#include "core/dispatch.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

void matmul_one(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  (void)a;
  (void)b;
  (void)c;
  (void)M;
  (void)N;
  (void)K;
}

bool matmul_student(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  if (out.dtype() != DType::float32 || trans_a || trans_b) return false;
  const int64_t batch = out.shape()[0], M = out.shape()[1], N = out.shape()[2], K = a.shape()[2];
  for (int64_t i = 0; i < batch; ++i)
    matmul_one(a.data<float>() + i * M * K, b.data<float>() + i * K * N, out.data<float>() + i * M * N, M, N, K);
  return true;
}

}  // namespace

// Priority 2: above naive (0) and ikj (1), below the fast kernels, so it serves only when selected.
void register_student_matmul() {
  register_kernel(keys::matmul, DeviceType::cpu, "student", Priority::reference + 2,
                  "exercise 4: 4 rows per pass, 128 x 256 tiles of b, one thread (f32, no transposes)",
                  matmul_student);
}

}  // namespace minidl
