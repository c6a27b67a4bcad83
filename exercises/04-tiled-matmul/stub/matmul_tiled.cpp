// exercises/04-tiled-matmul/matmul_tiled.cpp — EXERCISE 4: a register- and cache-blocked matrix product on
// the CPU. Read first: docs/course/04-cpu-kernels.md. Check your work: `make exercise N=4`.
//
// Key "matmul" (ops/kernel_signatures.h): out[i] = op(a[i]) op(b[i]) for each i of a batch, row-major,
// all contiguous. This kernel serves the plain case only, float32 without transposes (it declines the
// rest, and the next kernel serves those calls); that part is written for you.
//
// Where the time goes. cpu/matmul_ikj.cpp computes  c[m, :] += a[m, k] * b[k, :]  with a stride-1,
// vectorised inner loop. Each multiply-add of that loop loads b[k, j], loads c[m, j] and stores c[m, j]:
// three memory operations per multiply-add, and the loads and stores, not the arithmetic, set its pace.
//   - Register blocking (4a): update 4 rows of c together. For each k, the 4 values a[m+r, k] sit in
//     registers, and each b[k, j] loaded feeds 4 multiply-adds instead of one. This file is compiled with
//     -march=native (exercises/CMakeLists.txt), so on a CPU with FMA each multiply-add is one fused
//     instruction; the library's ikj is built for plain x86-64 (SSE2): a multiply and an add, 4 floats wide.
//   - Cache blocking (4b): for a large product all of b does not fit in the cache, and ikj streams b
//     from memory again for every row of a. Working on a tile of kTileK rows x kTileN columns of b
//     (128 x 256 floats = 128 KiB, inside a 1-2 MiB L2) for every row of a before moving to the next tile
//     keeps that tile in the cache while it is reused.
// Tiles alone (without 4a) are no faster than ikj: the course's first version of this exercise measured it.
#include "exercises/04-tiled-matmul/matmul_tiled.h"

#include <algorithm>

#include "core/dispatch.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr int64_t kTileK = 128, kTileN = 256;  // the tile of b kept in the cache
constexpr int64_t kRows = 4;                   // rows of c updated together

// EXERCISE 4a: for the kRows = 4 rows r = 0 .. 3 (row r of a starts at a + r*lda, of c at c + r*ldc):
//   c[r, j] += sum over k < kc of a[r, k] * b[k, j],   for every j < nc   (row k of b starts at b + k*ldb)
// For each k: read a[0, k], a[1, k], a[2, k], a[3, k] into four local variables, then ONE loop over j that
// loads b[k, j] once and updates the four rows of c with it. update_1_row below is the same for one row.
// ([[maybe_unused]]: until your matmul_one calls them, the compiler would warn that they are unused.)
[[maybe_unused]] void update_4_rows(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                                    int64_t kc, int64_t nc) {
  // EXERCISE: the loops.
  (void)a;
  (void)lda;
  (void)b;
  (void)ldb;
  (void)c;
  (void)ldc;
  (void)kc;
  (void)nc;
}

// The same for one row: the leftover rows when M is not a multiple of 4 (given).
[[maybe_unused]] void update_1_row(const float* a, const float* b, int64_t ldb, float* c, int64_t kc, int64_t nc) {
  for (int64_t k = 0; k < kc; ++k) {
    const float a_k = a[k];
    const float* b_k = b + k * ldb;
    for (int64_t j = 0; j < nc; ++j) c[j] += a_k * b_k[j];
  }
}

// EXERCISE 4b: c [M, N] = a [M, K] b [K, N], row-major float32, overwriting c:
//   1. zero c (kernels overwrite their output: `=`, not `+=`);
//   2. for each tile of b, k0 = 0, kTileK, ... < K and n0 = 0, kTileN, ... < N (the last tile of each may be
//      shorter: kc = min(kTileK, K - k0), nc = min(kTileN, N - n0)):
//        for the rows m = 0, 4, 8, ... while m + 4 <= M:  update_4_rows on the tile;
//        for the leftover rows (M not a multiple of 4):    update_1_row on the tile.
//      The tile's corner: a + m*K + k0 (row stride K), b + k0*N + n0 (row stride N), c + m*N + n0 (row stride N).
void matmul_one(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  // EXERCISE: zero c, then the tiles.
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
