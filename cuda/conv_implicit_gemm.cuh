// cuda/conv_implicit_gemm.cuh — what the two implicit-GEMM convolution files share: the three conv2d
// stages written as GEMMs whose operand tiles are gathered straight from the NCHW tensors (the "tile
// loaders"), the output mapping, the split-K sum of the weight gradient and the host-side checks.
// cuda/conv_implicit_gemm.cu multiplies the tiles with FP32 FFMA, cuda/conv_implicit_gemm_tf32.cu with
// TF32 tensor cores (mma.sync); the gathers are the same code, and so is the host side
// (cuda/conv_implicit_gemm_launch.cuh).
//
// The stages as C[M, N] = sum_k A[M, K] B[K, N], with x [Nb, C, H, W], w [O, C, KH, KW], y [Nb, O, OH, OW]
// (ops/kernel_signatures.h), k = (c,i,j) meaning k = (c*KH + i)*KW + j, and likewise for the others:
//
//   forward          M = O   N = Nb*OH*OW  K = C*KH*KW   A(o, (c,i,j))   = w[o, c, i, j]
//                                                        B((c,i,j), (b,p,q)) = x[b, c, p*sh-ph+i, q*sw-pw+j]
//                                                        C(o, (b,p,q))   -> y[b, o, p, q]
//   backward_input   M = C   N = Nb*H*W    K = O*KH*KW   A(c, (o,i,j))   = w[o, c, i, j]  (from a copy laid out [C, O, KH, KW])
//                                                        B((o,i,j), (b,h,w)) = grad_y[b, o, p, q] where p*sh = h+ph-i and
//                                                                              q*sw = w+pw-j (0 unless both divide and are in range)
//                                                        C(c, (b,h,w))   -> grad_x[b, c, h, w]
//   backward_weight  M = O   N = C*KH*KW   K = Nb*OH*OW  A(o, (b,p,q))   = grad_y[b, o, p, q]
//                                                        B((b,p,q), (c,i,j)) = x[b, c, p*sh-ph+i, q*sw-pw+j]
//                                                        C(o, (c,i,j))   -> grad_w[o, c, i, j]
// (B entries outside x, or with no output pixel p, q, are 0: that is the padding and the stride.)
//
// im2col_gemm (cuda/conv_im2col.cu) writes B to memory (the columns buffer: K*N floats, 9x the input for a
// 3x3 kernel) and reads it back in the GEMM; backward_input also writes dcols and gathers it (col2im).
// Here a block gathers the BK x BN tile of B it needs straight into shared memory, so B never exists in
// memory as a whole: for MNIST conv2 that saves writing and reading 42 MB per stage, and two kernels.
//
// How one block gathers its B tile (forward; backward_input is the same with grad_y and the flipped taps):
//
//              n0 ...... n0+31  n0+32 ..... n0+63   ...           columns n = (b, p, q): output pixels
//   k0 + 0   [ warp 0 lane 0..31 | warp 0 lane 0..31 | ... ]       one k = (c, i, j) per warp and row:
//   k0 + 1   [ warp 1 ...        |                   |     ]       lanes read 32 neighbouring pixels of
//    ...                                                           one input plane, shifted by (i, j):
//   k0 + BK-1                                                      consecutive addresses for stride 1
// A thread keeps, for each of its columns, where its pixel's window starts (computed once per block), and
// for each of its rows, the digits (c, i, j) of k, advanced by BK per tile with adds and carries (no
// division in the loop). The weight gradient's K runs over pixels instead: there groups of BK threads
// read BK consecutive pixels, of grad_y (A) and of x (B).
//
// Index arithmetic is 32-bit: the host declines (returns false, the next kernel runs) any call with a
// tensor over kMaxElements elements or a size over kMaxExtent, and anything not float32, contiguous and
// on the GPU. Everything else is handled: any stride, padding, kernel size, channel and batch count.
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "cuda/cuda_common.h"
#include "ops/kernel_signatures.h"

