// cpu/matmul_packed_avx512.cpp — step 3 of the CPU GEMM ladder (docs/results/benchmarks.md), AVX-512 version:
// packed panels and a 12 x 32 register-blocked micro-kernel in AVX-512F intrinsics, one thread.
//   out[i] = op(a[i]) op(b[i])   (key "matmul", ops/kernel_signatures.h); the algorithm is in
//   cpu/matmul_packed.h.
//
// What changed from "blocked": blocked keeps 4 rows of C in registers and streams B's rows through
// them, leaving the compiler to vectorise; every FMA needs a load of B and a load and store of C. Here a
// 12 x 32 tile of C lives in 24 zmm registers (16 floats each) for the whole KC-term sum, and each term
// costs 2 loads of B~ and 12 broadcasts of A~ for 24 FMAs: at two FMAs per cycle the loads keep up, so
// the FMA units run at their peak. Packing puts A~ and B~ in exactly the order the loop reads them.
// Why 12 x 32: 24 accumulators + 2 B vectors + 1 broadcast fit the 32 registers; 24 independent FMA
// chains cover the FMA latency (4 cycles x 2 units = 8 in flight needed).
// Block sizes: B~'s micro-panel (KC x 32 floats = 32 KiB at KC = 256) stays in the 48 KiB L1 while the
// ir loop sweeps A~ (MC x KC = 288 KiB at MC = 288, in the 2 MiB L2); B~ (KC x NC = 4 MiB) in L3.
//
// Declines: float64 (the micro-kernel is float32), and every call on a CPU without AVX-512F (checked at
// run time: the intrinsics are compiled only inside functions marked target("avx512f")).
// Accumulation convention: out is overwritten (=).
#include <immintrin.h>

#include "core/dispatch.h"
#include "cpu/matmul_packed.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr int64_t kMr = 12, kNr = 32;

// c[0:12, 0:32] (=, or += when accumulate) a~ (kc x 12) b~ (kc x 32); see packed::MicroKernel.
__attribute__((target("avx512f"))) void tile_12x32(int64_t kc, const float* a, const float* b, float* c,
                                                   int64_t ldc, bool accumulate) {
  __m512 acc[kMr][2];
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p, a += kMr, b += kNr) {
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
    for (int r = 0; r < kMr; ++r) {
      const __m512 a_r = _mm512_set1_ps(a[r]);
      acc[r][0] = _mm512_fmadd_ps(a_r, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a_r, b1, acc[r][1]);
    }
  }
  for (int r = 0; r < kMr; ++r, c += ldc) {
    if (accumulate) {
      acc[r][0] = _mm512_add_ps(acc[r][0], _mm512_loadu_ps(c));
      acc[r][1] = _mm512_add_ps(acc[r][1], _mm512_loadu_ps(c + 16));
    }
    _mm512_storeu_ps(c, acc[r][0]);
    _mm512_storeu_ps(c + 16, acc[r][1]);
  }
}

bool matmul_packed_avx512(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  const packed::MicroKernel* micro = packed::avx512_micro_kernel();
  return micro != nullptr && packed::matmul_packed(*micro, a, b, out, trans_a, trans_b, /*threads=*/1);
}

}  // namespace

namespace packed {
const MicroKernel* avx512_micro_kernel() {
  static const MicroKernel micro{"AVX-512", kMr, kNr, /*mc=*/288, /*kc=*/256, /*nc=*/4096, tile_12x32};
  return __builtin_cpu_supports("avx512f") ? &micro : nullptr;
}
}  // namespace packed

void register_matmul_packed_avx512_cpu() {
  register_kernel(keys::matmul, DeviceType::cpu, "packed_avx512", Priority::portable + 2,
                  "packed A/B panels + 12x32 AVX-512 micro-kernel, one thread (f32; needs AVX-512F)",
                  matmul_packed_avx512);
}

}  // namespace minidl
