// exercises/04b-cpu-gemm-worklog/solution/gemm_rungs.cpp — the reference solution of exercise 4b (the CPU GEMM
// worklog: six rungs from loop order to threads). Read first: docs/course/04-cpu-kernels.md. Check your work:
// `make exercise N=4b` (it checks every rung on odd sizes, then prints the table of GFLOP/s against OpenBLAS).
//
// Every rung: c [M, N] = a [M, K] b [K, N], row-major float32, c overwritten (gemm_rungs.h). This file is
// compiled with the machine's vector instructions (-march=native where the compiler accepts it: the
// checker's first lines say which flags), so the compiler may turn the plain loops of rungs 1-4 into AVX or
// AVX-512 code with fused multiply-adds; the library itself is built for plain x86-64 (SSE2, no FMA).
#include "exercises/04b-cpu-gemm-worklog/gemm_rungs.h"

#include <algorithm>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace minidl {
namespace worklog {

namespace {

constexpr int64_t kTileK = 128, kTileN = 256;  // rung 2: a tile of b, 128 KiB, kept in the L2 cache
constexpr int64_t kRegRows = 4, kRegCols = 16;  // rung 3: the tile of c kept in registers
constexpr int64_t kMR = 6, kNR = 16;            // rungs 4-6: the micro-tile of c (12 AVX2 registers)
constexpr int64_t kKC = 256;                    // rungs 3-6: the slice of K per pass
constexpr int64_t kNC = 512;                    // rungs 4-6: packed b block kKC x kNC, 512 KiB, in L2

}  // namespace

// ---------------------------------------------------------------- rung 1: loop order

void gemm_loop_order(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  std::fill(c, c + M * N, 0.0f);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) {
      const float a_mk = a[m * K + k];
      for (int64_t n = 0; n < N; ++n) c[m * N + n] += a_mk * b[k * N + n];
    }
}

// ---------------------------------------------------------------- rung 2: cache blocking

void gemm_cache_blocked(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  std::fill(c, c + M * N, 0.0f);
  for (int64_t k0 = 0; k0 < K; k0 += kTileK) {
    const int64_t kc = std::min(kTileK, K - k0);
    for (int64_t n0 = 0; n0 < N; n0 += kTileN) {
      const int64_t nc = std::min(kTileN, N - n0);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = k0; k < k0 + kc; ++k) {
          const float a_mk = a[m * K + k];
          for (int64_t n = n0; n < n0 + nc; ++n) c[m * N + n] += a_mk * b[k * N + n];
        }
    }
  }
}

// ---------------------------------------------------------------- rung 3: register blocking

namespace {

// c[m0 .. m0+4, n0 .. n0+16] += a[m0 .. m0+4, k0 .. k0+kc] b[k0 .. k0+kc, n0 .. n0+16]: a full tile.
void tile_4x16(const float* a, const float* b, float* c, int64_t N, int64_t K, int64_t m0, int64_t n0, int64_t k0,
               int64_t kc) {
  float acc[kRegRows][kRegCols] = {};
  for (int64_t k = k0; k < k0 + kc; ++k) {
    const float* b_k = b + k * N + n0;
    for (int64_t r = 0; r < kRegRows; ++r) {
      const float a_rk = a[(m0 + r) * K + k];
#pragma omp simd  // vectorise along j (16 floats), not along k (b's column, N floats apart)
      for (int64_t j = 0; j < kRegCols; ++j) acc[r][j] += a_rk * b_k[j];
    }
  }
  for (int64_t r = 0; r < kRegRows; ++r)
    for (int64_t j = 0; j < kRegCols; ++j) c[(m0 + r) * N + n0 + j] += acc[r][j];
}

// The same for a tile at the edge: mr <= 4 rows, nr <= 16 columns.
void tile_edge(const float* a, const float* b, float* c, int64_t N, int64_t K, int64_t m0, int64_t n0, int64_t k0,
               int64_t kc, int64_t mr, int64_t nr) {
  float acc[kRegRows][kRegCols] = {};
  for (int64_t k = k0; k < k0 + kc; ++k)
    for (int64_t r = 0; r < mr; ++r)
      for (int64_t j = 0; j < nr; ++j) acc[r][j] += a[(m0 + r) * K + k] * b[k * N + n0 + j];
  for (int64_t r = 0; r < mr; ++r)
    for (int64_t j = 0; j < nr; ++j) c[(m0 + r) * N + n0 + j] += acc[r][j];
}

}  // namespace

void gemm_register_blocked(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  std::fill(c, c + M * N, 0.0f);
  for (int64_t k0 = 0; k0 < K; k0 += kKC) {
    const int64_t kc = std::min(kKC, K - k0);
    for (int64_t n0 = 0; n0 < N; n0 += kRegCols) {
      const int64_t nr = std::min(kRegCols, N - n0);
      for (int64_t m0 = 0; m0 < M; m0 += kRegRows) {
        const int64_t mr = std::min(kRegRows, M - m0);
        if (mr == kRegRows && nr == kRegCols)
          tile_4x16(a, b, c, N, K, m0, n0, k0, kc);
        else
          tile_edge(a, b, c, N, K, m0, n0, k0, kc, mr, nr);
      }
    }
  }
}

// ---------------------------------------------------------------- rung 4: packing