namespace minidl {
namespace cuda {
namespace implicit_gemm {

// Limits that keep every index of a call within int32 with room to spare (offsets reach ~2x a tensor).
constexpr int64_t kMaxElements = int64_t{1} << 30;
constexpr int64_t kMaxExtent = int64_t{1} << 20;  // any one size (but the batch), stride or padding
// A window origin that fails every bounds check: marks the columns past the end of N.
constexpr int kOutside = -(1 << 29);
// The weight gradient's split-K: each split reduces at least this many k (output pixels).
constexpr int kMinKPerSplit = 256;
// ... and the partial sums of all splits stay below this many floats (256 MiB).
constexpr int64_t kMaxPartialFloats = int64_t{1} << 26;

// The sizes of one convolution, in the kernels' 32-bit index type.
struct ConvShape {
  int Nb, C, H, W, O, KH, KW, OH, OW;
  int sh, sw, ph, pw;
  int HW, CHW, OHW, KHKW;
};

// One stage as a GEMM (see the table above). The kernels take it by value.
struct GemmParams {
  ConvShape s;
  const float* a = nullptr;  // A's source: w (forward), w laid out [C, O, KH, KW] (backward_input), grad_y (weight)
  const float* b = nullptr;  // B's source: x (forward), grad_y (backward_input), x (backward_weight)
  float* out = nullptr;      // y, grad_x, or grad_w (or the split partial sums of grad_w)
  int M = 0, N = 0, K = 0;
  int k_per_split = 0;  // the K range of one blockIdx.z: K itself unless the weight gradient is split
  // Output mapping: C(m, n) -> out[(n / plane) * M * plane + m * plane + n % plane] (+ z * M * N for split z),
  // plane = OH*OW (forward), H*W (backward_input), N (weight gradient: out is [M, N] row-major).
  int plane = 1;
  int out_vec = 1;  // the widest vector store allowed (4, 2 or 1 floats): plane and out aligned to it
};

// ---------------------------------------------------------------- host side: checks and set-up

inline bool float32_contiguous_cuda(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (t->dtype() != DType::float32 || !t->is_contiguous() || !t->device().is_cuda()) return false;
  return true;
}

// The sizes of a call, or false (decline) when one is beyond the kernels' 32-bit limits. x_like is x or
// grad_x, w_like is w or grad_w, y_like is y or grad_y.
inline bool conv_shape(const Tensor& x_like, const Tensor& w_like, const Tensor& y_like, const Conv2dParams& p,
                       ConvShape& s) {
  for (const Tensor* t : {&x_like, &w_like, &y_like})
    if (t->dim() != 4 || t->numel() > kMaxElements) return false;
  const int64_t sizes[] = {x_like.size(1), x_like.size(2), x_like.size(3), w_like.size(0), w_like.size(2),
                           w_like.size(3), y_like.size(2),  y_like.size(3), p.stride_h,     p.stride_w,
                           p.pad_h,        p.pad_w};
  for (int64_t v : sizes)
    if (v < 0 || v > kMaxExtent) return false;
  if (p.stride_h < 1 || p.stride_w < 1 || x_like.size(0) > kMaxElements) return false;
  s.Nb = static_cast<int>(x_like.size(0));
  s.C = static_cast<int>(x_like.size(1));
  s.H = static_cast<int>(x_like.size(2));
  s.W = static_cast<int>(x_like.size(3));
  s.O = static_cast<int>(w_like.size(0));
  s.KH = static_cast<int>(w_like.size(2));
  s.KW = static_cast<int>(w_like.size(3));
  s.OH = static_cast<int>(y_like.size(2));
  s.OW = static_cast<int>(y_like.size(3));
  s.sh = p.stride_h;
  s.sw = p.stride_w;
  s.ph = p.pad_h;
  s.pw = p.pad_w;
  // Products that the kernels form: each bounded by a tensor's element count, checked here in 64 bits.
  const int64_t hw = int64_t{s.H} * s.W, ohw = int64_t{s.OH} * s.OW, khkw = int64_t{s.KH} * s.KW;
  const int64_t products[] = {hw, s.C * hw, ohw, s.O * ohw, khkw, s.C * khkw, s.O * khkw, s.Nb * ohw, s.Nb * hw};
  for (int64_t v : products)
    if (v > kMaxElements) return false;
  s.HW = static_cast<int>(hw);
  s.CHW = static_cast<int>(s.C * hw);
  s.OHW = static_cast<int>(ohw);
  s.KHKW = static_cast<int>(khkw);
  return true;
}

// The widest vector store (4, 2 or 1 floats) for rows of `plane` floats starting at out.
inline int vector_width(const float* out, int plane) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(out);
  if (plane % 4 == 0 && at % 16 == 0) return 4;
  if (plane % 2 == 0 && at % 8 == 0) return 2;
  return 1;
}

inline GemmParams forward_gemm(const ConvShape& s, const float* x, const float* w, float* y) {
  GemmParams g;
  g.s = s;
  g.a = w;
  g.b = x;
  g.out = y;
  g.M = s.O;
  g.N = s.Nb * s.OHW;
  g.K = s.C * s.KHKW;
  g.k_per_split = g.K;
  g.plane = s.OHW;
  g.out_vec = vector_width(y, g.plane);
  return g;
}

// w_by_c is w laid out [C, O, KH, KW] (relayout_weight_by_channel).
inline GemmParams backward_input_gemm(const ConvShape& s, const float* grad_y, const float* w_by_c, float* grad_x) {
  GemmParams g;
  g.s = s;
  g.a = w_by_c;
  g.b = grad_y;
  g.out = grad_x;
  g.M = s.C;
  g.N = s.Nb * s.HW;
  g.K = s.O * s.KHKW;
  g.k_per_split = g.K;
  g.plane = s.HW;
  g.out_vec = vector_width(grad_x, g.plane);
  return g;
}

// out is grad_w, or the partial sums [splits, O, C*KH*KW] when the K range is split (set_splits).
inline GemmParams backward_weight_gemm(const ConvShape& s, const float* x, const float* grad_y, float* out) {
  GemmParams g;
  g.s = s;
  g.a = grad_y;
  g.b = x;
  g.out = out;
  g.M = s.O;
  g.N = s.C * s.KHKW;
  g.K = s.Nb * s.OHW;
  g.k_per_split = g.K;
  g.plane = g.N;
  g.out_vec = vector_width(out, g.plane);
  return g;
}

// The number of K splits for the weight gradient: enough blocks for about `threads_per_sm` threads on
// every multiprocessor (its M x N output alone is often a handful of tiles), each split at least
// kMinKPerSplit long. Sets g.k_per_split (a multiple of bk) and returns the number of splits.
inline int set_splits(GemmParams& g, int64_t tiles, int bk, int threads, int sms) {
  constexpr int64_t threads_per_sm = 1024;  // half of what a Hopper multiprocessor holds
  const int64_t want_blocks = std::max<int64_t>(1, sms * threads_per_sm / threads);
  int64_t splits = (want_blocks + tiles - 1) / tiles;
  splits = std::min<int64_t>(splits, std::max<int64_t>(1, g.K / kMinKPerSplit));
  splits = std::min<int64_t>(splits, std::max<int64_t>(1, kMaxPartialFloats / (int64_t{g.M} * g.N)));
  splits = std::max<int64_t>(1, std::min<int64_t>(splits, 65535));
  int64_t per = (g.K + splits - 1) / splits;
  per = std::max<int64_t>(bk, (per + bk - 1) / bk * bk);
  g.k_per_split = static_cast<int>(per);
  return static_cast<int>(std::max<int64_t>(1, (g.K + per - 1) / per));  // no empty split
}

// BM for forward and backward_input (BN = 128 there: N is a pixel count): the largest of 128, 64, 32 whose
// padding wastes at most 1/8 of the rows of M (32 when none does), halved while the grid would leave
// some of the `sms` multiprocessors without a block.
inline int pixel_stage_rows(const GemmParams& g, int sms) {
  int bm = 32;
  for (int cand : {128, 64, 32}) {
    if (int64_t{(g.M + cand - 1) / cand} * cand * 8 <= int64_t{g.M} * 9) {
      bm = cand;
      break;
    }
  }
  const int64_t column_tiles = (g.N + 127) / 128;
  while (bm > 32 && (g.M + bm - 1) / bm * column_tiles < sms) bm /= 2;
  return bm;
}

// backward_weight's tile for its O x C*KH*KW output, as an index into `tiles` (BM, BN), listed largest
// first: the first whose padding wastes at most 1/8 of the output, else the one with the least padded
// area (the earlier on a tie). The split over K then supplies the parallelism.
inline int weight_tile(const GemmParams& g, std::initializer_list<std::pair<int, int>> tiles) {
  const int64_t area = int64_t{g.M} * g.N;
  int best = 0, index = 0;
  int64_t best_padded = INT64_MAX;
  for (const std::pair<int, int>& t : tiles) {
    const int64_t padded = int64_t{(g.M + t.first - 1) / t.first} * t.first * ((g.N + t.second - 1) / t.second) * t.second;
    if (padded * 8 <= area * 9) return index;
    if (padded < best_padded) {
      best_padded = padded;
      best = index;
    }
    ++index;
  }
  return best;
}

// ---------------------------------------------------------------- small kernels around the GEMMs

// w_by_c[c, o, i, j] = w[o, c, i, j]: backward_input's A is then a plain row-major [C, O*KH*KW] matrix.
static __global__ void relayout_weight_by_channel_kernel(const float* __restrict__ w, float* __restrict__ w_by_c,
                                                         int O, int C, int KHKW) {
  const int total = O * C * KHKW;
  for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < total; e += gridDim.x * blockDim.x) {
    const int r = e % KHKW, oc = e / KHKW;  // e indexes w: oc = o * C + c
    const int c = oc % C, o = oc / C;
    w_by_c[(c * O + o) * KHKW + r] = w[e];
  }
}

// out[e] = sum over z of partial[z * n + e], added in an order fixed by the call's sizes alone, so the
// split weight gradient is reproducible bit for bit (no atomics): a block takes 32 outputs; its
// blockDim.y "lanes" each add the z = lane, lane + lanes, lane + 2 lanes, ... in turn, then lane 0 adds
// the lanes' sums in lane order. (With one thread per output, a small output with thousands of splits,
// the captcha's first layer, would be one long chain of loads per thread.)
static __global__ void sum_splits_kernel(const float* __restrict__ partial, float* __restrict__ out, int n,
                                         int splits) {
  __shared__ float lane_sums[32][33];
  const int e = static_cast<int>(blockIdx.x) * 32 + static_cast<int>(threadIdx.x);
  const int lane = static_cast<int>(threadIdx.y), lanes = static_cast<int>(blockDim.y);
  float acc = 0.0f;
  if (e < n)
#pragma unroll 4  // four loads in flight (the adds keep their order)
    for (int z = lane; z < splits; z += lanes) acc += partial[static_cast<int64_t>(z) * n + e];
  lane_sums[lane][threadIdx.x] = acc;
  __syncthreads();
  if (lane == 0 && e < n) {
    float total = lane_sums[0][threadIdx.x];
    for (int l = 1; l < lanes; ++l) total += lane_sums[l][threadIdx.x];
    out[e] = total;
  }
}

inline void relayout_weight_by_channel(const float* w, float* w_by_c, const ConvShape& s, cudaStream_t stream) {
  const int total = s.O * s.C * s.KHKW;
  if (total == 0) return;
  relayout_weight_by_channel_kernel<<<grid_for(total, 256), 256, 0, stream>>>(w, w_by_c, s.O, s.C, s.KHKW);
  MINIDL_LAUNCH_CHECK();
}

// Lanes per output: about 16 splits each, at most 32 (a power of two; the order depends on it, and it
// depends only on `splits`).
inline void sum_splits(const float* partial, float* out, int n, int splits, cudaStream_t stream) {
  if (n == 0) return;
  int lanes = 1;
  while (lanes < 32 && lanes * 16 < splits) lanes *= 2;
  const dim3 block(32, static_cast<unsigned>(lanes));
  sum_splits_kernel<<<static_cast<unsigned>((n + 31) / 32), block, 0, stream>>>(partial, out, n, splits);
  MINIDL_LAUNCH_CHECK();
}

// ---------------------------------------------------------------- device side: the gathers

// A tile configuration shared by the loaders: a BM x BN block tile, K in slices of BK, THREADS threads,
// shared rows padded by PAD floats (the padding that keeps the kernel's own shared reads conflict-free).
template <int BM_, int BN_, int BK_, int THREADS_, int PAD_>
struct TileConfig {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, kThreads = THREADS_;
  static constexpr int kLdA = BM + PAD_;  // As[k][m], BK rows
  static constexpr int kLdB = BN + PAD_;  // Bs[k][n], BK rows
};

// An operand as stored in shared memory: as is (FP32), or rounded to TF32 (10 mantissa bits, to
// nearest, ties away from zero) for the tensor cores, once per element rather than per fragment load.
template <bool kTf32>
__device__ __forceinline__ float to_operand(float v) {
  if constexpr (kTf32) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return __uint_as_float(r);
  } else {
    return v;
  }
}

