// cuda/matmul_tf32_wgmma_v3.cu — matmul kernel "tf32_wgmma_v3", the third Hopper step of the GEMM
// ladder (docs/gemm-ladder.md): out[r] = op(a[r]) op(b[r]) with the products on TF32 tensor cores through
// wgmma, any M, N, K, all four transpose flags, float32 only, compute capability 9.0 only. Accumulation
// convention: out is overwritten (=).
//
// Built, declined and rounded as tf32_wgmma_v2 (cuda/matmul_tf32_wgmma_v2.cu; cuda/matmul_tf32_wgmma.cu
// explains wgmma, the descriptors and the 128-byte swizzle): sm_90a alone, in the minidl_sm90a object
// library; declines unless the GPU is compute capability 9.0 and MINIDL_TF32=1 or this kernel is selected
// by name (cuda/sgemm_common.cuh, tf32_kernel_allowed); also declines when the CUDA driver does not
// provide cuTensorMapEncodeTiled. Operands that are not K-major with 16-byte aligned rows are packed
// first by v2's pre-pass (cuda::k_major_gemm), so the main loop always sees op(A) stored [M, K] and op(B)
// as B^T stored [N, K]. Same block tile as v2: 128 x 256, 2 consumer warpgroups of 64 x 256 each issuing
// wgmma.m64n256k8, K slices of 32 floats (one 128-byte swizzle row), 4 stages (192 KB).
//
// What changes from tf32_wgmma_v2 (its main loop, not the pre-pass, is the limit), and why it should help:
//
// 1. TMA loads. A stage is filled by cp.async.bulk.tensor copies that one thread issues, instead of 12
//    16-byte cp.async per thread of 256 threads (3,072 instructions with their address arithmetic and
//    edge tests per slice). The copy engine writes the tile already swizzled (CU_TENSOR_MAP_SWIZZLE_128B:
//    chunk c of row r at c ^ (r % 8), the layout of cuda::SmemKMajorSwizzle128 that the wgmma
//    descriptors describe) and fills the parts of a box outside the matrix with zeros: edge tiles need
//    no code. Boxes are described on the host by tensor maps (cuTensorMapEncodeTiled, a driver function
//    reached through cudaGetDriverEntryPointByVersion, so minidl does not link libcuda), 3-dimensional:
//    k (innermost), rows, batch entry; built per call (microseconds on the host) and passed as
//    __grid_constant__ kernel parameters.
//
// 2. Warp specialisation with mbarriers instead of one __syncthreads per slice. Warpgroup 0 is the
//    producer: one thread issues the copies, the warpgroup gives its registers away (setmaxnreg.dec 40).
//    Warpgroups 1 and 2 are the consumers (setmaxnreg.inc 232; 40 x 128 + 232 x 256 = 64,512 of the 65,536
//    registers). Each stage s has two mbarriers:
//      full[s]  (1 arrival + 49,152 bytes): the producer arrives with expect_tx(bytes of the stage) and the
//               copies complete the transaction count as they land; its phase n completes when slice
//               s + 4n has landed, so consumers wait for slice t with parity (t / 4) & 1.
//      empty[s] (16 arrivals, see 3): each consumer warp arrives once its wgmmas on the stage are
//               complete; phase n completes when slice s + 4n is released, so before copying slice
//               t >= 4 the producer waits with parity (t / 4 - 1) & 1.
//    A consumer iteration (slice t in stage t % 4):
//
//      wait full[t % 4]; wgmma slice t (4 k-steps), commit     tensor cores: slice t-1 (maybe), slice t
//      wait_group 1                                             slice t-1's wgmmas are complete
//      arrive on empty[(t-1) % 4]                               the producer may refill that stage
//
//    The producer runs up to 3 slices ahead of the slice being multiplied, and no thread waits for the
//    slowest warpgroup at a block-wide barrier. (TMA writes and wgmma reads are both in the async proxy,
//    and the mbarriers order them: no fence.proxy.async is needed.)
//
// 3. Clusters of 2 blocks (consecutive row tiles, the same 256 columns) share the B tile through TMA
//    multicast: each block copies its own 128 x 32 box of A and half of B's 256 x 32 (block q of the
//    cluster: tile rows 128 q .. 128 q + 127), written into the same stage of both blocks. Per slice a
//    block then reads 32 KB from L2 instead of 48 KB: 2.1 GB instead of 3.2 GB at 4096^3, the traffic v2's
//    header names as the bound. Since a block's copy lands in both blocks, its producer must wait until
//    the consumers of both have released the stage: every consumer warp arrives on empty[s] of both
//    blocks (lane i on block i's, through mapa), 2 blocks x 8 warps = 16 arrivals. full[s] still expects
//    all 48 KB: the other block's half of B counts on it too (it may land before this block's producer has
//    announced the bytes: the transaction count may go negative, and the pending arrival keeps the phase
//    open). The blocks meet at a cluster barrier after initialising the mbarriers (so none is copied
//    into or arrived on before it exists) and before exiting (so no arrival targets a finished block).
//    The grid's row tiles are rounded up to an even count; a padding block multiplies zeros (its A box
//    lies outside the matrix) and writes nothing. kClusterM = 1 gives the same kernel without clusters.
#include <cuda.h>  // CUtensorMap and its enums (types only: no libcuda function is linked)
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled

