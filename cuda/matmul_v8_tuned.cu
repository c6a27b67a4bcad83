// cuda/matmul_v8_tuned.cu — matmul kernel "v8_tuned", step 8 of the FP32 GEMM ladder (docs/gemm-ladder.md):
// out[r] = op(a[r]) op(b[r]) in exact float32 FMAs, any M, N, K, all four transpose flags, float32 only.
// Accumulation convention: out is overwritten (=).
//
// v8 is v4's kernel (cuda/matmul_v4_warptiled.cu: float4 global and shared loads, A stored transposed
// As[k][m], 2-D warp tiles, the 4 x 4 pieces of sgemm_common.cuh's register tile) made a template over its
// tile, so that the changes that might lift v4 can be compared side by side: a bigger register budget
// (__launch_bounds__(threads, 1), or 128-thread blocks x 2: up to 255 registers per thread), 8 x 16
// outputs per thread (64 x 64 warp tiles: 2 + 4 float4 shared reads per 128 FMAs instead of 2 + 2 per 64),
// 128 x 256 block tiles (twice the global reuse of 128 x 128), shared-memory double buffering with one
// barrier per K slice (v5's scheme), K slices of 8 or 16, and warp tiles of 32 x 64 as well as 64 x 32.
// Kept from v4: shared rows padded by 4 floats (the transposing stores of K-contiguous tiles hit 32
// different banks, the float4 fragment reads of a warp are consecutive 16-byte words: no conflicts, so no
// swizzle is needed), float4 stores of C where the row is aligned, and the summation order (fmaf over
// k = 0, 1, 2, ...): every configuration gives the same bits as v3-v6 (tests/test_cuda_kernels_vs_cpu.cpp).
// Shared memory is dynamic (the BK 16, 128 x 256 tiles need 50 KB) with the carveout set to the largest
// shared-memory share, so that two blocks of 34 KB, or one of 50 KB, are never refused residency.
//
// A thread tile of TM x TN is (TM/4) x (TN/4) pieces of 4 x 4; lanes are (WM/TM) x (WN/TN) over the warp
// tile, piece p of a lane starting p * WM/(TM/4) rows below its first (v4's layout for TM = TN = 8):
//
//   block 128 x 256, 8 warps of 64 x 64           one 64 x 64 warp tile, lanes 8 (m) x 4 (n), 8 x 16 each:
//   +-----+-----+-----+-----+                      lane (i, j) owns rows {0, 32} + 4i + {0..3} and columns
//   | w0  | w1  | w2  | w3  |                      {0, 16, 32, 48} + 4j + {0..3}; per k it reads 2 float4
//   +-----+-----+-----+-----+                      of As and 4 of Bs, a warp's reads being 8 (A) or 4 (B)
//   | w4  | w5  | w6  | w7  |                      consecutive 16-byte words
//   +-----+-----+-----+-----+
//
// The configuration is chosen at run time by MINIDL_V8_CONFIG (an index or a name below; unset: the
// default, marked *). One configuration serves every shape (no tile rule: small products run big, mostly
// empty tiles, correctly but slowly). An unknown value is an error that lists the valid ones. Names are
// BMxBNxBK_TMxTN_wWMxWN_{threads}t_{min blocks per SM}b[_db]:
//
//   0  128x128x16_8x8_w64x32_256t_2b       v4's tile and loop through this template (a control)
//   1  128x128x8_8x8_w64x32_256t_2b_db     double buffered, K slices of 8: v5 with half its staging registers
//   2  128x128x16_8x8_w64x32_256t_1b_db    v5 with up to 255 registers (1 resident block of 8 warps)
//   3  128x128x8_8x8_w32x64_256t_2b_db     as 1 with 32 x 64 warp tiles (4 x 8 lanes)
//   4  128x128x16_8x16_w64x64_128t_2b_db   4 warps of 64 x 64, 8 x 16 per thread, 2 blocks of 128 threads
//   5  128x128x8_8x16_w64x64_128t_2b_db    as 4 with K slices of 8
//   6* 128x256x8_8x16_w64x64_256t_1b_db    8 warps of 64 x 64, one block per SM: twice v4's global reuse
//   7  128x256x16_8x16_w64x64_256t_1b_db   as 6 with half the barriers
//   8  256x128x8_8x16_w64x64_256t_1b_db    as 6 with the tile turned
//
// Why each was tried, what it was predicted and measured to do, and its registers and shared memory:
// docs/gemm-ladder.md ("v8").
#include <cstdlib>
#include <string>

