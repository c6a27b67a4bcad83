// exercises/06b-cuda-register-blocked/matmul_register_blocked.cu — EXERCISE 6b, no scaffolding: the
// register-blocked rung of the GPU ladder. Read first: docs/course/06-gemm-ladder.md. Check your work:
// `make exercise N=6b` (on a machine with an NVIDIA GPU).
//
// Contract:
//   matmul_register_blocked_kernel: c [M, N] = a [M, K] b [K, N] (row-major float32) for batch entry
//     blockIdx.z, launched as below (given): blocks of kThreads x kThreads threads, block (blockIdx.y,
//     blockIdx.x) owns the kTileM x kTileN tile of c at (blockIdx.y * kTileM, blockIdx.x * kTileN), each
//     thread kThreadM x kThreadN outputs held in registers; tiles of a and b staged in shared memory, K in
//     steps of kTileK. Any M, N, K: nothing outside a, b or c is read or written.
//   matmul_student and register_student_register_blocked_matmul are given.
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

__global__ void matmul_register_blocked_kernel(const float* a, const float* b, float* c, int64_t M, int64_t N,
                                               int64_t K) {
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