#include "core/tensor.h"
#include "cuda/sgemm_common.cuh"
#include "ops/kernel_signatures.h"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "cuda/matmul_tf32_wgmma_v3.cu uses wgmma: compile it for sm_90a only (-gencode arch=compute_90a,code=sm_90a)"
#endif

namespace minidl {

namespace {

using cuda::GemmBatch;

constexpr char kName[] = "tf32_wgmma_v3";
constexpr int kBM = 128, kBN = 256, kBK = 32, kStages = 4;
constexpr int kClusterM = 2;                           // blocks of a cluster: consecutive row tiles, one n0
constexpr int kBoxB = kBN / kClusterM;                 // rows of the B tile each block copies (multicast)
constexpr int kConsumers = 2;                          // warpgroups issuing wgmma, 64 x 256 each
constexpr int kThreads = 128 * (1 + kConsumers);       // warpgroup 0 is the producer
constexpr int kReleases = kClusterM * kConsumers * 4;  // arrivals on empty[s]: each consumer warp of the cluster
constexpr int kProducerRegs = 40, kConsumerRegs = 232;  // setmaxnreg targets (multiples of 8)
constexpr int kTileA = kBM * kBK, kTileB = kBN * kBK;  // floats of one stage of each operand
constexpr uint32_t kStageBytes = sizeof(float) * (kTileA + kTileB);  // the transaction count of full[s]
static_assert(kBK == 32, "a tile row is one 128-byte swizzle row: the TMA box is 32 floats wide");
static_assert(kBM == kConsumers * 64, "one consumer warpgroup per 64 rows of the block tile");
static_assert(kBN <= 256 && kBM <= 256, "a TMA box is at most 256 rows");
static_assert(kProducerRegs * 128 + kConsumerRegs * kConsumers * 128 <= 65536, "the register file");
static_assert(kClusterM >= 1 && kClusterM <= 8 && kBN % (8 * kClusterM) == 0,
              "a portable cluster size; each block's share of the B tile is whole 8-row swizzle groups");
// Stages of A, then stages of B (each tile a multiple of 1024 bytes, so every tile stays 1024-byte aligned
// as the swizzle needs), then the mbarriers full[kStages], empty[kStages]; plus up to 1024 bytes to align
// the first tile.
constexpr size_t kTileBytes = sizeof(float) * kStages * (kTileA + kTileB);
constexpr size_t kSmemBytes = kTileBytes + 2 * kStages * sizeof(uint64_t) + 1024;

// ---------------------------------------------------------------- mbarrier and TMA (sm_90)
// An mbarrier is a 64-bit word in shared memory counting arrivals (and, with expect_tx, bytes still to
// land) for its current phase; when both reach zero the phase completes and the next one begins.
// try_wait.parity P returns true once the phase of parity P has completed, i.e. while the current
// phase's parity differs from P. Waiters therefore track the phase number n they need and pass n & 1.

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrivals) : "memory");
}

// Makes the initialised mbarriers visible to the async proxy (the TMA unit) and to the other threads
// of the cluster (with the cluster_sync that follows).
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// One arrival plus `bytes` more bytes this phase must see land (the TMA copies signal them).
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile(
      "{\n"
      ".reg .b64 state;\n"
      "mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n"
      "}\n" ::"r"(bar),
      "r"(bytes)
      : "memory");
}

