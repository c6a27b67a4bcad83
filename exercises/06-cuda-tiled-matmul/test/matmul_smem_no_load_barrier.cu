// exercises/06-cuda-tiled-matmul/test/matmul_smem_no_load_barrier.cu — a TEST FIXTURE, not a solution: exercise
// 6's reference solution with the __syncthreads() between loading the tiles and using them removed. ctest
// `exercise_6_missing_barrier_named` runs the checker on it (on a GPU; it skips elsewhere) and passes only when the
// checker's output names that barrier: proof that the checker explains a race rather than only reporting wrong
// numbers. Everything else is solution/matmul_smem.cu unchanged.
#include "exercises/06-cuda-tiled-matmul/matmul_smem.h"

#include "core/dispatch.h"
#include "cuda/cuda_common.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr int kTile = 16;

// c [M, N] = a [M, K] b [K, N] for batch entry blockIdx.z. Thread (threadIdx.y, threadIdx.x) of block
// (blockIdx.y, blockIdx.x) computes c[m, n] with m = blockIdx.y * kTile + threadIdx.y, n = blockIdx.x * kTile +
// threadIdx.x. M, N and K need not be multiples of kTile: a tile element outside a or b is loaded as 0, and a
// thread whose (m, n) is outside c computes but does not store (it must still help load the tiles and reach
// every __syncthreads()).
__global__ void matmul_smem_kernel(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  __shared__ float a_tile[kTile][kTile];  // a_tile[ty][kk] = a[m, k0 + kk]
  __shared__ float b_tile[kTile][kTile];  // b_tile[kk][tx] = b[k0 + kk, n]
  a += blockIdx.z * M * K;
  b += blockIdx.z * K * N;
  c += blockIdx.z * M * N;
  const int ty = threadIdx.y, tx = threadIdx.x;
  const int64_t m = static_cast<int64_t>(blockIdx.y) * kTile + ty, n = static_cast<int64_t>(blockIdx.x) * kTile + tx;
  float acc = 0.0f;
  for (int64_t k0 = 0; k0 < K; k0 += kTile) {
    a_tile[ty][tx] = (m < M && k0 + tx < K) ? a[m * K + k0 + tx] : 0.0f;
    b_tile[ty][tx] = (k0 + ty < K && n < N) ? b[(k0 + ty) * N + n] : 0.0f;
    for (int kk = 0; kk < kTile; ++kk) acc += a_tile[ty][kk] * b_tile[kk][tx];
    __syncthreads();
  }
  if (m < M && n < N) c[m * N + n] = acc;
}

bool matmul_student(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  if (out.dtype() != DType::float32 || trans_a || trans_b) return false;
  const int64_t batch = out.shape()[0], M = out.shape()[1], N = out.shape()[2], K = a.shape()[2];
  if (batch == 0 || M == 0 || N == 0) return true;
  if (batch > 65535) return false;  // the grid's z dimension
  const int device = out.device().index;
  cuda::set_device(device);
  const dim3 block(kTile, kTile);
  const dim3 grid(static_cast<unsigned int>((N + kTile - 1) / kTile), static_cast<unsigned int>((M + kTile - 1) / kTile),
                  static_cast<unsigned int>(batch));
  matmul_smem_kernel<<<grid, block, 0, cuda::stream(device)>>>(a.data<float>(), b.data<float>(), out.data<float>(), M, N, K);
  MINIDL_LAUNCH_CHECK();
  return true;
}

}  // namespace

// Priority -10: serves only when selected (the checker selects it).
void register_student_cuda_matmul() {
  register_kernel(keys::matmul, DeviceType::cuda, "student", Priority::reference - 10,
                  "exercise 6: 16 x 16 shared-memory tiles (f32, no transposes)", matmul_student);
}

}  // namespace minidl