// A number k in mixed radix (hi, mid, lo): k = (hi * MID + mid) * LO + lo with 0 <= mid < MID and
// 0 <= lo < LO: (c, i, j) for a filter tap (MID = KH, LO = KW), (b, p, q) for an output pixel.
struct Digits {
  int hi, mid, lo;
};

__host__ __device__ inline Digits split_digits(int k, int mid_radix, int lo_radix) {
  const int t = k / lo_radix;
  return {t / mid_radix, t % mid_radix, k % lo_radix};
}

// d += step (step also split into digits, so step.mid < MID and step.lo < LO): one add per digit and at
// most one carry each (mid + step.mid + 1 <= 2 MID - 1), no division.
__device__ __forceinline__ void advance_digits(Digits& d, const Digits& step, int mid_radix, int lo_radix) {
  d.lo += step.lo;
  int carry = d.lo >= lo_radix;
  if (carry) d.lo -= lo_radix;
  d.mid += step.mid + carry;
  carry = d.mid >= mid_radix;
  if (carry) d.mid -= mid_radix;
  d.hi += step.hi + carry;
}

// Every loader below moves one K slice of a block's operand tiles in three steps, so that the kernels
// can overlap the global loads of slice t+1 with the arithmetic on slice t:
//   load()     global memory -> registers (the slice at the current k), zeros outside the matrices;
//   store(..)  registers -> shared memory (As[k][m] with row length kLdA, Bs[k][n] with kLdB);
//   advance()  move on to the next slice (k += BK).