// The same location in block `rank` of the cluster, as a shared::cluster address.
__device__ __forceinline__ uint32_t cluster_address(uint32_t bar, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(bar), "r"(rank));
  return remote;
}

// One arrival on an mbarrier of any block of the cluster (bar from cluster_address), releasing this
// thread's earlier work to whoever waits on it.
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}

// A barrier for every thread of every block of the cluster, ordering memory at cluster scope (the
// .aligned form: each warp converged first).
__device__ __forceinline__ void cluster_sync() {
  __syncwarp();
  asm volatile(
      "barrier.cluster.arrive.release.aligned;\n"
      "barrier.cluster.wait.acquire.aligned;\n" ::
          : "memory");
}

// CLUSTER: acquire at cluster scope (the empty barriers, which consumer warps of the other blocks arrive
// on); otherwise at block scope (the full barriers, completed by TMA bytes).
template <bool CLUSTER>
__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  if constexpr (CLUSTER)
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  else
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  return done != 0;
}

__device__ __forceinline__ uint64_t globaltimer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}

// Waits until the phase of the given parity has completed. No wait in this kernel lasts more than
// microseconds; one that lasts 10 seconds is a wrong parity or byte count, and traps (the launch then
// fails with an error) instead of hanging the GPU.
constexpr uint64_t kHangNs = 10'000'000'000ull;
template <bool CLUSTER = false>
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  if (mbar_try_wait<CLUSTER>(bar, parity)) return;
  const uint64_t start = globaltimer_ns();
  while (!mbar_try_wait<CLUSTER>(bar, parity))
    if (globaltimer_ns() - start > kHangNs) __trap();
}

// Copies the box at coordinates (k, row, entry) of the tensor map (innermost coordinate first) into
// shared memory at dst; the bytes count towards bar's transaction. Parts of the box outside the tensor
// are written as zeros (and counted too: the full box size always lands).
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int k, int row,
                                            int entry) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(k), "r"(row), "r"(entry), "r"(bar)
      : "memory");
}

// The same box written into every block of the cluster in `blocks` (bit i: rank i), at the same offset
// dst, each copy counting towards the mbarrier at offset bar of its block.
__device__ __forceinline__ void tma_load_3d_multicast(uint32_t dst, const CUtensorMap* map, uint32_t bar, int k,
                                                      int row, int entry, uint16_t blocks) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(k), "r"(row), "r"(entry), "r"(bar), "h"(blocks)
      : "memory");
}

template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

// ---------------------------------------------------------------- the GEMM kernel