#include "core/settings.h"
#include "cuda/sgemm_common.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

using cuda::GemmBatch;

// One tile configuration: block tile BM x BN, K slices of BK, warp tile WM x WN, thread tile TM x TN,
// MIN_BLOCKS resident blocks per multiprocessor asked of the compiler (__launch_bounds__: the register cap
// is 65536 / (threads x MIN_BLOCKS), at most 255), and one or two shared buffers.
template <int BM_, int BN_, int BK_, int WM_, int WN_, int TM_, int TN_, int MIN_BLOCKS, bool DOUBLE_BUFFER>
struct TileConfig {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, TM = TM_, TN = TN_;
  static constexpr int kMinBlocks = MIN_BLOCKS;
  static constexpr bool kDoubleBuffer = DOUBLE_BUFFER;
  static constexpr int kWarpsN = BN / WN, kWarps = (BM / WM) * (BN / WN), kThreads = 32 * kWarps;
  static constexpr int kLanesM = WM / TM, kLanesN = WN / TN;  // lanes of a warp along m and n
  static constexpr int kPiecesM = TM / 4, kPiecesN = TN / 4;  // 4 x 4 pieces of a thread tile
  static constexpr int kPieceStepM = 4 * kLanesM, kPieceStepN = 4 * kLanesN;  // rows / columns between pieces
  static constexpr int kLdA = BM + 4, kLdB = BN + 4;          // padded shared rows (StagedTile's bank rule)
  static constexpr int kStages = DOUBLE_BUFFER ? 2 : 1;
  static constexpr int kSliceA = BK * kLdA, kSliceB = BK * kLdB;  // floats per staged slice
  static constexpr int kSmemBytes = static_cast<int>(sizeof(float)) * kStages * (kSliceA + kSliceB);
  static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must cover the block tile");
  static_assert(TM % 4 == 0 && TN % 4 == 0 && WM % TM == 0 && WN % TN == 0, "thread tiles are 4 x 4 pieces");
  static_assert(kLanesM * kLanesN == 32, "a warp's 32 lanes cover its warp tile");
};

