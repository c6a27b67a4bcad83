// cuda/matmul_tf32_wgmma_v2.cu — matmul kernel "tf32_wgmma_v2", the second Hopper step of the GEMM
// ladder (docs/gemm-ladder.md): out[r] = op(a[r]) op(b[r]) with the products on TF32 tensor cores through
// wgmma, any M, N, K, all four transpose flags, float32 only, compute capability 9.0 only. Accumulation
// convention: out is overwritten (=).
//
// Built, declined and rounded as tf32_wgmma (cuda/matmul_tf32_wgmma.cu, whose header explains wgmma,
// the descriptors and the 128-byte swizzle): compiled for sm_90a alone in the minidl_sm90a object library
// (CMakeLists.txt; the #error below stops any other device pass); declines unless the GPU is compute
// capability 9.0 and MINIDL_TF32=1 or this kernel is selected by name (cuda/sgemm_common.cuh,
// tf32_kernel_allowed); inputs reach the tensor cores unrounded (truncated to TF32 by the hardware).
//
// What changes from tf32_wgmma, and why it should help:
//
// 1. The main loop sees only K-major operands with 16-byte aligned rows, so it issues only 16-byte
//    cp.async copies. wgmma takes TF32 operands K-major only (its transpose bits exist for 16-bit types),
//    so an operand stored MN-contiguous (B plain, A transposed) must be transposed somewhere; tf32_wgmma
//    did it with 4-byte copies, 4x the copy instructions and a 32-byte piece of memory per 8 lanes. Here a
//    pass before the kernel (pack_k_major_kernel) copies such an operand, and a K-contiguous one whose rows
//    are not 16-byte aligned, into K-major scratch rows of K rounded up to 4 floats: 32 x 32 tiles through
//    shared memory padded to 33 columns, read and written coalesced. The scratch is a Tensor from the
//    caching allocator, released when the host function returns: later work on the device's one stream
//    runs after these kernels, so the block is not reused early (cuda/allocator.h). Cost: one read and one
//    write of the operand; at 4096^3 NN, B's 64 MB each way, about 40 us. (Transposing inside the loop
//    instead, shared to shared, would add 64 KB of shared-memory traffic per slice to the 128 KB already
//    there, 48 KB of copies in and 80 KB of wgmma reads (see 3): at 128 bytes per clock, 500 more clocks
//    against the 1,024 clocks of tensor work per slice.)
//
// 2. One wgmma group stays in flight across K slices (wait_group 1, not 0), over 4 stages, so the tensor
//    cores always have the next slice queued while the warps wait for copies, pass the barrier and issue
//    the next copies. Iteration t (slice t in stage t % 4):
//
//      wait for this thread's copies of slice t; fence.proxy.async; barrier
//      wgmma slice t, commit                    tensor cores: slice t-1 (maybe), then slice t
//      cp.async slice t+2 into stage (t+2) % 4  copies in flight: slices t+1, t+2
//      wait_group 1                             slice t-1's wgmmas are complete, slice t's may run
//
//    Stage (t+2) % 4 = (t-2) % 4 last held slice t-2, whose wgmmas each warpgroup saw complete (wait_group
//    1 of iteration t-1) before it reached this iteration's barrier: no wgmma still reads the stage when
//    the copies refill it. The fence.proxy.async every thread executes before that barrier orders both
//    directions between the generic proxy (cp.async) and the async proxy (wgmma): this thread's landed
//    copies of slice t before the tensor cores read them, and the completed wgmma reads of slice t-2
//    before the copies that overwrite them.
//
// 3. Block tile 128 x 256 (tf32_wgmma: 128 x 128): 2 warpgroups, each 64 x 256 with
//    wgmma.m64n256k8 (128 fp32 accumulators per thread). Per k, a block copies (128 + 256) x 4 bytes for
//    32,768 products, 25% fewer bytes per product than 128 x 128 (3.2 GB instead of 4.3 GB from L2 into
//    shared memory at 4096^3). n = 256 also makes each warpgroup read its A tile once per 256 columns:
//    2 x (8 + 32) KB of shared reads per 32-k slice (128 x 128 tiles in two m64n128 per warpgroup of a
//    256 x 128 tile would read 96 KB). Shared memory: 4 stages x 48 KB = 192 KB (+1 KB to align the
//    swizzle), one block per multiprocessor; registers: 128 accumulators plus addressing, under the 255
//    of __launch_bounds__(256, 1) (ptxas below). A third warpgroup (192 x 256) would need <= 168
//    registers per thread (ptxas gives 154 here) and 224 KB, and 4096 / 192 leaves a ragged tile: not
//    tried, a candidate for the next step.
//
// Unchanged: cp.async issued by the same warps that issue wgmma (no producer warpgroup), edge tiles
// zero-filled by cp.async's source size, a 32-k slice per stage (one 128-byte swizzle row).
// Not done: TMA or cp.async.bulk with mbarriers and a producer warpgroup (setmaxnreg); 2-block clusters
// with TMA multicast (halves the L2 reads, what cuBLAS does); block rasterization for L2 reuse; a
// persistent grid; an epilogue staged through shared memory.
#include <cuda_bf16.h>

