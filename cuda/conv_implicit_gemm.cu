// cuda/conv_implicit_gemm.cu — conv2d on the GPU as an implicit GEMM in exact FP32: kernel
// "implicit_gemm" of keys "conv2d", "conv2d.backward_input", "conv2d.backward_weight". The rung after
// im2col_gemm (cuda/conv_im2col.cu) on the convolution ladder (docs/conv-ladder.md).
//
// The math (ops/kernel_signatures.h), x [Nb, C, H, W], w [O, C, KH, KW], y [Nb, O, OH, OW]:
//   forward          y[b,o,p,q]      = sum_{c,i,j} x[b, c, p*sh - ph + i, q*sw - pw + j] * w[o,c,i,j]
//   backward_input   grad_x[b,c,h,w] = sum_{o,i,j} grad_y[b, o, p, q] * w[o,c,i,j]  over the (p, q) with
//                                      p*sh = h + ph - i and q*sw = w + pw - j
//   backward_weight  grad_w[o,c,i,j] = sum_{b,p,q} grad_y[b,o,p,q] * x[b, c, p*sh - ph + i, q*sw - pw + j]
// Each is one GEMM C[M, N] = A[M, K] B[K, N] whose operands are read from the tensors as they are, with
// no unrolled copy in memory (the mapping, the gathers and a diagram: cuda/conv_implicit_gemm.cuh):
//   forward          M = O, N = Nb*OH*OW (output pixels), K = C*KH*KW
//   backward_input   M = C, N = Nb*H*W  (input pixels),   K = O*KH*KW   (gathers grad_y through the flipped taps)
//   backward_weight  M = O, N = C*KH*KW,                  K = Nb*OH*OW  (split over K, see below)
//
// The GEMM (the kernel below) is the register-blocked GEMM of cuda/gemm_tiled.cuh, one rung further:
//   - a block computes a BM x BN tile of C in K slices of BK = 8: the stage's loaders gather the A and B
//     slices into shared memory (As[k][m], Bs[k][n]); each thread owns a TM x TN (8x8 or 4x8, 4x4) tile
//     of C in registers, read with float4 from shared memory as in gemm_tiled.cuh;
//   - double buffering: two shared buffers; while the block multiplies slice t, each thread already has
//     the global loads of slice t+1 in flight (into registers), and stores them into the other buffer
//     afterwards: one __syncthreads per slice, and memory latency hidden behind 8 x TM x TN FMAs;
//   - tile size by shape: forward and backward_input have a long pixel dimension N, so BN = 128 and BM is
//     the largest of 128, 64, 32 that does not waste more than 1/8 of its rows on M = O or C (32 and 64
//     channels are common), made smaller when the GPU would otherwise have idle multiprocessors;
//   - backward_weight has a small output (O x C*KH*KW) and a long K (every output pixel of the batch):
//     tiles 128x128, 64x64, 32x64 or 32x32 (the first that wastes at most 1/8 of the output; 32x64 fits
//     32 channels with 3x3 kernels, N = 288 c), and K split into ranges, one per blockIdx.z, whose partial outputs a
//     second kernel adds up in a fixed order (deterministic: no float atomics; the same bits every run).
// What changes against im2col_gemm, and why it should be faster: no columns buffer (im2col writes K x N
// floats and the GEMM reads them back: for MNIST conv2 42 MB each way per stage; col2im adds another
// pass for backward_input), one kernel per stage instead of two or three, no chunking of the batch,
// double-buffered tiles (gemm_tiled has one buffer and waits for each slice's loads), tiles fitted to 32-
// and 64-channel layers, and a weight-gradient split sized to fill the GPU. The cost: index arithmetic
// per gathered element (a few integer adds and compares; the divisions are done once per block).
//
// Resources (nvcc 13.0, sm_90, -O3, -Xptxas -v; __launch_bounds__ caps every tile at 128 registers):
//   tile (threads)         stage                  registers  spill stores/loads (bytes)  shared
//   128x128 8x8 (256)      forward                128        76 / 60                     16.5 KiB
//                          backward_input s=1/s>1 128        68 / 52, 96 / 72
//                          backward_weight        128        68 / 48
//   64x128 8x8 (128)       forward                128        84 / 68                     12.5 KiB
//                          backward_input s=1/s>1 128        60 / 48, 84 / 80
//   32x128 4x8 (128)       forward, backward_in.  117-121    0                           10.5 KiB
//   64x64 4x8 (128)        backward_weight        117        0                           8.5 KiB
//   32x64 4x8 (64)         backward_weight        127        0                           6.5 KiB
//   32x32 4x4 (64)         backward_weight        103        0                           4.5 KiB
// The 8x8 register tiles spill a little (the loaders' per-column state, read once per K slice, not the
// accumulators); a 64x64 tile with 8x8 per thread spilled 160 bytes, hence 4x8 there.
//
// float32, contiguous, 32-bit indexable sizes (cuda/conv_implicit_gemm.cuh); anything else is declined
// (float64 goes to "direct"). Accumulation convention: outputs are overwritten (=).
#include <cstdint>