// acc += As^T Bs over one staged slice: As[k][m] (rows of kLdA), Bs[k][n] (rows of kLdB). Per k a thread
// reads TM/4 + TN/4 float4 and does TM x TN FMAs, in the K order 0, 1, 2, ... of the whole ladder. The
// loop is unrolled; with registers to spare the compiler loads k + 1's values during k's FMAs.
template <class Cfg>
__device__ __forceinline__ void fma_slice(const float* As, const float* Bs, int m, int n,
                                          float (&acc)[Cfg::TM][Cfg::TN]) {
#pragma unroll
  for (int k = 0; k < Cfg::BK; ++k) {
    float a[Cfg::TM], b[Cfg::TN];
#pragma unroll
    for (int p = 0; p < Cfg::kPiecesM; ++p) {
      const float4 v = *reinterpret_cast<const float4*>(As + k * Cfg::kLdA + m + p * Cfg::kPieceStepM);
      a[4 * p + 0] = v.x;
      a[4 * p + 1] = v.y;
      a[4 * p + 2] = v.z;
      a[4 * p + 3] = v.w;
    }
#pragma unroll
    for (int p = 0; p < Cfg::kPiecesN; ++p) {
      const float4 v = *reinterpret_cast<const float4*>(Bs + k * Cfg::kLdB + n + p * Cfg::kPieceStepN);
      b[4 * p + 0] = v.x;
      b[4 * p + 1] = v.y;
      b[4 * p + 2] = v.z;
      b[4 * p + 3] = v.w;
    }
#pragma unroll
    for (int i = 0; i < Cfg::TM; ++i)
#pragma unroll
      for (int j = 0; j < Cfg::TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
}

// Writes the thread tile whose first element is C(m, n): register row i is C row
// m + (i / 4) * kPieceStepM + i % 4, columns likewise; float4 stores where the row is aligned (vec) and all
// four columns exist, scalar stores at the ragged edges.
template <class Cfg>
__device__ __forceinline__ void store_tile(const float (&acc)[Cfg::TM][Cfg::TN], float* C, int64_t ldc, int M, int N,
                                           int m, int n, bool vec) {
#pragma unroll
  for (int i = 0; i < Cfg::TM; ++i) {
    const int row = m + (i / 4) * Cfg::kPieceStepM + i % 4;
    if (row >= M) continue;
#pragma unroll
    for (int p = 0; p < Cfg::kPiecesN; ++p) {
      const int col = n + p * Cfg::kPieceStepN;
      float* out = C + static_cast<int64_t>(row) * ldc + col;
      const float* v = &acc[i][4 * p];
      if (vec && col + 3 < N) {
        *reinterpret_cast<float4*>(out) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (col + j < N) out[j] = v[j];
      }
    }
  }
}

// One block per BM x BN output tile (blockIdx.z: batch entry). Single buffer (v4's loop):
//     load t -> regs -> smem | sync | FMAs t | sync | load t+1 ...
// Double buffer (v5's loop, one barrier per slice: the buffer written in iteration s was last read in
// iteration s-1, which every thread has left at the barrier ending it):
//     load 0 -> buf 0 | sync | [load s+1 -> regs] FMAs s on buf s%2 [regs -> buf (s+1)%2] | sync | ...
template <class Cfg, bool TA, bool TB>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks) sgemm_tuned_kernel(GemmBatch g) {
  extern __shared__ __align__(16) float smem[];
  float* As = smem;                                // As[stage][k][m] = op(A)(m0 + m, k0 + k)
  float* Bs = smem + Cfg::kStages * Cfg::kSliceA;  // Bs[stage][k][n] = op(B)(k0 + k, n0 + n)
  const int M = static_cast<int>(g.M), N = static_cast<int>(g.N), K = static_cast<int>(g.K);
  const int m0 = static_cast<int>(blockIdx.y) * Cfg::BM, n0 = static_cast<int>(blockIdx.x) * Cfg::BN;
  const int64_t r = blockIdx.z;  // batch entry
  const cuda::Operand a = cuda::make_operand(g.A, g.lda, g.stride_a, r, M, K, g.vec_a);
  const cuda::Operand b = cuda::make_operand(g.B, g.ldb, g.stride_b, r, N, K, g.vec_b);
  cuda::StagedTile<Cfg::BM, Cfg::BK, Cfg::kThreads, Cfg::kLdA, !TA> a_tile;
  cuda::StagedTile<Cfg::BN, Cfg::BK, Cfg::kThreads, Cfg::kLdB, TB> b_tile;
  // This thread's first output row and column inside the block tile.
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int tm = (warp / Cfg::kWarpsN) * Cfg::WM + (lane / Cfg::kLanesN) * 4;
  const int tn = (warp % Cfg::kWarpsN) * Cfg::WN + (lane % Cfg::kLanesN) * 4;
  const int slices = (K + Cfg::BK - 1) / Cfg::BK;

  float acc[Cfg::TM][Cfg::TN];
  cuda::zero(acc);
  if constexpr (Cfg::kDoubleBuffer) {
    if (slices > 0) {
      a_tile.load(a, m0, 0);
      b_tile.load(b, n0, 0);
      a_tile.store(As);
      b_tile.store(Bs);
      __syncthreads();
    }
    for (int s = 0; s < slices; ++s) {
      const int cur = s & 1;
      const bool more = s + 1 < slices;
      if (more) {  // in flight during the FMAs below
        a_tile.load(a, m0, (s + 1) * Cfg::BK);
        b_tile.load(b, n0, (s + 1) * Cfg::BK);
      }
      fma_slice<Cfg>(As + cur * Cfg::kSliceA, Bs + cur * Cfg::kSliceB, tm, tn, acc);
      if (more) {
        a_tile.store(As + (cur ^ 1) * Cfg::kSliceA);
        b_tile.store(Bs + (cur ^ 1) * Cfg::kSliceB);
      }
      __syncthreads();
    }
  } else {
    for (int s = 0; s < slices; ++s) {
      a_tile.load(a, m0, s * Cfg::BK);
      b_tile.load(b, n0, s * Cfg::BK);
      a_tile.store(As);
      b_tile.store(Bs);
      __syncthreads();
      fma_slice<Cfg>(As, Bs, tm, tn, acc);
      __syncthreads();
    }
  }
  store_tile<Cfg>(acc, g.C + r * g.stride_c, g.ldc, M, N, m0 + tm, n0 + tn, g.vec_c);
}

// Launches configuration Cfg for the call's transpose flags; declines what the ladder's grid cannot cover.
template <class Cfg>
bool run_config(const GemmBatch& g, int device) {
  if (!cuda::ladder_fits(g, Cfg::BM)) return false;
  cuda::launch_for_flags(g.trans_a, g.trans_b, [&](auto ta, auto tb) {
    auto* kernel = sgemm_tuned_kernel<Cfg, decltype(ta)::value, decltype(tb)::value>;
    cuda::allow_dynamic_smem(kernel, Cfg::kSmemBytes);
    MINIDL_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                           cudaSharedmemCarveoutMaxShared));
    kernel<<<cuda::tile_grid<Cfg>(g), Cfg::kThreads, Cfg::kSmemBytes, cuda::stream(device)>>>(g);
  });
  MINIDL_LAUNCH_CHECK();
  return true;
}

