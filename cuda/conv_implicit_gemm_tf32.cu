// cuda/conv_implicit_gemm_tf32.cu — conv2d on the GPU as an implicit GEMM on TF32 tensor cores: kernel
// "implicit_gemm_tf32" of keys "conv2d", "conv2d.backward_input", "conv2d.backward_weight". The rung after
// implicit_gemm (cuda/conv_implicit_gemm.cu) on the convolution ladder (docs/conv-ladder.md).
//
// Same three GEMMs, same gathers (cuda/conv_implicit_gemm.cuh: forward M = O, N = Nb*OH*OW, K = C*KH*KW;
// backward_input M = C, N = Nb*H*W, K = O*KH*KW; backward_weight M = O, N = C*KH*KW, K = Nb*OH*OW, split
// over K with a fixed-order sum), same double-buffered main loop. What changes is the multiply: instead
// of each thread doing 8 x TM x TN FFMAs per K slice, each warp issues tensor-core instructions
//
//     mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32     D[16x8] += A[16x8] * B[8x8]
//
// on a WM x WN warp tile (64x32, 32x32 or 32x16 by block tile) in K steps of 8. The loaders round
// every operand to TF32 (cvt.rna: 10 explicit mantissa bits, round to nearest) once, as they store it
// into shared memory; products are exact in FP32 and accumulate in FP32. Fragment ownership (PTX ISA,
// "Matrix fragments for mma.m16n8k8", .tf32), with g = lane / 4 and t = lane % 4:
//     a0 = A[g][t]   a1 = A[g+8][t]   a2 = A[g][t+4]   a3 = A[g+8][t+4]      (A row-major, 16 x 8)
//     b0 = B[t][g]   b1 = B[t+4][g]                                          (B "col": 8 x 8, k rows)
//     c0 = C[g][2t]  c1 = C[g][2t+1]  c2 = C[g+8][2t]  c3 = C[g+8][2t+1]
// Read from As[k][m] and Bs[k][n] whose rows are BM + 8 and BN + 8 floats: for a fragment load the 32
// lanes hit bank (8t + g) mod 32, all different. (The loaders' stores then conflict up to 4 ways for the
// tiles whose k runs along lanes; the stores are one per element, the fragment loads several.)
// Tiles: BK = 16 (two mma K steps per barrier); forward/backward_input 128x128 (8 warps of 64x32),
// 64x128 (8 warps of 32x32), 32x128 (4 warps of 32x32); backward_weight 128x128, 64x64 (4 warps of
// 32x32), 32x64 (4 warps of 32x16), 32x32 (2 warps of 32x16). Chosen by shape as in the FP32 file.
//
// Precision: TF32 keeps about 3 decimal digits per product (unit roundoff 2^-11 per operand); a sum of
// K products of magnitude |a||b| has an error up to about 2^-10 * sum_k |a_k b_k| (tests/test_util.h
// tf32_tolerance). So this kernel runs only when asked for: with MINIDL_TF32=1 (as cuBLAS and cuDNN
// use TF32 then), or when selected by name (--kernel conv2d=implicit_gemm_tf32, MINIDL_KERNELS, the test
// sweeps, minidl bench); otherwise it declines and exact FP32 kernels serve the call.
//
// Why faster than implicit_gemm: an H200 SM does 1024 dense TF32 multiply-adds per clock on its tensor
// cores against 128 FP32 FFMAs; mma.sync (not Hopper's wgmma) reaches perhaps half of the tensor peak,
// and the gathers (global -> registers -> shared) become the limit.
// Not done: wgmma (sm_90a, warpgroup MMA from shared memory), TMA or cp.async staging, swizzled shared
// layouts; each is a further rung.
//
// Resources (nvcc 13.0, sm_90, -O3, -Xptxas -v; __launch_bounds__ caps every tile at 128 registers):
//   tile (threads, warp tile)   stage                  registers  spill stores/loads (bytes)  shared
//   128x128 (256, 64x32)        forward                128        28 / 40                     34 KiB
//                               backward_input s=1/s>1 128        32 / 48, 28 / 36
//                               backward_weight        128        56 / 56
//   64x128 (256, 32x32)         forward, backward_in.  120-128    0                           26 KiB
//   32x128 (128, 32x32)         forward, backward_in.  127-128    0 (4 / 4 for s=1 backward_input)  22 KiB
//   64x64 (128, 32x32)          backward_weight        128        0                           18 KiB
//   32x64 (128, 32x16)          backward_weight        116        0                           14 KiB
//   32x32 (64, 32x16)           backward_weight        125        0                           10 KiB
// (64x128 with 4 warps of 32x64 spilled 190-270 bytes: 8 warps of 32x32 instead.)
//
// float32, contiguous, 32-bit indexable sizes; anything else is declined. Outputs are overwritten (=).
#include <cstdint>