#include "core/tensor.h"
#include "cuda/sgemm_common.cuh"
#include "ops/kernel_signatures.h"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "cuda/matmul_tf32_wgmma_v2.cu uses wgmma: compile it for sm_90a only (-gencode arch=compute_90a,code=sm_90a)"
#endif

namespace minidl {

namespace {

using cuda::GemmBatch;
using cuda::Operand;

constexpr char kName[] = "tf32_wgmma_v2";
constexpr int kBM = 128, kBN = 256, kBK = 32, kStages = 4, kThreads = 256;  // 2 warpgroups of 64 x 256
constexpr int kAhead = kStages - 2;  // slices copied ahead of the one multiplied (one more is in wgmma)
constexpr int kTileA = kBM * kBK, kTileB = kBN * kBK;  // floats of one stage of each operand
static_assert(kBK == 32, "a tile row is one 128-byte swizzle row");
static_assert(kBM == 2 * 64 && kThreads == 2 * 128, "one warpgroup per 64 rows of the block tile");
// Stages of A, then stages of B, plus up to 1024 bytes to align the first tile (the swizzle pattern is
// anchored to 1024-byte boundaries of the address; every tile is a multiple of 1024 bytes).
constexpr size_t kSmemBytes = sizeof(float) * kStages * (kTileA + kTileB) + 1024;

// ---------------------------------------------------------------- the pre-pass: op(X) into K-major rows

// dst[r][mn][k] = op(X_r)(mn, k) for k < k_extent, 0 for k_extent <= k < ldk (rows of ldk elements of
// type Out, ldk a multiple of 16 bytes' worth, so every row is 16-byte aligned). Out is float (the TF32
// kernels) or __nv_bfloat16 (bf16_wgmma: the pre-pass also rounds each value to bfloat16, to nearest even). Block: a 32 (mn) x 32 (k) tile, 32 x 8 threads, each
// thread 4 elements. It reads along the stored rows (lanes on consecutive addresses: along mn for an
// MN-contiguous X, along k for a K-contiguous one) into tile[mn][k], and writes along k. The row of 33
// floats puts tile[mn][k] in bank (33 mn + k) % 32 = (mn + k) % 32: both the transposing writes (lanes
// along mn) and the reads (lanes along k) touch 32 different banks. gridDim.y may be smaller than the
// number of k tiles (at most 65535): blocks then step through k tiles gridDim.y apart.
constexpr int kPackTile = 32, kPackRows = 8;

__device__ __forceinline__ float from_float(float v, float*) { return v; }
__device__ __forceinline__ __nv_bfloat16 from_float(float v, __nv_bfloat16*) { return __float2bfloat16_rn(v); }

template <bool K_CONTIG, class Out>
__global__ void __launch_bounds__(kPackTile * kPackRows)
    pack_k_major_kernel(const float* x, int64_t ld, int64_t stride, int mn_extent, int k_extent, Out* dst,
                        int64_t ldk, int64_t dst_stride) {
  __shared__ float tile[kPackTile][kPackTile + 1];  // tile[mn][k]
  const int tx = static_cast<int>(threadIdx.x) % kPackTile, ty = static_cast<int>(threadIdx.x) / kPackTile;
  const int64_t r = blockIdx.z;  // batch entry
  const Operand src = cuda::make_operand(x, ld, stride, r, mn_extent, k_extent, false);
  Out* out = dst + r * dst_stride;
  const int mn0 = static_cast<int>(blockIdx.x) * kPackTile;
  const int k_tiles = static_cast<int>((ldk + kPackTile - 1) / kPackTile);
  for (int kt = static_cast<int>(blockIdx.y); kt < k_tiles; kt += static_cast<int>(gridDim.y)) {
    const int k0 = kt * kPackTile;
#pragma unroll
    for (int i = 0; i < kPackTile; i += kPackRows) {
      const int mn = K_CONTIG ? ty + i : tx, k = K_CONTIG ? tx : ty + i;  // lanes along the stored rows
      const cuda::Stored<K_CONTIG> e(src, mn0 + mn, k0 + k);
      tile[mn][k] = (e.row < e.rows && e.col < e.cols) ? *e.ptr(src) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kPackTile; i += kPackRows) {
      const int mn = ty + i, k = tx;  // lanes along k
      if (mn0 + mn < mn_extent && k0 + k < ldk) out[static_cast<int64_t>(mn0 + mn) * ldk + k0 + k] = from_float(tile[mn][k], out);
    }
    __syncthreads();  // every read of tile done before the next k tile overwrites it
  }
}

// A K-major copy of one operand, for all batch entries: entry r at storage + r * stride, rows of ld
// elements (float32, or bfloat16 for bf16_wgmma).
struct KMajorCopy {
  Tensor storage;  // scratch from the caching allocator; must live until the GEMM kernel is queued
  int64_t ld = 0, stride = 0;
};

// Queues the pre-pass for operand x (stored rows of ld floats, batch stride `stride`, K-contiguous or
// not) of the "MN x K" view op(X) [mn_extent, K], into rows of `dtype` (float32 or bfloat16) padded to
// 16 bytes. A batch stride of 0 (one matrix for every entry) stays 0: one copy.
KMajorCopy pack_k_major(const float* x, int64_t ld, int64_t stride, bool k_contig, int64_t batch, int64_t mn_extent,
                        int64_t K, int device, DType dtype = DType::float32) {
  KMajorCopy c;
  const int64_t per_16_bytes = 16 / static_cast<int64_t>(dtype_size(dtype));  // 4 floats, 8 bfloat16
  c.ld = (K + per_16_bytes - 1) / per_16_bytes * per_16_bytes;
  const int64_t entries = stride == 0 ? 1 : batch;
  c.stride = stride == 0 ? 0 : mn_extent * c.ld;
  c.storage = empty({entries * mn_extent * c.ld}, TensorOptions(dtype, Device::cuda(device)));
  const int64_t k_tiles = (c.ld + kPackTile - 1) / kPackTile;
  const dim3 grid(static_cast<unsigned>((mn_extent + kPackTile - 1) / kPackTile),
                  static_cast<unsigned>(std::min<int64_t>(k_tiles, 65535)), static_cast<unsigned>(entries));
  const int mn = static_cast<int>(mn_extent), k = static_cast<int>(K);
  cudaStream_t s = cuda::stream(device);
  const unsigned threads = kPackTile * kPackRows;
  if (dtype == DType::bfloat16) {
    auto* dst = static_cast<__nv_bfloat16*>(c.storage.raw_data());
    auto* kernel = k_contig ? pack_k_major_kernel<true, __nv_bfloat16> : pack_k_major_kernel<false, __nv_bfloat16>;
    kernel<<<grid, threads, 0, s>>>(x, ld, stride, mn, k, dst, c.ld, c.stride);
  } else {
    auto* kernel = k_contig ? pack_k_major_kernel<true, float> : pack_k_major_kernel<false, float>;
    kernel<<<grid, threads, 0, s>>>(x, ld, stride, mn, k, c.storage.data<float>(), c.ld, c.stride);
  }
  MINIDL_LAUNCH_CHECK();
  return c;
}

}  // namespace

// op(A) and op(B)^T as K-major operands with 16-byte aligned rows: declared in cuda/sgemm_common.cuh,
// shared with tf32_wgmma_v3. An operand already so is used in place; any other is packed first. (K = 0
// reads no operand: nothing is packed.)
cuda::KMajorGemm cuda::k_major_gemm(const GemmBatch& g, int device) {
  KMajorGemm km;
  km.g = g;
  GemmBatch& nt = km.g;
  if (g.K > 0 && (g.trans_a || !g.vec_a)) {
    KMajorCopy c = pack_k_major(g.A, g.lda, g.stride_a, !g.trans_a, g.batch, g.M, g.K, device);
    nt.A = c.storage.data<float>();
    nt.lda = c.ld;
    nt.stride_a = c.stride;
    nt.trans_a = false;
    nt.vec_a = rows_aligned(nt.A, nt.lda, nt.stride_a);
    km.a_storage = std::move(c.storage);
  }
  if (g.K > 0 && (!g.trans_b || !g.vec_b)) {
    KMajorCopy c = pack_k_major(g.B, g.ldb, g.stride_b, g.trans_b, g.batch, g.N, g.K, device);
    nt.B = c.storage.data<float>();
    nt.ldb = c.ld;
    nt.stride_b = c.stride;
    nt.trans_b = true;
    nt.vec_b = rows_aligned(nt.B, nt.ldb, nt.stride_b);
    km.b_storage = std::move(c.storage);
  }
  MINIDL_CHECK(g.K == 0 || (!nt.trans_a && nt.trans_b && nt.vec_a && nt.vec_b),
               "k_major_gemm: the packed operands are not K-major with 16-byte aligned rows");
  return km;
}

// op(A) and op(B)^T cast to bfloat16, K-major, rows padded to 16 bytes: declared in cuda/sgemm_common.cuh,
// for bf16_wgmma. Both operands are always packed (the cast needs a pass anyway); K = 0 packs nothing.
cuda::KMajorBf16 cuda::k_major_bf16(const GemmBatch& g, int device) {
  KMajorBf16 km;
  if (g.K == 0) return km;
  KMajorCopy a = pack_k_major(g.A, g.lda, g.stride_a, !g.trans_a, g.batch, g.M, g.K, device, DType::bfloat16);
  KMajorCopy b = pack_k_major(g.B, g.ldb, g.stride_b, g.trans_b, g.batch, g.N, g.K, device, DType::bfloat16);
  km.A = a.storage.raw_data();
  km.lda = a.ld;
  km.stride_a = a.stride;
  km.B = b.storage.raw_data();
  km.ldb = b.ld;
  km.stride_b = b.stride;
  km.a_storage = std::move(a.storage);
  km.b_storage = std::move(b.storage);
  return km;
}

namespace {

// ---------------------------------------------------------------- the GEMM kernel

// Starts the copies of K slice k0 of both operands into `stage`: 16-byte cp.async into the swizzled
// K-major layout (cuda::cp_async_tile), 4 per thread for A (128 x 32), 8 for B (256 x 32).
__device__ __forceinline__ void copy_slice(float* tiles_a, float* tiles_b, const Operand& a, const Operand& b, int m0,
                                           int n0, int k0, int stage) {
  cuda::cp_async_tile<kBM, kBK, kThreads, true, cuda::SmemKMajorSwizzle128>(tiles_a + stage * kTileA, a, m0, k0);
  cuda::cp_async_tile<kBN, kBK, kThreads, true, cuda::SmemKMajorSwizzle128>(tiles_b + stage * kTileB, b, n0, k0);
}

// g as run_tf32_wgmma_v2 rewrote it: A stored [M, K] (K-contiguous), B stored [N, K] (K-contiguous, i.e.
// trans_b), both with 16-byte aligned rows; the transpose flags and vec_a / vec_b are not read.
__global__ void __launch_bounds__(kThreads, 1) tf32_wgmma_v2_kernel(GemmBatch g) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const uint32_t raw = cuda::smem_address(smem_raw);
  float* tiles_a = reinterpret_cast<float*>(smem_raw + (1024 - raw % 1024) % 1024);  // kStages tiles of A
  float* tiles_b = tiles_a + kStages * kTileA;                                        // then kStages of B