// The configurations, in the order of the header comment (the index MINIDL_V8_CONFIG may give).
struct Config {
  const char* name;
  bool (*run)(const GemmBatch&, int device);
};
//                        BM   BN  BK  WM  WN TM  TN blocks double buffer
using C0 = TileConfig<128, 128, 16, 64, 32, 8, 8, 2, false>;
using C1 = TileConfig<128, 128, 8, 64, 32, 8, 8, 2, true>;
using C2 = TileConfig<128, 128, 16, 64, 32, 8, 8, 1, true>;
using C3 = TileConfig<128, 128, 8, 32, 64, 8, 8, 2, true>;
using C4 = TileConfig<128, 128, 16, 64, 64, 8, 16, 2, true>;
using C5 = TileConfig<128, 128, 8, 64, 64, 8, 16, 2, true>;
using C6 = TileConfig<128, 256, 8, 64, 64, 8, 16, 1, true>;
using C7 = TileConfig<128, 256, 16, 64, 64, 8, 16, 1, true>;
using C8 = TileConfig<256, 128, 8, 64, 64, 8, 16, 1, true>;
const Config kConfigs[] = {
    {"128x128x16_8x8_w64x32_256t_2b", run_config<C0>},    {"128x128x8_8x8_w64x32_256t_2b_db", run_config<C1>},
    {"128x128x16_8x8_w64x32_256t_1b_db", run_config<C2>}, {"128x128x8_8x8_w32x64_256t_2b_db", run_config<C3>},
    {"128x128x16_8x16_w64x64_128t_2b_db", run_config<C4>}, {"128x128x8_8x16_w64x64_128t_2b_db", run_config<C5>},
    {"128x256x8_8x16_w64x64_256t_1b_db", run_config<C6>},  {"128x256x16_8x16_w64x64_256t_1b_db", run_config<C7>},
    {"256x128x8_8x16_w64x64_256t_1b_db", run_config<C8>},
};
constexpr int kConfigCount = static_cast<int>(sizeof(kConfigs) / sizeof(kConfigs[0]));
constexpr int kDefaultConfig = 6;  // the fastest measured (docs/gemm-ladder.md)

// The configuration MINIDL_V8_CONFIG names (read at every call, so a program or test may change it): unset
// or empty, the default; otherwise an index or a name. Anything else throws, listing the valid values.
const Config& selected_config() {
  const std::string value = settings::v8_config.read();  // core/settings.h
  if (value.empty()) return kConfigs[kDefaultConfig];
  for (int i = 0; i < kConfigCount; ++i)
    if (value == kConfigs[i].name || value == std::to_string(i)) return kConfigs[i];
  std::string valid;
  for (int i = 0; i < kConfigCount; ++i)
    valid += str_cat("\n  ", i, "  ", kConfigs[i].name, i == kDefaultConfig ? "  (the default, when unset)" : "");
  throw Error(str_cat("matmul v8_tuned: MINIDL_V8_CONFIG=\"", value,
                      "\" is not a configuration; give an index or a name:", valid));
}

// The MatmulKernel: the configuration is looked up first, so a wrong MINIDL_V8_CONFIG fails on any call.
bool matmul_v8_tuned(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  const Config& config = selected_config();
  if (out.dtype() != DType::float32) return false;
  const int device = out.device().index;
  cuda::set_device(device);
  if (out.numel() == 0) return true;
  return config.run(cuda::matmul_gemm_batch(a, b, out, trans_a, trans_b), device);
}

}  // namespace

void register_matmul_v8_tuned_cuda() {
  register_kernel(keys::matmul, DeviceType::cuda, "v8_tuned", Priority::tuned + 8,
                  "v4 as a template over its tile: 8x16 per thread, 255-register budgets, "
                  "smem double buffering; MINIDL_V8_CONFIG picks the tile (f32)",
                  matmul_v8_tuned);
}

}  // namespace minidl