// A tile BM x BK of a row-major matrix src [rows, ld] (A of forward and backward_input: ld = K). Thread t
// reads column kk = t % BK of rows t / BK + r * (THREADS / BK): each group of BK threads reads BK
// consecutive floats of one row. Columns at or past k_end read as 0.
template <class Cfg, bool kTf32>
struct RowMajorTileLoader {
  static constexpr int kRowsPerPass = Cfg::kThreads / Cfg::BK;
  static constexpr int kPasses = Cfg::BM / kRowsPerPass;
  static_assert(Cfg::kThreads % Cfg::BK == 0 && Cfg::BM % kRowsPerPass == 0, "A tile must split evenly");

  const float* src;
  int rows, ld, m_first, k, k_end, kk, row0;
  float v[kPasses];

  __device__ RowMajorTileLoader(const float* src_, int rows_, int ld_, int m0, int k_begin, int k_end_)
      : src(src_), rows(rows_), ld(ld_), m_first(m0), k_end(k_end_) {
    const int t = static_cast<int>(threadIdx.x);
    kk = t % Cfg::BK;
    row0 = t / Cfg::BK;
    k = k_begin + kk;
  }
  __device__ __forceinline__ void load() {
    const bool k_ok = k < k_end;
#pragma unroll
    for (int r = 0; r < kPasses; ++r) {
      const int m = m_first + row0 + r * kRowsPerPass;
      v[r] = (k_ok && m < rows) ? __ldg(src + m * ld + k) : 0.0f;
    }
  }
  __device__ __forceinline__ void store(float* As) const {
#pragma unroll
    for (int r = 0; r < kPasses; ++r) As[kk * Cfg::kLdA + row0 + r * kRowsPerPass] = to_operand<kTf32>(v[r]);
  }
  __device__ __forceinline__ void advance() { k += Cfg::BK; }
};