  const int M = static_cast<int>(g.M), N = static_cast<int>(g.N), K = static_cast<int>(g.K);
  const int m0 = static_cast<int>(blockIdx.y) * kBM, n0 = static_cast<int>(blockIdx.x) * kBN;
  const int64_t r = blockIdx.z;  // batch entry
  // vec = true as a literal: cp_async_tile keeps only its 16-byte path.
  const Operand a = cuda::make_operand(g.A, g.lda, g.stride_a, r, M, K, true);
  const Operand b = cuda::make_operand(g.B, g.ldb, g.stride_b, r, N, K, true);
  const int wg = static_cast<int>(threadIdx.x) / 128;  // warpgroup: block rows 64 wg .. 64 wg + 63
  const int slices = (K + kBK - 1) / kBK;

  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.0f;

  // One commit group per slice, empty past the last one, so that "slice t has landed" is always
  // cp_async_wait<kAhead - 1> (at iteration t, slices 0 .. t + kAhead - 1 have been committed).
#pragma unroll
  for (int t = 0; t < kAhead; ++t) {
    if (t < slices) copy_slice(tiles_a, tiles_b, a, b, m0, n0, t * kBK, t);
    cuda::cp_async_commit();
  }
  for (int t = 0; t < slices; ++t) {
    cuda::cp_async_wait<kAhead - 1>();  // this thread's copies of slice t have landed ...
    cuda::fence_proxy_async();          // ... and are ordered before the tensor cores' reads ...
    __syncthreads();                    // ... as are everyone's; both warpgroups completed slice t-2's wgmmas

    const int stage = t % kStages;
    const uint64_t desc_a = cuda::smem_descriptor_sw128(cuda::smem_address(tiles_a + stage * kTileA + wg * 64 * kBK));
    const uint64_t desc_b = cuda::smem_descriptor_sw128(cuda::smem_address(tiles_b + stage * kTileB));
    cuda::fence_accumulators(acc);
    cuda::wgmma_fence();
#pragma unroll
    for (int j = 0; j < kBK / 8; ++j)  // k-step j: 8 floats = 32 bytes = 2 units of the address field
      cuda::wgmma_m64n256k8_tf32(acc, desc_a + 2 * j, desc_b + 2 * j);
    cuda::wgmma_commit();

    // Refill the stage of slice t-2 (free since the barrier above) while the tensor cores work.
    const int next = t + kAhead;
    if (next < slices) copy_slice(tiles_a, tiles_b, a, b, m0, n0, next * kBK, next % kStages);
    cuda::cp_async_commit();

    cuda::wgmma_wait<1>();  // slice t-1's group is complete; slice t's may still run
    cuda::fence_accumulators(acc);
  }
  cuda::wgmma_wait<0>();
  cuda::fence_accumulators(acc);
  cuda::cp_async_wait<0>();  // only empty groups can be left; no copy outlives the block

