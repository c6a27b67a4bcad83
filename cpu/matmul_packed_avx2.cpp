// cpu/matmul_packed_avx2.cpp — step 3 of the CPU GEMM ladder (docs/results/benchmarks.md), AVX2 version:
// packed panels and a 6 x 16 register-blocked micro-kernel in AVX2 + FMA intrinsics, one thread.
//   out[i] = op(a[i]) op(b[i])   (key "matmul", ops/kernel_signatures.h); the algorithm is in
//   cpu/matmul_packed.h.
//
// What changed from "blocked": a 6 x 16 tile of C lives in 12 ymm registers (8 floats each) for the
// whole KC-term sum; each term costs 2 loads of B~ and 6 broadcasts of A~ for 12 FMAs, so the FMA units
// set the pace instead of loads and stores of C. 12 accumulators + 2 B vectors + 1 broadcast = 15 of the
// 16 registers AVX2 has, and 12 independent FMA chains cover the FMA latency. This is the classic
// Haswell-era shape (BLIS uses 6 x 16 for sgemm there); on a CPU with AVX-512 the packed_avx512 kernel
// does twice the work per instruction.
// Block sizes: B~'s micro-panel (KC x 16 floats = 16 KiB at KC = 256) stays in L1, A~ (MC x KC = 144 KiB
// at MC = 144) in L2, B~ (KC x NC = 4 MiB) in L3.
//
// Declines: float64, and every call on a CPU without AVX2 and FMA (checked at run time: the intrinsics
// are compiled only inside functions marked target("avx2,fma")).
// Accumulation convention: out is overwritten (=).
#include <immintrin.h>

#include "core/dispatch.h"
#include "cpu/matmul_packed.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr int64_t kMr = 6, kNr = 16;

// c[0:6, 0:16] (=, or += when accumulate) a~ (kc x 6) b~ (kc x 16); see packed::MicroKernel.
__attribute__((target("avx2,fma"))) void tile_6x16(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                                                   bool accumulate) {
  __m256 acc[kMr][2];
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; ++p, a += kMr, b += kNr) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    for (int r = 0; r < kMr; ++r) {
      const __m256 a_r = _mm256_broadcast_ss(a + r);
      acc[r][0] = _mm256_fmadd_ps(a_r, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(a_r, b1, acc[r][1]);
    }
  }
  for (int r = 0; r < kMr; ++r, c += ldc) {
    if (accumulate) {
      acc[r][0] = _mm256_add_ps(acc[r][0], _mm256_loadu_ps(c));
      acc[r][1] = _mm256_add_ps(acc[r][1], _mm256_loadu_ps(c + 8));
    }
    _mm256_storeu_ps(c, acc[r][0]);
    _mm256_storeu_ps(c + 8, acc[r][1]);
  }
}

bool matmul_packed_avx2(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  const packed::MicroKernel* micro = packed::avx2_micro_kernel();
  return micro != nullptr && packed::matmul_packed(*micro, a, b, out, trans_a, trans_b, /*threads=*/1);
}

}  // namespace

namespace packed {
const MicroKernel* avx2_micro_kernel() {
  static const MicroKernel micro{"AVX2", kMr, kNr, /*mc=*/144, /*kc=*/256, /*nc=*/4096, tile_6x16};
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? &micro : nullptr;
}
}  // namespace packed

void register_matmul_packed_avx2_cpu() {
  register_kernel(keys::matmul, DeviceType::cpu, "packed_avx2", Priority::portable + 1,
                  "packed A/B panels + 6x16 AVX2/FMA micro-kernel, one thread (f32; needs AVX2+FMA)",
                  matmul_packed_avx2);
}

}  // namespace minidl