// The B tile BK x BN of forward and backward_input: columns are pixels (output pixels (b, p, q) for
// forward, input pixels (b, h, w) for backward_input), rows are filter taps k = (c or o, i, j). Lane l of
// warp v loads columns n0 + l + 32 e (e < BN / 32) of rows k0 + v + WARPS r (r < BK / WARPS). The
// stage-specific part, Gather, says where a column's window starts and which element a (column, tap)
// pair reads:
//   Gather::column(s, n, N, col)           fills col (ColumnStart) for column n (n >= N: a column that reads 0)
//   Gather::read(s, src, col, tap, k_ok)   the element B(k, n), 0 outside the tensor or when !k_ok
template <class Cfg, bool kTf32, class Gather>
struct PixelColumnsLoader {
  static constexpr int kWarps = Cfg::kThreads / 32;
  static constexpr int kCols = Cfg::BN / 32;
  static constexpr int kRows = Cfg::BK / kWarps;
  static_assert(Cfg::kThreads % 32 == 0 && Cfg::BN % 32 == 0 && Cfg::BK % kWarps == 0, "B tile must split evenly");

  const float* src;
  ConvShape s;
  int lane, warp, channels;
  typename Gather::ColumnStart col[kCols];
  Digits tap[kRows];  // k = (c or o, i, j) of each row this thread loads
  Digits step;        // BK in the same digits
  float v[kRows][kCols];

