// cuda/matmul_v1_naive.cu — key "matmul" on the GPU, v1_naive: one thread per output element (float32, float64).
// Batched, row-major, with transpose flags (ops/kernel_signatures.h):
//
//     out[i] = op(a[i]) op(b[i]),   op(a) = trans_a ? a^T : a  [M, K],   op(b) = trans_b ? b^T : b  [K, N]
//
// Rungs of the GEMM ladder (docs/gemm-ladder.md): cuda/matmul_v1_naive.cu, matmul_v2_smem_tiled.cu,
// matmul_v3_register_blocked.cu, then cuda/matmul_v4_warptiled.cu ... matmul_tf32_wgmma.cu; the vendor
// kernel is cuda/matmul_cublas.cu. Accumulation convention: out is overwritten (=).
#include <algorithm>
#include <cstdint>

#include "core/dispatch.h"
#include "cuda/cuda_common.h"
#include "cuda/matmul_dims.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// ---------------------------------------------------------------- v1_naive
// One thread per output element: a dot product of length K read straight from global memory.
// Threads along x take consecutive columns n so the writes (and the reads of b when not transposed)
// are coalesced. Each element of a and b is read M or N times from memory: bound by memory traffic.
// [doc:v1_naive] quoted by docs/course/06-gemm-ladder.md
template <class T, bool TA, bool TB>
__global__ void matmul_naive_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out,
                                    MatmulDims d) {
  const int64_t n = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t m = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  if (m >= d.M || n >= d.N) return;
  for (int64_t bi = blockIdx.z; bi < d.batch; bi += gridDim.z) {
    const T* ab = a + bi * d.M * d.K;
    const T* bb = b + bi * d.K * d.N;
    T acc = 0;
    for (int64_t k = 0; k < d.K; ++k) acc += op_at<TA>(ab, d.lda, m, k) * op_at<TB>(bb, d.ldb, k, n);
    out[(bi * d.M + m) * d.N + n] = acc;
  }
}
// [/doc:v1_naive]

template <class T, bool TA, bool TB>
void launch_naive(const Tensor& a, const Tensor& b, Tensor& out, const MatmulDims& d, cudaStream_t s) {
  const dim3 block(32, 8);
  const dim3 grid(static_cast<unsigned>((d.N + 31) / 32), static_cast<unsigned>((d.M + 7) / 8),
                  static_cast<unsigned>(std::min<int64_t>(d.batch, 65535)));
  matmul_naive_kernel<T, TA, TB><<<grid, block, 0, s>>>(a.data<T>(), b.data<T>(), out.data<T>(), d);
  MINIDL_LAUNCH_CHECK();
}

template <class T, bool TA, bool TB>
struct NaiveLaunch {
  static void run(const Tensor& a, const Tensor& b, Tensor& out, const MatmulDims& d, cudaStream_t s) {
    launch_naive<T, TA, TB>(a, b, out, d, s);
  }
};
bool matmul_v1_naive(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  cuda::set_device(out.device().index);
  if (out.numel() == 0) return is_floating(out.dtype());
  return launch_typed<NaiveLaunch>(a, b, out, trans_a, trans_b, 65535LL * 8);
}

}  // namespace

void register_matmul_v1_naive_cuda() {
  register_kernel(keys::matmul, DeviceType::cuda, "v1_naive", Priority::reference,
                  "one thread per output element, operands read from global memory (f32, f64)",
                  matmul_v1_naive);
}

}  // namespace minidl