namespace {

// b[k0 .. k0+kc, n0 .. n0+nc] into panels of kNR columns: panel p holds, for each k, the kNR values
// b[k0 + k, n0 + p*kNR + j] one after the other (b_pack[p*kc*kNR + k*kNR + j]); columns past N are 0.
void pack_b(const float* b, int64_t N, int64_t k0, int64_t kc, int64_t n0, int64_t nc, float* b_pack) {
  for (int64_t p = 0; p * kNR < nc; ++p)
    for (int64_t k = 0; k < kc; ++k)
      for (int64_t j = 0; j < kNR; ++j) {
        const int64_t n = n0 + p * kNR + j;
        b_pack[p * kc * kNR + k * kNR + j] = n < n0 + nc ? b[(k0 + k) * N + n] : 0.0f;
      }
}

// a[m0 .. m0+kMR, k0 .. k0+kc] column by column: a_pack[k*kMR + r] = a[m0 + r, k0 + k]; rows past M are 0.
void pack_a(const float* a, int64_t M, int64_t K, int64_t m0, int64_t k0, int64_t kc, float* a_pack) {
  for (int64_t k = 0; k < kc; ++k)
    for (int64_t r = 0; r < kMR; ++r) a_pack[k * kMR + r] = m0 + r < M ? a[(m0 + r) * K + k0 + k] : 0.0f;
}

// tile [kMR][kNR] = a_pack (kc x kMR) times b_pack (kc x kNR): both read front to back, stride 1.
void micro_kernel(int64_t kc, const float* a_pack, const float* b_pack, float* tile) {
  float acc[kMR][kNR] = {};
  for (int64_t k = 0; k < kc; ++k)
    for (int64_t r = 0; r < kMR; ++r)
#pragma omp simd  // vectorise along j (16 floats), not along r or k
      for (int64_t j = 0; j < kNR; ++j) acc[r][j] += a_pack[k * kMR + r] * b_pack[k * kNR + j];
  for (int64_t r = 0; r < kMR; ++r)
    for (int64_t j = 0; j < kNR; ++j) tile[r * kNR + j] = acc[r][j];
}

using MicroKernel = void (*)(int64_t kc, const float* a_pack, const float* b_pack, float* tile);

// The loops around the micro-kernel: blocks of b packed once per (n0, k0) and shared, a panel of a packed
// per kMR rows, the micro-tile added into c (only its rows < M and columns < N). With `threads`, the panels
// of a are shared out among the OpenMP threads: each writes its own rows of c.
void packed_loops(MicroKernel micro, bool threads, const float* a, const float* b, float* c, int64_t M, int64_t N,
                  int64_t K) {
  std::fill(c, c + M * N, 0.0f);
  std::vector<float> b_pack(kKC * (kNC + kNR));
  for (int64_t n0 = 0; n0 < N; n0 += kNC) {
    const int64_t nc = std::min(kNC, N - n0);
    for (int64_t k0 = 0; k0 < K; k0 += kKC) {
      const int64_t kc = std::min(kKC, K - k0);
      pack_b(b, N, k0, kc, n0, nc, b_pack.data());
      const int64_t panels = (M + kMR - 1) / kMR;
#pragma omp parallel for schedule(static) if (threads)
      for (int64_t i = 0; i < panels; ++i) {
        const int64_t m0 = i * kMR, mr = std::min(kMR, M - m0);
        float a_pack[kKC * kMR];
        float tile[kMR * kNR];
        pack_a(a, M, K, m0, k0, kc, a_pack);
        for (int64_t p = 0; p * kNR < nc; ++p) {
          micro(kc, a_pack, b_pack.data() + p * kc * kNR, tile);
          const int64_t nr = std::min(kNR, nc - p * kNR);
          for (int64_t r = 0; r < mr; ++r)
            for (int64_t j = 0; j < nr; ++j) c[(m0 + r) * N + n0 + p * kNR + j] += tile[r * kNR + j];
        }
      }
    }
  }
}

// ---------------------------------------------------------------- rung 5: AVX2 + FMA intrinsics

#if defined(__x86_64__)
// The micro-kernel in 12 AVX2 registers of 8 floats: per k, 2 loads of b, 6 broadcasts of a, 12 FMAs.
__attribute__((target("avx2,fma"))) void micro_kernel_avx2_fma(int64_t kc, const float* a_pack, const float* b_pack,
                                                                float* tile) {
  __m256 acc[kMR][2];
  for (int64_t r = 0; r < kMR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_loadu_ps(b_pack + k * kNR), b1 = _mm256_loadu_ps(b_pack + k * kNR + 8);
    for (int64_t r = 0; r < kMR; ++r) {
      const __m256 a_r = _mm256_broadcast_ss(a_pack + k * kMR + r);
      acc[r][0] = _mm256_fmadd_ps(a_r, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(a_r, b1, acc[r][1]);
    }
  }
  for (int64_t r = 0; r < kMR; ++r) {
    _mm256_storeu_ps(tile + r * kNR, acc[r][0]);
    _mm256_storeu_ps(tile + r * kNR + 8, acc[r][1]);
  }
}
#endif

}  // namespace

void gemm_packed(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  packed_loops(micro_kernel, false, a, b, c, M, N, K);
}

void gemm_avx2_fma(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
#if defined(__x86_64__)
  packed_loops(micro_kernel_avx2_fma, false, a, b, c, M, N, K);
#else
  packed_loops(micro_kernel, false, a, b, c, M, N, K);
#endif
}

// ---------------------------------------------------------------- rung 6: threads

void gemm_threaded(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
#if defined(__x86_64__)
  packed_loops(cpu_has_avx2_fma() ? micro_kernel_avx2_fma : micro_kernel, true, a, b, c, M, N, K);
#else
  packed_loops(micro_kernel, true, a, b, c, M, N, K);
#endif
}

}  // namespace worklog
}  // namespace minidl