  // These stages are never split over K: K = channels * KH * KW, so k < K exactly when tap.hi < channels
  // (one register per row less than keeping k).
  __device__ PixelColumnsLoader(const float* src_, const ConvShape& s_, int N, int n0, int channels_)
      : src(src_), s(s_), channels(channels_) {
    const int t = static_cast<int>(threadIdx.x);
    lane = t % 32;
    warp = t / 32;
#pragma unroll
    for (int e = 0; e < kCols; ++e) Gather::column(s, n0 + lane + 32 * e, N, col[e]);
    step = split_digits(Cfg::BK, s.KH, s.KW);
#pragma unroll
    for (int r = 0; r < kRows; ++r) tap[r] = split_digits(warp + kWarps * r, s.KH, s.KW);
  }
  __device__ __forceinline__ void load() {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const bool k_ok = tap[r].hi < channels;
#pragma unroll
      for (int e = 0; e < kCols; ++e) v[r][e] = Gather::read(s, src, col[e], tap[r], k_ok);
    }
  }
  __device__ __forceinline__ void store(float* Bs) const {
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int e = 0; e < kCols; ++e) Bs[(warp + kWarps * r) * Cfg::kLdB + lane + 32 * e] = to_operand<kTf32>(v[r][e]);
  }
  __device__ __forceinline__ void advance() {
#pragma unroll
    for (int r = 0; r < kRows; ++r) advance_digits(tap[r], step, s.KH, s.KW);
  }
};

// forward's B: B((c,i,j), (b,p,q)) = x[b, c, p*sh - ph + i, q*sw - pw + j].
struct ForwardGather {
  struct ColumnStart {
    int base;    // offset of x[b, 0, h0, w0] (may be outside x; only in-bounds sums are read)
    int h0, w0;  // the window's top-left corner: p*sh - ph, q*sw - pw (kOutside past the end of N)
  };
  __device__ __forceinline__ static void column(const ConvShape& s, int n, int N, ColumnStart& c) {
    if (n >= N) {
      c = {0, kOutside, kOutside};
      return;
    }
    const int b = n / s.OHW, pq = n - b * s.OHW;
    const int p = pq / s.OW, q = pq - p * s.OW;
    c.h0 = p * s.sh - s.ph;
    c.w0 = q * s.sw - s.pw;
    c.base = b * s.CHW + c.h0 * s.W + c.w0;
  }
  __device__ __forceinline__ static float read(const ConvShape& s, const float* __restrict__ x, const ColumnStart& c,
                                               const Digits& tap, bool k_ok) {
    const int h = c.h0 + tap.mid, w = c.w0 + tap.lo;
    const bool ok = k_ok && static_cast<unsigned>(h) < static_cast<unsigned>(s.H) &&
                    static_cast<unsigned>(w) < static_cast<unsigned>(s.W);
    return ok ? __ldg(x + c.base + tap.hi * s.HW + tap.mid * s.W + tap.lo) : 0.0f;
  }
};

