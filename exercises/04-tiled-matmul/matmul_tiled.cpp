// exercises/04-tiled-matmul/matmul_tiled.cpp — EXERCISE 4: a cache-tiled matrix product on the CPU.
// Read first: docs/course/04-cpu-kernels.md. Check your work: `make exercise N=4`.
//
// Key "matmul" (ops/kernel_signatures.h): out[i] = op(a[i]) op(b[i]) for each i of a batch, row-major,
// all contiguous. This kernel serves the plain case only, float32 without transposes (it declines the
// rest, and the next kernel serves those calls); that part is written for you.
//
// Where the time goes: cpu/matmul_naive.cpp computes one output at a time and reads b down a column (a
// new cache line per multiply-add); cpu/matmul_ikj.cpp reorders the loops so the inner loop runs along a
// row of b and a row of out (stride 1, vectorised). Yet for large matrices ikj still streams all of b
// from memory once per row of a: b does not fit in the cache. Tiling fixes that: work on a block of
// kTileK rows of b (kTileK x kTileN floats, small enough to stay in the L2 cache) for kTileM rows of a
// before moving on, so each element of b brought into the cache is used kTileM times instead of once.
#include "exercises/04-tiled-matmul/matmul_tiled.h"

#include <algorithm>

#include "core/dispatch.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// A tile of b is kTileK x kTileN floats: 128 x 256 x 4 bytes = 128 KiB, inside a 1-2 MiB L2.
constexpr int64_t kTileM = 64, kTileN = 256, kTileK = 128;

// c [M, N] = a [M, K] b [K, N], row-major float32, overwriting c.
void matmul_one(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  // EXERCISE: the tiled product.
  //   1. zero c (the kernel overwrites out: `=`, not `+=`);
  //   2. loop over tiles: for m0 = 0, kTileM, ... < M;  for k0 = 0, kTileK, ... < K;  for n0 = 0, kTileN, ... < N:
  //        for each m in [m0, min(m0 + kTileM, M)) and k in [k0, min(k0 + kTileK, K)):
  //          c[m, n] += a[m, k] * b[k, n]   for every n in [n0, min(n0 + kTileN, N))   (the inner loop: stride 1)
  //      Element (r, col) of a row-major [rows, cols] matrix x is x[r * cols + col].
  //   The last tile of each loop is shorter when M, N or K is not a multiple of the tile: mind the min().
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
  register_kernel<MatmulKernel>("matmul", DeviceType::cpu, "student", 2,
                                "exercise 4: ikj loops in 64 x 256 x 128 tiles (f32, no transposes)", matmul_student);
}

}  // namespace minidl