// g as run_tf32_wgmma_v3 rewrote it (A stored [M, K], B stored [N, K], both K-major); map_a and map_b
// describe the same operands for TMA (see k_major_map; map_b's box is this block's kBoxB rows of the B
// tile). Only M, N, K, C, ldc, stride_c, vec_c and the batch strides (0: one matrix for every entry,
// mapped with a batch extent of 1) are read from g. Grid: x = row tiles (rounded up to whole clusters),
// y = column tiles, z = batch entries; the kClusterM blocks of a cluster share n0 and the entry.
__global__ void __cluster_dims__(kClusterM, 1, 1) __launch_bounds__(kThreads, 1)
    tf32_wgmma_v3_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                         GemmBatch g) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // Every block of the cluster computes the same offsets: multicast copies and remote arrivals address
  // the other blocks' tiles and barriers by this block's offsets.
  const uint32_t raw = cuda::smem_address(smem_raw);
  unsigned char* base = smem_raw + (1024 - raw % 1024) % 1024;
  float* tiles_a = reinterpret_cast<float*>(base);  // kStages tiles of A
  float* tiles_b = tiles_a + kStages * kTileA;      // then kStages of B
  uint64_t* full = reinterpret_cast<uint64_t*>(base + kTileBytes);
  uint64_t* empty = full + kStages;

  const int K = static_cast<int>(g.K);
  const int m0 = static_cast<int>(blockIdx.x) * kBM, n0 = static_cast<int>(blockIdx.y) * kBN;
  const int r = static_cast<int>(blockIdx.z);  // batch entry
  const int wg = static_cast<int>(threadIdx.x) / 128;
  const int slices = (K + kBK - 1) / kBK;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(cuda::smem_address(&full[s]), 1);
      mbar_init(cuda::smem_address(&empty[s]), kReleases);
    }
    fence_mbarrier_init();
  }
  // Every block's barriers are initialised before any block copies into or arrives on them. The last
  // barrier until the end: from here on the warpgroups meet only at the mbarriers.
  cluster_sync();

  if (wg == 0) {  // the producer
    setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0) {
      const int entry_a = g.stride_a == 0 ? 0 : r, entry_b = g.stride_b == 0 ? 0 : r;
      const int q = static_cast<int>(cluster_rank());  // copies B tile rows q kBoxB .. (q + 1) kBoxB - 1
      for (int t = 0; t < slices; ++t) {
        const int s = t % kStages;
        // Slice t-4 released by every consumer warp of the cluster (this block's part of B lands in all
        // of its blocks).
        if (t >= kStages) mbar_wait<true>(cuda::smem_address(&empty[s]), (t / kStages - 1) & 1);
        const uint32_t bar = cuda::smem_address(&full[s]);
        mbar_arrive_expect_tx(bar, kStageBytes);  // A, and all kClusterM parts of B (the others' multicasts)
        tma_load_3d(cuda::smem_address(tiles_a + s * kTileA), &map_a, bar, t * kBK, m0, entry_a);
        tma_load_3d_multicast(cuda::smem_address(tiles_b + s * kTileB + q * kBoxB * kBK), &map_b, bar, t * kBK,
                              n0 + q * kBoxB, entry_b, static_cast<uint16_t>((1u << kClusterM) - 1));
      }
    }
  } else {  // the consumers: warpgroup c owns block rows 64 c .. 64 c + 63
    setmaxnreg_inc<kConsumerRegs>();
    const int c = wg - 1;
    const int lane = static_cast<int>(threadIdx.x) % 32;
    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.0f;

    for (int t = 0; t < slices; ++t) {
      const int s = t % kStages;
      mbar_wait(cuda::smem_address(&full[s]), (t / kStages) & 1);  // slice t has landed, all of it

      const uint64_t desc_a = cuda::smem_descriptor_sw128(cuda::smem_address(tiles_a + s * kTileA + c * 64 * kBK));
      const uint64_t desc_b = cuda::smem_descriptor_sw128(cuda::smem_address(tiles_b + s * kTileB));
      cuda::fence_accumulators(acc);
      cuda::wgmma_fence();
#pragma unroll
      for (int j = 0; j < kBK / 8; ++j)  // k-step j: 8 floats = 32 bytes = 2 units of the address field
        cuda::wgmma_m64n256k8_tf32(acc, desc_a + 2 * j, desc_b + 2 * j);
      cuda::wgmma_commit();
      cuda::wgmma_wait<1>();  // slice t-1's group is complete; slice t's may still run
      cuda::fence_accumulators(acc);
      // This warp is done with slice t-1's stage: lane i tells block i of the cluster (whose producer
      // writes its part of B into this block's stage).
      if (t > 0 && lane < kClusterM)
        mbar_arrive_cluster(cluster_address(cuda::smem_address(&empty[(t - 1) % kStages]), lane));
    }
    cuda::wgmma_wait<0>();  // the last slice's stage is never released: nothing more is copied
    cuda::fence_accumulators(acc);
    cuda::store_m64n256_tile(acc, g, m0 + c * 64, n0, r);
  }
  // No block leaves while another may still arrive on its barriers.
  cluster_sync();
}

// ---------------------------------------------------------------- the host side