// backward_input's B: B((o,i,j), (b,h,w)) = grad_y[b, o, p, q] with p = (h + ph - i) / sh and
// q = (w + pw - j) / sw when both divide exactly and land inside grad_y, else 0. kUnitStride (sh = sw = 1)
// skips the divisions; strided calls gather as many zeros as real terms (correct, not fast).
template <bool kUnitStride>
struct BackwardInputGather {
  struct ColumnStart {
    int base;    // offset of grad_y[b, 0, 0, 0]
    int hp, wp;  // h + ph, w + pw (kOutside past the end of N)
  };
  __device__ __forceinline__ static void column(const ConvShape& s, int n, int N, ColumnStart& c) {
    if (n >= N) {
      c = {0, kOutside, kOutside};
      return;
    }
    const int b = n / s.HW, hw = n - b * s.HW;
    const int h = hw / s.W, w = hw - h * s.W;
    c.base = b * s.O * s.OHW;
    c.hp = h + s.ph;
    c.wp = w + s.pw;
  }
  __device__ __forceinline__ static float read(const ConvShape& s, const float* __restrict__ gy, const ColumnStart& c,
                                               const Digits& tap, bool k_ok) {
    int p = c.hp - tap.mid, q = c.wp - tap.lo;  // p*sh and q*sw, if a pixel of y reads (h, w) through tap (i, j)
    bool ok = k_ok && p >= 0 && q >= 0;
    if (!kUnitStride) {
      ok = ok && p % s.sh == 0 && q % s.sw == 0;
      p /= s.sh;
      q /= s.sw;
    }
    ok = ok && p < s.OH && q < s.OW;
    return ok ? __ldg(gy + c.base + tap.hi * s.OHW + p * s.OW + q) : 0.0f;
  }
};

// backward_weight's A and B, loaded together because they share k = (b, p, q), an output pixel:
//   A(o, (b,p,q)) = grad_y[b, o, p, q]        B((b,p,q), (c,i,j)) = x[b, c, p*sh - ph + i, q*sw - pw + j]
// Thread t takes k = k0 + t % BK in both tiles (so BK threads read BK consecutive pixels of grad_y and,
// for stride 1, of x), A rows t / BK + r * (THREADS / BK) and B columns likewise.
template <class Cfg, bool kTf32>
struct WeightGradLoader {
  static constexpr int kGroups = Cfg::kThreads / Cfg::BK;
  static constexpr int kARows = Cfg::BM / kGroups;
  static constexpr int kBCols = Cfg::BN / kGroups;
  static_assert(Cfg::kThreads % Cfg::BK == 0 && Cfg::BM % kGroups == 0 && Cfg::BN % kGroups == 0,
                "tiles must split evenly");

  const float* gy;
  const float* x;
  ConvShape s;
  int M, m_first, kk, g0, k, k_end;
  Digits pix;  // k = (b, p, q)
  Digits step;
  int col_off[kBCols];      // c*H*W + i*W + j of each B column (c, i, j)
  int col_i[kBCols];        // i (kOutside past the end of N), j
  int col_j[kBCols];
  float va[kARows], vb[kBCols];

