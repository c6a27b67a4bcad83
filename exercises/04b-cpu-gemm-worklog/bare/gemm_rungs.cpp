// exercises/04b-cpu-gemm-worklog/gemm_rungs.cpp — EXERCISE 4b, no scaffolding: the CPU GEMM worklog, six
// rungs from loop order to threads, each timed against OpenBLAS. Read first: docs/course/04-cpu-kernels.md.
// Check your work: `make exercise N=4b`.
//
// Contract, for every function below: c [M, N] = a [M, K] b [K, N], row-major float32, contiguous, c
// overwritten (`=`), any M, N, K >= 0 (the checker uses odd sizes). Each rung may call the ones before.
//   gemm_loop_order: rung 1, loop order: the three loops in the order that makes the innermost loop stride 1.
//   gemm_cache_blocked: rung 2, cache blocking: a tile of b reused by every row of a while it is in L2.
//   gemm_register_blocked: rung 3, register blocking: a small tile of c kept in registers across a slice of K.
//   gemm_packed: rung 4, packing: slices of a and blocks of b copied into contiguous panels before the micro-kernel.
//   gemm_avx2_fma: rung 5, vector intrinsics: the micro-kernel in AVX2/FMA intrinsics (_mm256_fmadd_ps); the checker
//     skips it on a CPU without AVX2 and FMA (cpu_has_avx2_fma in gemm_rungs.h).
//   gemm_threaded: rung 6, threads: the blocks of c shared among OpenMP threads (#pragma omp parallel for).
// This file is compiled with the machine's vector flags (the checker's first lines say which).
#include "exercises/04b-cpu-gemm-worklog/gemm_rungs.h"

#include <algorithm>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace minidl {
namespace worklog {

void gemm_loop_order(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  (void)a;
  (void)b;
  (void)c;
  (void)M;
  (void)N;
  (void)K;
}

void gemm_cache_blocked(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  (void)a;
  (void)b;
  (void)c;
  (void)M;
  (void)N;
  (void)K;
}

void gemm_register_blocked(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  (void)a;
  (void)b;
  (void)c;
  (void)M;
  (void)N;
  (void)K;
}

void gemm_packed(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  (void)a;
  (void)b;
  (void)c;
  (void)M;
  (void)N;
  (void)K;
}

void gemm_avx2_fma(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  (void)a;
  (void)b;
  (void)c;
  (void)M;
  (void)N;
  (void)K;
}

void gemm_threaded(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  (void)a;
  (void)b;
  (void)c;
  (void)M;
  (void)N;
  (void)K;
}

}  // namespace worklog
}  // namespace minidl