// cuTensorMapEncodeTiled from the driver the runtime loaded, looked up once; null when the driver is
// older than CUDA 12.0 (then the kernel declines).
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    const cudaError_t err =
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
    if (err != cudaSuccess || found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();  // not sticky; clear it so the next check does not report it
      return static_cast<PFN_cuTensorMapEncodeTiled_v12000>(nullptr);
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

// The tensor map of a K-major operand x (entry e at x + e * stride, rows of ld floats, 16-byte aligned):
// dimensions, innermost first, (K, mn_extent, entries), boxes of 32 x box_rows x 1 landing with the
// 128-byte swizzle; k >= K and rows >= mn_extent read as zeros. A batch stride of 0 (one matrix for every
// entry) becomes a batch extent of 1, read at entry 0 (the kernel tests the stride).
CUtensorMap k_major_map(PFN_cuTensorMapEncodeTiled_v12000 encode, const float* x, int64_t ld, int64_t stride,
                        int64_t batch, int64_t mn_extent, int64_t K, int box_rows) {
  const bool one_matrix = stride == 0;
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(K), static_cast<cuuint64_t>(mn_extent),
                              static_cast<cuuint64_t>(one_matrix ? 1 : batch)};
  // Byte strides of dimensions 1 and 2 (dimension 0 is contiguous); multiples of 16 as TMA requires.
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(ld) * sizeof(float),
                                 static_cast<cuuint64_t>(one_matrix ? mn_extent * ld : stride) * sizeof(float)};
  const cuuint32_t box[3] = {kBK, static_cast<cuuint32_t>(box_rows), 1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  CUtensorMap map;
  const CUresult res = encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, const_cast<float*>(x), dims, strides, box,
                              element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  MINIDL_CHECK(res == CUDA_SUCCESS, "tf32_wgmma_v3: cuTensorMapEncodeTiled failed (CUresult ", static_cast<int>(res),
               ") for K ", K, ", rows ", mn_extent, ", ld ", ld, ", batch stride ", stride);
  return map;
}

bool run_tf32_wgmma_v3(const GemmBatch& g, int device) {
  const cudaDeviceProp& prop = cuda::properties(device);
  if (!cuda::tf32_kernel_allowed(kName) || prop.major != 9 || prop.minor != 0 || !cuda::ladder_fits(g, kBM) ||
      (g.N + kBN - 1) / kBN > 65535 || kSmemBytes > prop.sharedMemPerBlockOptin)
    return false;
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  if (encode == nullptr) return false;

  // Both operands K-major with 16-byte aligned rows (v2's pre-pass where needed); the scratch is released
  // when this function returns, after the launch.
  const cuda::KMajorGemm km = cuda::k_major_gemm(g, device);
  const GemmBatch& nt = km.g;

  // K = 0: no slice is copied and the tensor maps are never read (zeros; encoding needs K >= 1); the
  // kernel writes zeros.
  CUtensorMap map_a{}, map_b{};
  if (g.K > 0) {
    map_a = k_major_map(encode, nt.A, nt.lda, nt.stride_a, nt.batch, nt.M, nt.K, kBM);
    map_b = k_major_map(encode, nt.B, nt.ldb, nt.stride_b, nt.batch, nt.N, nt.K, kBoxB);
  }

  // Row tiles along x, rounded up to whole clusters (__cluster_dims__ needs gridDim.x a multiple of
  // kClusterM): a padding block computes on zero rows of A and writes nothing, but copies its part of B.
  const int64_t row_tiles = (g.M + kBM - 1) / kBM;
  const dim3 grid(static_cast<unsigned>((row_tiles + kClusterM - 1) / kClusterM * kClusterM),
                  static_cast<unsigned>((g.N + kBN - 1) / kBN), static_cast<unsigned>(g.batch));
  cuda::allow_dynamic_smem(tf32_wgmma_v3_kernel, kSmemBytes);
  tf32_wgmma_v3_kernel<<<grid, kThreads, kSmemBytes, cuda::stream(device)>>>(map_a, map_b, nt);
  MINIDL_LAUNCH_CHECK();
  return true;
}

}  // namespace

void register_matmul_tf32_wgmma_v3_cuda() {
  // portable + 9: the TF32 kernels' place, in ladder order (cuda/matmul_tf32_mma.cu says why).
  register_kernel(keys::matmul, DeviceType::cuda, kName, Priority::portable + 9,
                  "TF32 tensor cores: Hopper wgmma m64n256k8, 128x256 tiles, TMA loads into 4 stages, "
                  "a producer warpgroup and 2 consumer warpgroups on full/empty mbarriers, non-K-major "
                  "operands transposed first (only with MINIDL_TF32=1 or when selected; sm_90a, compute "
                  "capability 9.0)",
                  cuda::matmul_entry<run_tf32_wgmma_v3>);
}

}  // namespace minidl