#include "core/dispatch.h"
#include "cuda/conv_implicit_gemm.cuh"
#include "cuda/conv_implicit_gemm_launch.cuh"
#include "cuda/cuda_common.h"
#include "cuda/kernel_helpers.h"
#include "cuda/mma_tf32.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

namespace implicit_gemm = cuda::implicit_gemm;

constexpr const char* kName = "implicit_gemm_tf32";

// A block tile for the tensor-core kernel: BM x BN, BK = 16, WARPS_M x WARPS_N warps each owning a
// WM x WN warp tile of MT x NT mma tiles (16 x 8 each); shared rows padded by 8 floats (see above).
template <int BM, int BN, int WARPS_M, int WARPS_N>
struct Tf32Tile : implicit_gemm::TileConfig<BM, BN, 16, 32 * WARPS_M * WARPS_N, 8> {
  static constexpr int kWarpsM = WARPS_M;
  static constexpr int kWM = BM / WARPS_M, kWN = BN / WARPS_N;
  static constexpr int kMT = kWM / 16, kNT = kWN / 8;
  static_assert(kWM % 16 == 0 && kWN % 8 == 0, "warp tiles are whole mma tiles");
};

using cuda::mma_tf32_16x8x8;

// One block per BM x BN tile of C and per K range (blockIdx.z); warp w owns the warp tile at rows
// (w % WARPS_M) * WM, columns (w / WARPS_M) * WN of the block tile. The launch bounds ask for 512
// resident threads per SM, capping registers at 128.
template <class Cfg, class Stage>
__global__ void __launch_bounds__(Cfg::kThreads, 512 / Cfg::kThreads)
    conv_implicit_gemm_tf32_kernel(const implicit_gemm::GemmParams p) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, MT = Cfg::kMT, NT = Cfg::kNT;
  __shared__ __align__(16) float As[2][BK][Cfg::kLdA];
  __shared__ __align__(16) float Bs[2][BK][Cfg::kLdB];

  const int m0 = static_cast<int>(blockIdx.y) * BM, n0 = static_cast<int>(blockIdx.x) * BN;
  const int k_begin = static_cast<int>(blockIdx.z) * p.k_per_split;
  const int k_end = min(p.K, k_begin + p.k_per_split);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, t = lane % 4;
  const int wm = (warp % Cfg::kWarpsM) * Cfg::kWM, wn = (warp / Cfg::kWarpsM) * Cfg::kWN;

  Stage stage(p, m0, n0, k_begin, k_end);
  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

  const int slices = (k_end - k_begin + BK - 1) / BK;
  stage.load();
  stage.store(&As[0][0][0], &Bs[0][0][0]);
  __syncthreads();
  for (int s = 0; s < slices; ++s) {
    const int cur = s & 1;
    const bool more = s + 1 < slices;
    if (more) {  // slice s+1: global loads in flight while slice s is multiplied
      stage.advance();
      stage.load();
    }
#pragma unroll
    for (int ks = 0; ks < BK; ks += 8) {
      uint32_t b[NT][2];
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const int n = wn + j * 8 + g;
        b[j][0] = __float_as_uint(Bs[cur][ks + t][n]);
        b[j][1] = __float_as_uint(Bs[cur][ks + t + 4][n]);
      }
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        const int m = wm + i * 16 + g;
        const uint32_t a[4] = {__float_as_uint(As[cur][ks + t][m]), __float_as_uint(As[cur][ks + t][m + 8]),
                               __float_as_uint(As[cur][ks + t + 4][m]), __float_as_uint(As[cur][ks + t + 4][m + 8])};
#pragma unroll
        for (int j = 0; j < NT; ++j) mma_tf32_16x8x8(acc[i][j], a, b[j]);
      }
    }
    // The other buffer was last read in iteration s-1, before the barrier that ended it.
    if (more) stage.store(&As[cur ^ 1][0][0], &Bs[cur ^ 1][0][0]);
    __syncthreads();
  }

  // acc[i][j][2h + c] is C(wm + 16 i + g + 8 h, wn + 8 j + 2 t + c): two neighbouring columns, in one
  // image plane and 8-byte aligned when plane is even (out_vec >= 2): one float2 store.
  float* out = p.out + static_cast<int64_t>(blockIdx.z) * p.M * p.N;
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int n = n0 + wn + j * 8 + 2 * t;
    if (n >= p.N) continue;
    const bool vec = p.out_vec >= 2 && n + 1 < p.N;
    const int col0 = implicit_gemm::column_offset(p, n);
    const int col1 = n + 1 < p.N ? implicit_gemm::column_offset(p, n + 1) : 0;
