// exercises/06-cuda-tiled-matmul/matmul_smem.cu — EXERCISE 6, no scaffolding: a matrix product from tiles
// staged in shared memory. Read first: docs/course/06-gemm-ladder.md. Check your work: `make exercise N=6`
// (on a machine with an NVIDIA GPU).
//
// Contract:
//   matmul_smem_kernel: c [M, N] = a [M, K] b [K, N] (row-major float32) for batch entry blockIdx.z, launched
//     as below (given): blocks of kTile x kTile threads, block (blockIdx.y, blockIdx.x) owns the kTile x kTile
//     tile of c at (blockIdx.y * kTile, blockIdx.x * kTile). Any M, N, K: nothing outside a, b or c is read or
//     written. Each element of a and b must come from global memory once per tile step, through shared
//     memory (the checker times it against v1_naive and checks that results do not change from run to run).
//   matmul_student and register_student_cuda_matmul are given.
#include "exercises/06-cuda-tiled-matmul/matmul_smem.h"

#include "core/dispatch.h"
#include "cuda/cuda_common.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr int kTile = 16;

__global__ void matmul_smem_kernel(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
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
