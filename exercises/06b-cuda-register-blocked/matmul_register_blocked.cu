// exercises/06b-cuda-register-blocked/matmul_register_blocked.cu — EXERCISE 6b:
// a register-blocked matmul on the GPU (the GEMM ladder's step 3). Read first: docs/course/06-gemm-ladder.md
// and exercise 6. Check your work: `make exercise N=6b` (on a machine with an NVIDIA GPU; elsewhere it compiles your file and skips).
//
// Exercise 6's kernel makes one output per thread: for each kk it reads a_tile[ty][kk] and b_tile[kk][tx] from
// shared memory for one FMA, two shared loads per FMA, and shared memory becomes the limit. Here each thread
// keeps a kThreadM x kThreadN = 4 x 4 block of outputs in registers (acc). For each kk it reads 4 values of
// the a tile and 4 of the b tile into registers and does the 16 products of their outer product: 8 shared
// loads for 16 FMAs, four times as many FMAs per load. A block of 16 x 16 threads then covers a 64 x 64 tile
// of c, walking K in steps of kTileK = 8. (minidl's v3_register_blocked, cuda/gemm_tiled.cuh, goes on to
// 8 x 8 outputs per thread, 128 x 128 tiles and float4 loads.)
//
// Thread (ty, tx) owns the outputs c[m0 + ty + 16 i, n0 + tx + 16 j] for i, j in 0 .. 3: strided by 16, so
// that the 16 threads along x read 16 consecutive floats of b_tile (no bank conflicts) and store 16
// consecutive floats of c (coalesced).
//
// Key "matmul" (ops/kernel_signatures.h): out[i] = a[i] b[i] for each i of a batch, row-major, contiguous.
// This kernel serves float32 without transposes (it declines the rest: the other GPU kernels serve them).
#include "exercises/06b-cuda-register-blocked/matmul_register_blocked.h"

#include "core/dispatch.h"
#include "cuda/cuda_common.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr int kThreads = 16;                   // a block is kThreads x kThreads threads
constexpr int kThreadM = 4, kThreadN = 4;      // outputs per thread, in registers
constexpr int kTileM = kThreads * kThreadM;    // 64 rows of c per block
constexpr int kTileN = kThreads * kThreadN;    // 64 columns of c per block
constexpr int kTileK = 8;                      // the step along K

// c [M, N] = a [M, K] b [K, N] for batch entry blockIdx.z; block (blockIdx.y, blockIdx.x) computes the 64 x 64
// tile of c whose corner is (m0, n0) = (blockIdx.y * 64, blockIdx.x * 64).
__global__ void matmul_register_blocked_kernel(const float* a, const float* b, float* c, int64_t M, int64_t N,
                                               int64_t K) {
  __shared__ float a_tile[kTileK][kTileM];  // a_tile[kk][r] = a[m0 + r, k0 + kk]: stored transposed
  __shared__ float b_tile[kTileK][kTileN];  // b_tile[kk][col] = b[k0 + kk, n0 + col]
  a += blockIdx.z * M * K;
  b += blockIdx.z * K * N;
  c += blockIdx.z * M * N;
  const int ty = threadIdx.y, tx = threadIdx.x, t = ty * kThreads + tx;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kTileM, n0 = static_cast<int64_t>(blockIdx.x) * kTileN;
  float acc[kThreadM][kThreadN] = {};
  for (int64_t k0 = 0; k0 < K; k0 += kTileK) {
    // The loads (given): 512 elements of each tile, 2 per thread, 0 outside a or b.
    for (int idx = t; idx < kTileM * kTileK; idx += kThreads * kThreads) {
      const int r = idx / kTileK, kk = idx % kTileK;
      a_tile[kk][r] = (m0 + r < M && k0 + kk < K) ? a[(m0 + r) * K + k0 + kk] : 0.0f;
    }
    for (int idx = t; idx < kTileK * kTileN; idx += kThreads * kThreads) {
      const int kk = idx / kTileN, col = idx % kTileN;
      b_tile[kk][col] = (k0 + kk < K && n0 + col < N) ? b[(k0 + kk) * N + n0 + col] : 0.0f;
    }
    __syncthreads();
    // EXERCISE: for kk = 0 .. kTileK-1: read the thread's kThreadM values of column kk of the a tile,
    //   a_frag[i] = a_tile[kk][ty + kThreads * i], and its kThreadN values of row kk of the b tile,
    //   b_frag[j] = b_tile[kk][tx + kThreads * j], into local arrays (registers); then
    //   acc[i][j] += a_frag[i] * b_frag[j] for every i, j (their outer product: 16 FMAs for 8 shared loads).
    __syncthreads();
  }
  // EXERCISE: store acc[i][j] to c[m, n], m = m0 + ty + kThreads * i, n = n0 + tx + kThreads * j, for every i, j
  // with (m, n) inside c. Element (m, n) of the row-major [M, N] c is c[m * N + n].
  (void)a_tile;
  (void)b_tile;
  (void)acc;
}

bool matmul_student(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  if (out.dtype() != DType::float32 || trans_a || trans_b) return false;
  const int64_t batch = out.shape()[0], M = out.shape()[1], N = out.shape()[2], K = a.shape()[2];
  if (batch == 0 || M == 0 || N == 0) return true;
  if (batch > 65535) return false;  // the grid's z dimension
  const int device = out.device().index;
  cuda::set_device(device);
  const dim3 block(kThreads, kThreads);
  const dim3 grid(static_cast<unsigned int>((N + kTileN - 1) / kTileN), static_cast<unsigned int>((M + kTileM - 1) / kTileM),
                  static_cast<unsigned int>(batch));
  matmul_register_blocked_kernel<<<grid, block, 0, cuda::stream(device)>>>(a.data<float>(), b.data<float>(),
                                                                           out.data<float>(), M, N, K);
  MINIDL_LAUNCH_CHECK();
  return true;
}

}  // namespace

// Priority -10: serves only when selected (the checker selects it).
void register_student_register_blocked_matmul() {
  register_kernel(keys::matmul, DeviceType::cuda, "student", Priority::reference - 10,
                  "exercise 6b: 4 x 4 outputs per thread in registers, 64 x 64 tiles (f32, no transposes)",
                  matmul_student);
}

}  // namespace minidl