#include "core/dispatch.h"
#include "cuda/conv_implicit_gemm.cuh"
#include "cuda/conv_implicit_gemm_launch.cuh"
#include "cuda/cuda_common.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

namespace implicit_gemm = cuda::implicit_gemm;

// A block tile for the FFMA kernel: BM x BN, BK = 8, one TM x TN register tile per thread, shared rows
// padded by 4 floats (keeps the loaders' transposing stores free of bank conflicts, rows 16-byte aligned).
template <int BM, int BN, int TM, int TN>
struct Fp32Tile : implicit_gemm::TileConfig<BM, BN, 8, (BM / TM) * (BN / TN), 4> {
  static constexpr int kTM = TM, kTN = TN;
  static_assert(TM % 4 == 0 && TN % 4 == 0, "register tiles are read as float4");
};

// One block per BM x BN tile of C (blockIdx.x: columns, blockIdx.y: rows) and per K range (blockIdx.z,
// the weight gradient's splits). Thread (ty, tx) owns rows g*(4 BM/TM) + ty*4 + {0..3} and columns
// g*(4 BN/TN) + tx*4 + {0..3} of the tile: groups of 4 that consecutive threads read as consecutive
// float4s from shared memory. The launch bounds cap registers at 128 per thread (512 threads per SM).
template <class Cfg, class Stage>
__global__ void __launch_bounds__(Cfg::kThreads, 512 / Cfg::kThreads)
    conv_implicit_gemm_kernel(const implicit_gemm::GemmParams p) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, TM = Cfg::kTM, TN = Cfg::kTN;
  __shared__ __align__(16) float As[2][BK][Cfg::kLdA];
  __shared__ __align__(16) float Bs[2][BK][Cfg::kLdB];

  const int m0 = static_cast<int>(blockIdx.y) * BM, n0 = static_cast<int>(blockIdx.x) * BN;
  const int k_begin = static_cast<int>(blockIdx.z) * p.k_per_split;
  const int k_end = min(p.K, k_begin + p.k_per_split);
  const int tx = static_cast<int>(threadIdx.x) % (BN / TN), ty = static_cast<int>(threadIdx.x) / (BN / TN);

  Stage stage(p, m0, n0, k_begin, k_end);
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  const int slices = (k_end - k_begin + BK - 1) / BK;
  stage.load();
  stage.store(&As[0][0][0], &Bs[0][0][0]);
  __syncthreads();
  for (int t = 0; t < slices; ++t) {
    const int cur = t & 1;
    const bool more = t + 1 < slices;
    if (more) {  // slice t+1: global loads in flight while slice t is multiplied
      stage.advance();
      stage.load();
    }
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float a[TM], b[TN];
#pragma unroll
      for (int g = 0; g < TM / 4; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(&As[cur][kk][g * (4 * BM / TM) + ty * 4]);
        a[g * 4 + 0] = v.x;
        a[g * 4 + 1] = v.y;
        a[g * 4 + 2] = v.z;
        a[g * 4 + 3] = v.w;
      }
#pragma unroll
      for (int g = 0; g < TN / 4; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[cur][kk][g * (4 * BN / TN) + tx * 4]);
        b[g * 4 + 0] = v.x;
        b[g * 4 + 1] = v.y;
        b[g * 4 + 2] = v.z;
        b[g * 4 + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    // The other buffer was last read in iteration t-1, before the barrier that ended it.
    if (more) stage.store(&As[cur ^ 1][0][0], &Bs[cur ^ 1][0][0]);
    __syncthreads();
  }

  // C(m, n) -> out[column_offset(n) + m * plane]; 4 consecutive columns share an image plane and are
  // 16-byte aligned when plane % 4 == 0 (out_vec == 4): one float4 store.
  float* out = p.out + static_cast<int64_t>(blockIdx.z) * p.M * p.N;
#pragma unroll
  for (int g = 0; g < TN / 4; ++g) {
    const int n = n0 + g * (4 * BN / TN) + tx * 4;
    if (n >= p.N) continue;
    const bool vec = p.out_vec == 4 && n + 3 < p.N;
    const int col = implicit_gemm::column_offset(p, n);
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int m = m0 + (i / 4) * (4 * BM / TM) + ty * 4 + i % 4;
      if (m >= p.M) continue;
      if (vec) {
        *reinterpret_cast<float4*>(out + col + m * p.plane) =
            make_float4(acc[i][g * 4 + 0], acc[i][g * 4 + 1], acc[i][g * 4 + 2], acc[i][g * 4 + 3]);
      } else {
#pragma unroll
        for (int c = 0; c < 4; ++c)
          if (n + c < p.N) out[implicit_gemm::column_offset(p, n + c) + m * p.plane] = acc[i][g * 4 + c];
      }
    }
  }
}

