// exercises/04b-cpu-gemm-worklog/gemm_rungs.h — what exercise 4b's file (gemm_rungs.cpp) defines, for the
// checker (check.cpp): one function per rung of the CPU GEMM worklog. Chapter: docs/course/04-cpu-kernels.md.
//
// Every rung computes the same product, row-major float32, overwriting c (`=`, not `+=`):
//   c [M, N] = a [M, K] b [K, N],   c[m, n] = sum over k of a[m * K + k] * b[k * N + n]
// M, N and K are any sizes >= 1 (the checker uses odd ones); a, b and c do not overlap.
#pragma once
#include <cstdint>

namespace minidl {
namespace worklog {

// Rung 1: loop order m-k-n, so the inner loop runs along rows of b and c (stride 1).
void gemm_loop_order(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K);
// Rung 2: rung 1 over tiles of b that stay in the cache.
void gemm_cache_blocked(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K);
// Rung 3: a 4 x 16 tile of c held in local variables (registers) for a whole slice of K.
void gemm_register_blocked(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K);
// Rung 4: rung 3 on packed copies of a and b (Goto/BLIS), a 6 x 16 micro-tile.
void gemm_packed(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K);
// Rung 5: rung 4 with its micro-kernel written in AVX2 + FMA intrinsics. The checker calls it only on a
// CPU that has AVX2 and FMA (it skips the rung, saying so, elsewhere).
void gemm_avx2_fma(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K);
// Rung 6: rung 5 (or rung 4 without AVX2 and FMA) on every OpenMP thread.
void gemm_threaded(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K);

// Whether this CPU can run rung 5 (AVX2 and FMA), asked at run time (cpuid), on x86-64 only.
inline bool cpu_has_avx2_fma() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

}  // namespace worklog
}  // namespace minidl
