// cuda/matmul_v2_smem_tiled.cu — key "matmul" on the GPU, v2_smem_tiled: 32 x 32 tiles staged in shared
// memory (float32, float64)
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

// ---------------------------------------------------------------- v2_smem_tiled
// What changes: a 32 x 32 block of threads computes a 32 x 32 tile of out, walking K in steps of 32.
// Each step the block copies a 32 x 32 tile of op(a) and of op(b) into shared memory (coalesced:
// consecutive threads read consecutive addresses whichever way the operand is stored), then every
// thread reads its row and column from shared memory. Why faster: each element loaded from global
// memory is used 32 times, so global traffic drops 32-fold; the limit becomes shared-memory bandwidth
// (2 shared loads per FMA), which v3 attacks. Rows are padded to 33 so transposed stores and column
// reads do not hit one bank.
constexpr int kTile = 32;

template <class T, bool TA, bool TB>
__global__ void matmul_smem_tiled_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out,
                                         MatmulDims d) {
  __shared__ T As[kTile][kTile + 1];  // As[m][k] = op(a)(m0 + m, k0 + k)
  __shared__ T Bs[kTile][kTile + 1];  // Bs[k][n] = op(b)(k0 + k, n0 + n)
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kTile, n0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int64_t m = m0 + ty, n = n0 + tx;

  for (int64_t bi = blockIdx.z; bi < d.batch; bi += gridDim.z) {
    const T* ab = a + bi * d.M * d.K;
    const T* bb = b + bi * d.K * d.N;
    T acc = 0;
    for (int64_t k0 = 0; k0 < d.K; k0 += kTile) {
      if (!TA) {  // a stored [M, K]: threads along x read along k
        const int64_t r = m0 + ty, c = k0 + tx;
        As[ty][tx] = (r < d.M && c < d.K) ? ab[r * d.lda + c] : T(0);
      } else {  // a stored [K, M]: threads along x read along m
        const int64_t r = k0 + ty, c = m0 + tx;
        As[tx][ty] = (r < d.K && c < d.M) ? ab[r * d.lda + c] : T(0);
      }
      if (!TB) {  // b stored [K, N]: threads along x read along n
        const int64_t r = k0 + ty, c = n0 + tx;
        Bs[ty][tx] = (r < d.K && c < d.N) ? bb[r * d.ldb + c] : T(0);
      } else {  // b stored [N, K]: threads along x read along k
        const int64_t r = n0 + ty, c = k0 + tx;
        Bs[tx][ty] = (r < d.N && c < d.K) ? bb[r * d.ldb + c] : T(0);
      }
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kTile; ++k) acc += As[ty][k] * Bs[k][tx];
      __syncthreads();
    }
    if (m < d.M && n < d.N) out[(bi * d.M + m) * d.N + n] = acc;
  }
}

template <class T, bool TA, bool TB>
void launch_smem_tiled(const Tensor& a, const Tensor& b, Tensor& out, const MatmulDims& d, cudaStream_t s) {
  const dim3 block(kTile, kTile);
  const dim3 grid(static_cast<unsigned>((d.N + kTile - 1) / kTile), static_cast<unsigned>((d.M + kTile - 1) / kTile),
                  static_cast<unsigned>(std::min<int64_t>(d.batch, 65535)));
  matmul_smem_tiled_kernel<T, TA, TB><<<grid, block, 0, s>>>(a.data<T>(), b.data<T>(), out.data<T>(), d);
  MINIDL_LAUNCH_CHECK();
}

template <class T, bool TA, bool TB>
struct SmemTiledLaunch {
  static void run(const Tensor& a, const Tensor& b, Tensor& out, const MatmulDims& d, cudaStream_t s) {
    launch_smem_tiled<T, TA, TB>(a, b, out, d, s);
  }
};

bool matmul_v2_smem_tiled(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  cuda::set_device(out.device().index);
  if (out.numel() == 0) return is_floating(out.dtype());
  return launch_typed<SmemTiledLaunch>(a, b, out, trans_a, trans_b, 65535LL * kTile);
}

}  // namespace

void register_matmul_v2_smem_tiled_cuda() {
  register_kernel(keys::matmul, DeviceType::cuda, "v2_smem_tiled", Priority::portable,
                  "32x32 shared-memory tiles, one output per thread (f32, f64)", matmul_v2_smem_tiled);
}

}  // namespace minidl