  cuda::store_m64n256_tile(acc, g, m0 + wg * 64, n0, r);
}

bool run_tf32_wgmma_v2(const GemmBatch& g, int device) {
  const cudaDeviceProp& prop = cuda::properties(device);
  if (!cuda::tf32_kernel_allowed(kName) || prop.major != 9 || prop.minor != 0 || !cuda::ladder_fits(g, kBM) ||
      kSmemBytes > prop.sharedMemPerBlockOptin)
    return false;

  // The same product with both operands K-major and 16-byte aligned (cuda::k_major_gemm, above); its
  // scratch is released when this function returns, after the launch.
  const cuda::KMajorGemm km = cuda::k_major_gemm(g, device);
  const GemmBatch& nt = km.g;

  const dim3 grid(static_cast<unsigned>((g.N + kBN - 1) / kBN), static_cast<unsigned>((g.M + kBM - 1) / kBM),
                  static_cast<unsigned>(g.batch));
  cuda::allow_dynamic_smem(tf32_wgmma_v2_kernel, kSmemBytes);
  tf32_wgmma_v2_kernel<<<grid, kThreads, kSmemBytes, cuda::stream(device)>>>(nt);
  MINIDL_LAUNCH_CHECK();
  return true;
}

}  // namespace

void register_matmul_tf32_wgmma_v2_cuda() {
  // portable + 8: the TF32 kernels' place, in ladder order (cuda/matmul_tf32_mma.cu says why).
  register_kernel(keys::matmul, DeviceType::cuda, kName, Priority::portable + 8,
                  "TF32 tensor cores: Hopper wgmma m64n256k8, 128x256 tiles, 4 stages with one wgmma "
                  "group in flight, non-K-major operands transposed first (only with MINIDL_TF32=1 or "
                  "when selected; sm_90a, compute capability 9.0)",
                  cuda::matmul_entry<run_tf32_wgmma_v2>);
}

}  // namespace minidl
