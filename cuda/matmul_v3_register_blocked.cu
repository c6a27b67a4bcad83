// cuda/matmul_v3_register_blocked.cu — key "matmul" on the GPU, v3_register_blocked: 8 x 8 outputs per
// thread from shared tiles (float32; the kernel itself is in cuda/gemm_tiled.cuh)
// Batched, row-major, with transpose flags (ops/kernel_signatures.h):
//
//     out[i] = op(a[i]) op(b[i]),   op(a) = trans_a ? a^T : a  [M, K],   op(b) = trans_b ? b^T : b  [K, N]
//
// Rungs of the GEMM ladder (docs/gemm-ladder.md): cuda/matmul_v1_naive.cu, matmul_v2_smem_tiled.cu,
// matmul_v3_register_blocked.cu, then cuda/matmul_v4_warptiled.cu ... matmul_tf32_wgmma.cu; the vendor
// kernel is cuda/matmul_cublas.cu. Accumulation convention: out is overwritten (=).
#include "core/dispatch.h"
#include "cuda/cuda_common.h"
#include "cuda/gemm_tiled.cuh"
#include "cuda/sgemm_common.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// ---------------------------------------------------------------- v3_register_blocked
// What changes: each thread computes an 8 x 8 tile of out in registers from 128 x 128 (or 64 x 64)
// block tiles, reading shared memory as float4 (see cuda/gemm_tiled.cuh). Why faster: 16 shared loads
// feed 64 FMAs (v2: 2 loads per FMA), and wide global loads; it runs near the FP32 FFMA peak's
// practical fraction instead of being bound by shared-memory bandwidth.
bool matmul_v3_register_blocked(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  if (out.dtype() != DType::float32) return false;
  cuda::set_device(out.device().index);
  if (out.numel() == 0) return true;
  return cuda::gemm_register_blocked(cuda::matmul_gemm_batch(a, b, out, trans_a, trans_b), out.device().index);
}

}  // namespace

void register_matmul_v3_register_blocked_cuda() {
  register_kernel(keys::matmul, DeviceType::cuda, "v3_register_blocked", Priority::tuned,
                  "128x128/64x64 block tiles, 8x8 outputs per thread in registers, float4 loads (f32)",
                  matmul_v3_register_blocked);
}

}  // namespace minidl
