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
#include "core/tensor.h"
#include "cuda/hopper_tma.cuh"
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
      cuda::mbar_init(cuda::smem_address(&full[s]), 1);
      cuda::mbar_init(cuda::smem_address(&empty[s]), kReleases);
    }
    cuda::fence_mbarrier_init();
  }
  // Every block's barriers are initialised before any block copies into or arrives on them. The last
  // barrier until the end: from here on the warpgroups meet only at the mbarriers.
  cuda::cluster_sync();

  if (wg == 0) {  // the producer
    cuda::setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0) {
      const int entry_a = g.stride_a == 0 ? 0 : r, entry_b = g.stride_b == 0 ? 0 : r;
      const int q = static_cast<int>(cuda::cluster_rank());  // copies B tile rows q kBoxB .. (q + 1) kBoxB - 1
      for (int t = 0; t < slices; ++t) {
        const int s = t % kStages;
        // Slice t-4 released by every consumer warp of the cluster (this block's part of B lands in all
        // of its blocks).
        if (t >= kStages) cuda::mbar_wait(cuda::smem_address(&empty[s]), (t / kStages - 1) & 1);
        const uint32_t bar = cuda::smem_address(&full[s]);
        cuda::mbar_arrive_expect_tx(bar, kStageBytes);  // A, and all kClusterM parts of B (the others' multicasts)
        cuda::tma_load_3d(cuda::smem_address(tiles_a + s * kTileA), &map_a, bar, t * kBK, m0, entry_a);
        cuda::tma_load_3d_multicast(cuda::smem_address(tiles_b + s * kTileB + q * kBoxB * kBK), &map_b, bar, t * kBK,
                              n0 + q * kBoxB, entry_b, static_cast<uint16_t>((1u << kClusterM) - 1));
      }
    }
  } else {  // the consumers: warpgroup c owns block rows 64 c .. 64 c + 63
    cuda::setmaxnreg_inc<kConsumerRegs>();
    const int c = wg - 1;
    const int lane = static_cast<int>(threadIdx.x) % 32;
    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.0f;

    for (int t = 0; t < slices; ++t) {
      const int s = t % kStages;
      cuda::mbar_wait(cuda::smem_address(&full[s]), (t / kStages) & 1);  // slice t has landed, all of it

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
        cuda::mbar_arrive_cluster(cuda::cluster_address(cuda::smem_address(&empty[(t - 1) % kStages]), lane));
    }
    cuda::wgmma_wait<0>();  // the last slice's stage is never released: nothing more is copied
    cuda::fence_accumulators(acc);
    cuda::store_m64n256_tile(acc, g, m0 + c * 64, n0, r);
  }
  // No block leaves while another may still arrive on its barriers.
  cuda::cluster_sync();
}

// ---------------------------------------------------------------- the host side

bool run_tf32_wgmma_v3(const GemmBatch& g, int device) {
  const cudaDeviceProp& prop = cuda::properties(device);
  if (!cuda::tf32_kernel_allowed(kName) || prop.major != 9 || prop.minor != 0 || !cuda::ladder_fits(g, kBM) ||
      (g.N + kBN - 1) / kBN > 65535 || kSmemBytes > prop.sharedMemPerBlockOptin)
    return false;
  const PFN_cuTensorMapEncodeTiled_v12000 encode = cuda::tensor_map_encoder();
  if (encode == nullptr) return false;

  // Both operands K-major with 16-byte aligned rows (v2's pre-pass where needed); the scratch is released
  // when this function returns, after the launch.
  const cuda::KMajorGemm km = cuda::k_major_gemm(g, device);
  const GemmBatch& nt = km.g;

  // K = 0: no slice is copied and the tensor maps are never read (zeros; encoding needs K >= 1); the
  // kernel writes zeros.
  CUtensorMap map_a{}, map_b{};
  if (g.K > 0) {
    map_a = cuda::k_major_map(encode, nt.A, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, sizeof(float), nt.lda, nt.stride_a,
                              nt.batch, nt.M, nt.K, kBK, kBM, kName);
    map_b = cuda::k_major_map(encode, nt.B, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, sizeof(float), nt.ldb, nt.stride_b,
                              nt.batch, nt.N, nt.K, kBK, kBoxB, kName);
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