#pragma unroll
    for (int i = 0; i < MT; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = m0 + wm + i * 16 + g + 8 * h;
        if (m >= p.M) continue;
        if (vec) {
          *reinterpret_cast<float2*>(out + col0 + m * p.plane) = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
        } else {
          out[col0 + m * p.plane] = acc[i][j][2 * h];
          if (n + 1 < p.N) out[col1 + m * p.plane] = acc[i][j][2 * h + 1];
        }
      }
    }
  }
}

// What the shared host side (cuda/conv_implicit_gemm_launch.cuh) needs from this file: the kernel and
// its tiles.
struct Kernels {
  static constexpr bool kTf32 = true;
  // forward and backward_input (N = pixels): BN = 128.
  using Rows128 = Tf32Tile<128, 128, 2, 4>;  // 256 threads, warp tile 64x32
  using Rows64 = Tf32Tile<64, 128, 2, 4>;    // 256 threads, warp tile 32x32
  using Rows32 = Tf32Tile<32, 128, 1, 4>;    // 128 threads, warp tile 32x32
  // backward_weight (M = O, N = C*KH*KW), chosen by implicit_gemm::weight_tile in this order.
  using Weight128x128 = Tf32Tile<128, 128, 2, 4>;  // 256 threads, warp tile 64x32
  using Weight64x64 = Tf32Tile<64, 64, 2, 2>;      // 128 threads, warp tile 32x32
  using Weight32x64 = Tf32Tile<32, 64, 1, 4>;      // 128 threads, warp tile 32x16
  using Weight32x32 = Tf32Tile<32, 32, 1, 2>;      // 64 threads, warp tile 32x16
  template <class Cfg, class Stage>
  static void launch(dim3 grid, const implicit_gemm::GemmParams& p, cudaStream_t stream) {
    conv_implicit_gemm_tf32_kernel<Cfg, Stage><<<grid, Cfg::kThreads, 0, stream>>>(p);
  }
};

// TF32 only when MINIDL_TF32=1 or when this kernel is selected on CUDA by name, for conv2d or for the stage
// of `key` alone (core/selection_target.h).
bool tf32_wanted(const char* key) {
  return cuda::tf32_enabled() || KernelRegistry::instance().is_selected(key, DeviceType::cuda, kName);
}

bool conv2d_implicit_gemm_tf32(const Tensor& x, const Tensor& w, Tensor& y, const Conv2dParams& cp) {
  return tf32_wanted("conv2d") && implicit_gemm::forward<Kernels>(x, w, y, cp);
}

bool conv2d_backward_input_implicit_gemm_tf32(const Tensor& grad_y, const Tensor& w, Tensor& grad_x,
                                              const Conv2dParams& cp) {
  return tf32_wanted("conv2d.backward_input") && implicit_gemm::backward_input<Kernels>(grad_y, w, grad_x, cp);
}

bool conv2d_backward_weight_implicit_gemm_tf32(const Tensor& x, const Tensor& grad_y, Tensor& grad_w,
                                               const Conv2dParams& cp) {
  return tf32_wanted("conv2d.backward_weight") && implicit_gemm::backward_weight<Kernels>(x, grad_y, grad_w, cp);
}

}  // namespace

void register_conv_implicit_gemm_tf32_cuda() {
  // Priority 16: above implicit_gemm (15), so that MINIDL_TF32=1 without cuDNN picks it; below cudnn (20).
  // Without MINIDL_TF32=1 it declines unless selected by name.
  const char* when = "; runs with MINIDL_TF32=1 or when selected, else declines";
  register_kernel(keys::conv2d, DeviceType::cuda, kName, Priority::portable + 6,
                  str_cat("implicit GEMM on TF32 tensor cores (mma.sync m16n8k8)", when), conv2d_implicit_gemm_tf32);
  register_kernel(keys::conv2d_backward_input, DeviceType::cuda, kName, Priority::portable + 6,
                  str_cat("implicit GEMM on TF32 tensor cores, grad_y through flipped taps", when),
                  conv2d_backward_input_implicit_gemm_tf32);
  register_kernel(
      keys::conv2d_backward_weight, DeviceType::cuda, kName, Priority::portable + 6,
      str_cat("implicit GEMM on TF32 tensor cores, split-K with a fixed-order sum", when),
      conv2d_backward_weight_implicit_gemm_tf32);
}

}  // namespace minidl