// What the shared host side (cuda/conv_implicit_gemm_launch.cuh) needs from this file: the kernel and
// its tiles.
struct Kernels {
  static constexpr bool kTf32 = false;
  // forward and backward_input (N = pixels): BN = 128.
  using Rows128 = Fp32Tile<128, 128, 8, 8>;  // 256 threads
  using Rows64 = Fp32Tile<64, 128, 8, 8>;    // 128 threads
  using Rows32 = Fp32Tile<32, 128, 4, 8>;    // 128 threads
  // backward_weight (M = O, N = C*KH*KW), chosen by implicit_gemm::weight_tile in this order.
  using Weight128x128 = Fp32Tile<128, 128, 8, 8>;  // 256 threads
  using Weight64x64 = Fp32Tile<64, 64, 4, 8>;      // 128 threads (8x8 register tiles spilled here)
  using Weight32x64 = Fp32Tile<32, 64, 4, 8>;      // 64 threads: 32 output channels, 3x3 kernels (N = 288 c)
  using Weight32x32 = Fp32Tile<32, 32, 4, 4>;      // 64 threads
  template <class Cfg, class Stage>
  static void launch(dim3 grid, const implicit_gemm::GemmParams& p, cudaStream_t stream) {
    conv_implicit_gemm_kernel<Cfg, Stage><<<grid, Cfg::kThreads, 0, stream>>>(p);
  }
};

bool conv2d_implicit_gemm(const Tensor& x, const Tensor& w, Tensor& y, const Conv2dParams& cp) {
  return implicit_gemm::forward<Kernels>(x, w, y, cp);
}

bool conv2d_backward_input_implicit_gemm(const Tensor& grad_y, const Tensor& w, Tensor& grad_x,
                                         const Conv2dParams& cp) {
  return implicit_gemm::backward_input<Kernels>(grad_y, w, grad_x, cp);
}

bool conv2d_backward_weight_implicit_gemm(const Tensor& x, const Tensor& grad_y, Tensor& grad_w,
                                          const Conv2dParams& cp) {
  return implicit_gemm::backward_weight<Kernels>(x, grad_y, grad_w, cp);
}

}  // namespace

void register_conv_implicit_gemm_cuda() {
  // Priority 15: above im2col_gemm (10), which it should beat everywhere (no columns buffer, double
  // buffering), below cudnn (20). The lead adjusts after the H200 measurements.
  register_kernel(keys::conv2d, DeviceType::cuda, "implicit_gemm", Priority::portable + 5,
                  "implicit GEMM, input gathered into shared tiles, no im2col buffer, FP32 FFMA (f32)",
                  conv2d_implicit_gemm);
  register_kernel(
      keys::conv2d_backward_input, DeviceType::cuda, "implicit_gemm", Priority::portable + 5,
      "implicit GEMM gathering grad_y through the flipped taps, no col2im, FP32 FFMA (f32)",
      conv2d_backward_input_implicit_gemm);
  register_kernel(
      keys::conv2d_backward_weight, DeviceType::cuda, "implicit_gemm", Priority::portable + 5,
      "implicit GEMM over the batch's pixels, split-K with a fixed-order sum (deterministic), FP32 FFMA (f32)",
      conv2d_backward_weight_implicit_gemm);
}

}  // namespace minidl
