// exercises/04b-cpu-gemm-worklog/gemm_rungs.cpp — EXERCISE 4b: the CPU GEMM worklog, six rungs from loop order
// to threads, each timed against OpenBLAS. Read first: docs/course/04-cpu-kernels.md and exercise 4. Check your
// work: `make exercise N=4b` (it checks every rung on odd sizes, then prints the table of GFLOP/s).
//
// Every rung: c [M, N] = a [M, K] b [K, N], row-major float32, c overwritten (gemm_rungs.h): zero c first,
// then add into it. Climb in order: write a rung, run the checker, copy its row of the table into your
// worklog with one sentence on why it is faster (or not), then the next. Each rung may call the ones before.
//
// This file is compiled with the machine's vector instructions (-march=native where the compiler accepts
// it; the checker's first lines say which flags), so the compiler may turn plain loops into AVX or AVX-512
// code with fused multiply-adds (FMA). The library itself is built for plain x86-64 (SSE2, no FMA) so that
// one binary runs on any x86-64 machine.
#include "exercises/04b-cpu-gemm-worklog/gemm_rungs.h"

#include <algorithm>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace minidl {
namespace worklog {

namespace {

// The sizes the reference solution uses; yours may differ (then say so in the worklog).
[[maybe_unused]] constexpr int64_t kTileK = 128, kTileN = 256;  // rung 2: a tile of b, 128 KiB, kept in L2
[[maybe_unused]] constexpr int64_t kRegRows = 4, kRegCols = 16;  // rung 3: the tile of c kept in registers
[[maybe_unused]] constexpr int64_t kMR = 6, kNR = 16;            // rungs 4-6: the micro-tile (12 AVX2 registers)
[[maybe_unused]] constexpr int64_t kKC = 256;                    // rungs 3-6: the slice of K per pass
[[maybe_unused]] constexpr int64_t kNC = 512;                    // rungs 4-6: a packed block of b, kKC x kNC

}  // namespace

// EXERCISE rung 1 (loop order): c[m, :] += a[m, k] * b[k, :] with the loops in the order m, k, n, so the
// innermost loop walks a row of b and a row of c with stride 1 (the compiler vectorises it; cpu/matmul_ikj.cpp
// is minidl's version).
void gemm_loop_order(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  // EXERCISE: zero c, then the three loops.
  (void)a;
  (void)b;
  (void)c;
  (void)M;
  (void)N;
  (void)K;
}

// EXERCISE rung 2 (cache blocking): rung 1 over tiles of b, kTileK rows by kTileN columns (the last tile of each
// dimension shorter): for each tile, every row m of a updates its kTileN columns of c from the tile's kTileK
// rows of b, so the tile stays in the cache while all M rows use it.
void gemm_cache_blocked(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  // EXERCISE: zero c, then the loops over the tiles (k0, n0) and, inside, rung 1's loops on the tile.
  (void)a;
  (void)b;
  (void)c;
  (void)M;
  (void)N;
  (void)K;
}

// EXERCISE rung 3 (register blocking): a kRegRows x kRegCols tile of c is summed in a local array
// `float acc[4][16] = {}` over a slice of kKC values of k, and added into c only at the end of the slice: the
// k loop then loads 4 values of a and 16 of b for 64 multiply-adds, and never loads or stores c. Suggested
// shape: loops k0 (slices of K), n0 (steps of 16), m0 (steps of 4); a helper for a full 4 x 16 tile (fixed
// bounds, so the compiler unrolls and vectorises it) and one for the edge tiles (mr <= 4 rows, nr <= 16 columns).
// Check which loop the compiler vectorised (add -fopt-info-vec): it must be j, 16 floats side by side; GCC may
// pick k instead, gathering a column of b. `#pragma omp simd` on the j loop tells it which.
void gemm_register_blocked(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  // EXERCISE: zero c, then the tiles.
  (void)a;
  (void)b;
  (void)c;
  (void)M;
  (void)N;
  (void)K;
}

// EXERCISE rung 4 (packing, as Goto's and BLIS's GEMMs do; cpu/matmul_packed.h has the five loops): copy the
// operands into the order the innermost code reads them. Suggested helpers:
//   pack_b(b, N, k0, kc, n0, nc, b_pack): b[k0 .. k0+kc, n0 .. n0+nc] as panels of kNR columns, panel p
//     holding b_pack[p*kc*kNR + k*kNR + j] = b[k0 + k, n0 + p*kNR + j], 0 past column N;
//   pack_a(a, M, K, m0, k0, kc, a_pack): a_pack[k*kMR + r] = a[m0 + r, k0 + k], 0 past row M;
//   micro_kernel(kc, a_pack, b_pack, tile): tile[kMR][kNR] = the sum over k of a_pack column k times b_pack
//     row k, in a local acc[kMR][kNR], both operands read front to back;
//   packed_loops(micro_kernel, threads, a, b, c, M, N, K): zero c; for n0 (blocks of kNC), for k0 (slices of
//     kKC): pack_b once; for each panel of kMR rows: pack_a, then for each panel of b the micro-kernel, and add
//     the valid part of the tile (rows < M, columns < N) into c.
// Padding with zeros lets the micro-kernel always compute a full tile; only the add into c looks at the edges.
void gemm_packed(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  // EXERCISE: the packing helpers, the micro-kernel and the loops around them.
  (void)a;
  (void)b;
  (void)c;
  (void)M;
  (void)N;
  (void)K;
}

// EXERCISE rung 5 (vector intrinsics): rung 4 with its micro-kernel written in AVX2 + FMA: the 6 x 16 tile in 12
// registers of type __m256 (8 floats each); per k, 2 loads of b (_mm256_loadu_ps), 6 broadcasts of a
// (_mm256_broadcast_ss) and 12 _mm256_fmadd_ps; at the end, 12 _mm256_storeu_ps into the tile. Give that
// function __attribute__((target("avx2,fma"))) so it compiles whatever the flags; the checker calls this rung
// only where the CPU has AVX2 and FMA (worklog::cpu_has_avx2_fma()). Put it inside #if defined(__x86_64__).
void gemm_avx2_fma(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  // EXERCISE: the intrinsics micro-kernel, and rung 4's loops around it.
  (void)a;
  (void)b;
  (void)c;
  (void)M;
  (void)N;
  (void)K;
}

// EXERCISE rung 6 (threads): rung 5 (rung 4's micro-kernel where cpu_has_avx2_fma() is false) with the panels
// of a shared out among the OpenMP threads: `#pragma omp parallel for schedule(static)` on the loop over the
// panels of kMR rows. Each thread writes its own rows of c (no race); each needs its own a_pack and tile
// (declare them inside the loop); b is packed once, before the parallel loop, and only read inside it.
void gemm_threaded(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  // EXERCISE: rung 5 on every thread.
  (void)a;
  (void)b;
  (void)c;
  (void)M;
  (void)N;
  (void)K;
}

}  // namespace worklog
}  // namespace minidl