  __device__ WeightGradLoader(const GemmParams& p, int m0, int n0, int k_begin, int k_end_)
      : gy(p.a), x(p.b), s(p.s), M(p.M), m_first(m0), k_end(k_end_) {
    const int t = static_cast<int>(threadIdx.x);
    kk = t % Cfg::BK;
    g0 = t / Cfg::BK;
    k = k_begin + kk;
    pix = split_digits(k, s.OH, s.OW);
    step = split_digits(Cfg::BK, s.OH, s.OW);
#pragma unroll
    for (int e = 0; e < kBCols; ++e) {
      const int n = n0 + g0 + e * kGroups;
      if (n < p.N) {
        const int c = n / s.KHKW, ij = n - c * s.KHKW;
        const int i = ij / s.KW, j = ij - i * s.KW;
        col_off[e] = c * s.HW + i * s.W + j;
        col_i[e] = i;
        col_j[e] = j;
      } else {
        col_off[e] = 0;
        col_i[e] = kOutside;
        col_j[e] = 0;
      }
    }
  }
  __device__ __forceinline__ void load() {
    const bool k_ok = k < k_end;
    const int b = pix.hi, p = pix.mid, q = pix.lo;
    const int gy_base = b * s.O * s.OHW + p * s.OW + q;  // grad_y[b, 0, p, q]
#pragma unroll
    for (int r = 0; r < kARows; ++r) {
      const int m = m_first + g0 + r * kGroups;
      va[r] = (k_ok && m < M) ? __ldg(gy + gy_base + m * s.OHW) : 0.0f;
    }
    const int h0 = p * s.sh - s.ph, w0 = q * s.sw - s.pw;
    const int x_base = b * s.CHW + h0 * s.W + w0;  // x[b, 0, h0, w0], possibly outside x
#pragma unroll
    for (int e = 0; e < kBCols; ++e) {
      const int h = h0 + col_i[e], w = w0 + col_j[e];
      const bool ok = k_ok && static_cast<unsigned>(h) < static_cast<unsigned>(s.H) &&
                      static_cast<unsigned>(w) < static_cast<unsigned>(s.W);
      vb[e] = ok ? __ldg(x + x_base + col_off[e]) : 0.0f;
    }
  }
  __device__ __forceinline__ void store(float* As, float* Bs) const {
#pragma unroll
    for (int r = 0; r < kARows; ++r) As[kk * Cfg::kLdA + g0 + r * kGroups] = to_operand<kTf32>(va[r]);
#pragma unroll
    for (int e = 0; e < kBCols; ++e) Bs[kk * Cfg::kLdB + g0 + e * kGroups] = to_operand<kTf32>(vb[e]);
  }
  __device__ __forceinline__ void advance() {
    k += Cfg::BK;
    advance_digits(pix, step, s.OH, s.OW);
  }
};

// ---------------------------------------------------------------- the three stages, as the kernels see them
// Each: constructed per thread for the block at (m0, n0) and the K range [k_begin, k_end); load / store
// / advance as above.

template <class Cfg, bool kTf32>
struct ForwardStage {
  RowMajorTileLoader<Cfg, kTf32> a;
  PixelColumnsLoader<Cfg, kTf32, ForwardGather> b;
  // Never split: k_begin = 0 and k_end = K = C*KH*KW (the launchers pass splits = 1).
  __device__ ForwardStage(const GemmParams& p, int m0, int n0, int k_begin, int k_end)
      : a(p.a, p.M, p.K, m0, k_begin, k_end), b(p.b, p.s, p.N, n0, p.s.C) {}
  __device__ __forceinline__ void load() {
    a.load();
    b.load();
  }
  __device__ __forceinline__ void store(float* As, float* Bs) const {
    a.store(As);
    b.store(Bs);
  }
  __device__ __forceinline__ void advance() {
    a.advance();
    b.advance();
  }
};

template <class Cfg, bool kTf32, bool kUnitStride>
struct BackwardInputStage {
  RowMajorTileLoader<Cfg, kTf32> a;
  PixelColumnsLoader<Cfg, kTf32, BackwardInputGather<kUnitStride>> b;
  // Never split: k_begin = 0 and k_end = K = O*KH*KW.
  __device__ BackwardInputStage(const GemmParams& p, int m0, int n0, int k_begin, int k_end)
      : a(p.a, p.M, p.K, m0, k_begin, k_end), b(p.b, p.s, p.N, n0, p.s.O) {}
  __device__ __forceinline__ void load() {
    a.load();
    b.load();
  }
  __device__ __forceinline__ void store(float* As, float* Bs) const {
    a.store(As);
    b.store(Bs);
  }
  __device__ __forceinline__ void advance() {
    a.advance();
    b.advance();
  }
};

template <class Cfg, bool kTf32>
struct BackwardWeightStage {
  WeightGradLoader<Cfg, kTf32> ab;
  __device__ BackwardWeightStage(const GemmParams& p, int m0, int n0, int k_begin, int k_end)
      : ab(p, m0, n0, k_begin, k_end) {}
  __device__ __forceinline__ void load() { ab.load(); }
  __device__ __forceinline__ void store(float* As, float* Bs) const { ab.store(As, Bs); }
  __device__ __forceinline__ void advance() { ab.advance(); }
};

// The offset in out of C(0, n): out[column_offset(n) + m * plane] is C(m, n).
__device__ __forceinline__ int column_offset(const GemmParams& p, int n) {
  const int b = n / p.plane;
  return b * p.M * p.plane + (n - b * p.plane);
}

}  // namespace implicit_gemm
}  // namespace cuda
}  // namespace minidl
