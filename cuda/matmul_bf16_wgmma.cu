// cuda/matmul_bf16_wgmma.cu — matmul kernel "bf16_wgmma", the BF16 step of the GEMM ladder
// (docs/gemm-ladder.md): out[r] = bf16(op(a[r])) bf16(op(b[r])) with the products on BF16 tensor cores
// through wgmma and float32 accumulation, any M, N, K, all four transpose flags, float32 tensors in and
// out, compute capability 9.0 only. Accumulation convention: out is overwritten (=).
//
// What it computes. bfloat16 keeps float32's 8 exponent bits and 7 of its 23 mantissa bits
// (core/bfloat16.h). Each operand is rounded to bfloat16, to nearest even, by the pre-pass; every
// product of two bfloat16 values is exact in float32 (8 + 8 significant bits), and the sums are float32.
// So each term carries a relative error of at most about 2 x 2^-8 from the roundings, and a sum of K
// terms of random sign an error that grows like sqrt(K) (tests/check_util.cpp, bf16 tolerance): four
// times TF32's. That is why it serves only under `--precision bf16` (the switch cuBLAS's BF16 path
// obeys, cuda/kernel_helpers.h bf16_enabled) or when selected by name, and never under plain FP32/TF32.
//
// How: tf32_wgmma_v3's machine (cuda/matmul_tf32_wgmma_v3.cu explains it; the shared parts are in
// cuda/hopper_tma.cuh) with 16-bit operands:
//   - the pre-pass (cuda::k_major_bf16, cuda/matmul_tf32_wgmma_v2.cu) writes both operands K-major in
//     bfloat16, rows padded to 8 elements (16 bytes): half the bytes of the float32 copies, and the
//     rounding happens there, once per element, instead of in every block that loads it;
//   - a K slice is 64 elements (still one 128-byte swizzle row), so a stage still holds 48 KB
//     (128 x 64 + 256 x 64 elements of 2 bytes), but covers twice the K of a TF32 stage: per product the
//     block moves half the bytes from L2 into shared memory;
//   - each consumer warpgroup issues wgmma.m64n256k16.f32.bf16.bf16: 16 k per instruction (TF32: 8), at
//     twice TF32's rate on the tensor cores, 4 instructions per slice, each k-step 32 bytes further
//     along the swizzle row (the same descriptor step as TF32's 8 floats);
//   - the accumulator layout of m64n256 does not depend on the operand type: the epilogue is v3's
//     (cuda::store_m64n256_tile).
// Producer warpgroup, full/empty mbarriers per stage, 2-block clusters multicasting the B tile: as v3.
#include <cuda_bf16.h>

#include "core/tensor.h"
#include "cuda/hopper_tma.cuh"
#include "cuda/kernel_helpers.h"
#include "cuda/sgemm_common.cuh"
#include "ops/kernel_signatures.h"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "cuda/matmul_bf16_wgmma.cu uses wgmma: compile it for sm_90a only (-gencode arch=compute_90a,code=sm_90a)"
#endif

namespace minidl {

namespace {

using cuda::GemmBatch;
using bf16 = __nv_bfloat16;

constexpr char kName[] = "bf16_wgmma";
constexpr int kBM = 128, kBN = 256, kBK = 64, kStages = 4;  // kBK in bfloat16 elements: 128 bytes
constexpr int kClusterM = 2;                           // blocks of a cluster: consecutive row tiles, one n0
constexpr int kBoxB = kBN / kClusterM;                 // rows of the B tile each block copies (multicast)
constexpr int kConsumers = 2;                          // warpgroups issuing wgmma, 64 x 256 each
constexpr int kThreads = 128 * (1 + kConsumers);       // warpgroup 0 is the producer
constexpr int kReleases = kClusterM * kConsumers * 4;  // arrivals on empty[s]: each consumer warp of the cluster
constexpr int kProducerRegs = 40, kConsumerRegs = 232;  // setmaxnreg targets (multiples of 8)
constexpr int kTileA = kBM * kBK, kTileB = kBN * kBK;  // elements of one stage of each operand
constexpr uint32_t kStageBytes = sizeof(bf16) * (kTileA + kTileB);  // the transaction count of full[s]
static_assert(kBK * sizeof(bf16) == 128, "a tile row is one 128-byte swizzle row");
static_assert(kBM == kConsumers * 64, "one consumer warpgroup per 64 rows of the block tile");
static_assert(kProducerRegs * 128 + kConsumerRegs * kConsumers * 128 <= 65536, "the register file");
static_assert(kBN % (8 * kClusterM) == 0, "each block's share of the B tile is whole 8-row swizzle groups");
constexpr size_t kTileBytes = sizeof(bf16) * kStages * (kTileA + kTileB);
constexpr size_t kSmemBytes = kTileBytes + 2 * kStages * sizeof(uint64_t) + 1024;

// d += A B for one k-step: A is 64 x 16 bfloat16 (descriptor desc_a), B is 16 x 256 given as its 256 x 16
// transpose (desc_b), both K-major (the two trailing 0s: no transpose), d the warpgroup's 64 x 256
// float32 accumulator in wgmma_m64n256k8_tf32's layout (cuda/sgemm_common.cuh).
__device__ __forceinline__ void wgmma_m64n256k16_bf16(float (&d)[128], uint64_t desc_a, uint64_t desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{"
      " %0, %1, %2, %3, %4, %5, %6, %7,"
      " %8, %9, %10, %11, %12, %13, %14, %15,"
      " %16, %17, %18, %19, %20, %21, %22, %23,"
      " %24, %25, %26, %27, %28, %29, %30, %31,"
      " %32, %33, %34, %35, %36, %37, %38, %39,"
      " %40, %41, %42, %43, %44, %45, %46, %47,"
      " %48, %49, %50, %51, %52, %53, %54, %55,"
      " %56, %57, %58, %59, %60, %61, %62, %63,"
      " %64, %65, %66, %67, %68, %69, %70, %71,"
      " %72, %73, %74, %75, %76, %77, %78, %79,"
      " %80, %81, %82, %83, %84, %85, %86, %87,"
      " %88, %89, %90, %91, %92, %93, %94, %95,"
      " %96, %97, %98, %99, %100, %101, %102, %103,"
      " %104, %105, %106, %107, %108, %109, %110, %111,"
      " %112, %113, %114, %115, %116, %117, %118, %119,"
      " %120, %121, %122, %123, %124, %125, %126, %127},"
      " %128, %129, p, 1, 1, 0, 0;\n"
      "}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(1)
      : "memory");
}

// The operands as cuda::k_major_bf16 packed them (map_a: A [M, lda] per entry; map_b: B^T [N, ldb], this
// block's kBoxB rows of the B tile per box); from g only M, N, K, C, ldc, stride_c, vec_c and the batch
// strides of the packed operands (0: one matrix for every entry) are read. Grid: x = row tiles (rounded
// up to whole clusters), y = column tiles, z = batch entries.
__global__ void __cluster_dims__(kClusterM, 1, 1) __launch_bounds__(kThreads, 1)
    bf16_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                      GemmBatch g, bool one_a, bool one_b) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const uint32_t raw = cuda::smem_address(smem_raw);
  unsigned char* base = smem_raw + (1024 - raw % 1024) % 1024;
  bf16* tiles_a = reinterpret_cast<bf16*>(base);  // kStages tiles of A
  bf16* tiles_b = tiles_a + kStages * kTileA;     // then kStages of B
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
  cuda::cluster_sync();

  if (wg == 0) {  // the producer
    cuda::setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0) {
      const int entry_a = one_a ? 0 : r, entry_b = one_b ? 0 : r;
      const int q = static_cast<int>(cuda::cluster_rank());
      for (int t = 0; t < slices; ++t) {
        const int s = t % kStages;
        if (t >= kStages) cuda::mbar_wait(cuda::smem_address(&empty[s]), (t / kStages - 1) & 1);
        const uint32_t bar = cuda::smem_address(&full[s]);
        cuda::mbar_arrive_expect_tx(bar, kStageBytes);
        cuda::tma_load_3d(cuda::smem_address(tiles_a + s * kTileA), &map_a, bar, t * kBK, m0, entry_a);
        cuda::tma_load_3d_multicast(cuda::smem_address(tiles_b + s * kTileB + q * kBoxB * kBK), &map_b, bar,
                                    t * kBK, n0 + q * kBoxB, entry_b, static_cast<uint16_t>((1u << kClusterM) - 1));
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
      cuda::mbar_wait(cuda::smem_address(&full[s]), (t / kStages) & 1);

      const uint64_t desc_a = cuda::smem_descriptor_sw128(cuda::smem_address(tiles_a + s * kTileA + c * 64 * kBK));
      const uint64_t desc_b = cuda::smem_descriptor_sw128(cuda::smem_address(tiles_b + s * kTileB));
      cuda::fence_accumulators(acc);
      cuda::wgmma_fence();
#pragma unroll
      for (int j = 0; j < kBK / 16; ++j)  // k-step j: 16 bfloat16 = 32 bytes = 2 units of the address field
        wgmma_m64n256k16_bf16(acc, desc_a + 2 * j, desc_b + 2 * j);
      cuda::wgmma_commit();
      cuda::wgmma_wait<1>();
      cuda::fence_accumulators(acc);
      if (t > 0 && lane < kClusterM)
        cuda::mbar_arrive_cluster(cuda::cluster_address(cuda::smem_address(&empty[(t - 1) % kStages]), lane));
    }
    cuda::wgmma_wait<0>();
    cuda::fence_accumulators(acc);
    cuda::store_m64n256_tile(acc, g, m0 + c * 64, n0, r);
  }
  cuda::cluster_sync();
}

// ---------------------------------------------------------------- the host side

bool run_bf16_wgmma(const GemmBatch& g, int device) {
  const cudaDeviceProp& prop = cuda::properties(device);
  const bool allowed =
      cuda::bf16_enabled() || KernelRegistry::instance().is_selected("matmul", DeviceType::cuda, kName);
  if (!allowed || prop.major != 9 || prop.minor != 0 || !cuda::ladder_fits(g, kBM) ||
      (g.N + kBN - 1) / kBN > 65535 || kSmemBytes > prop.sharedMemPerBlockOptin)
    return false;
  const PFN_cuTensorMapEncodeTiled_v12000 encode = cuda::tensor_map_encoder();
  if (encode == nullptr) return false;

  const cuda::KMajorBf16 km = cuda::k_major_bf16(g, device);  // the scratch lives until this returns
  CUtensorMap map_a{}, map_b{};
  if (g.K > 0) {
    map_a = cuda::k_major_map(encode, km.A, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, sizeof(bf16), km.lda, km.stride_a,
                              g.batch, g.M, g.K, kBK, kBM, kName);
    map_b = cuda::k_major_map(encode, km.B, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, sizeof(bf16), km.ldb, km.stride_b,
                              g.batch, g.N, g.K, kBK, kBoxB, kName);
  }
  const int64_t row_tiles = (g.M + kBM - 1) / kBM;
  const dim3 grid(static_cast<unsigned>((row_tiles + kClusterM - 1) / kClusterM * kClusterM),
                  static_cast<unsigned>((g.N + kBN - 1) / kBN), static_cast<unsigned>(g.batch));
  cuda::allow_dynamic_smem(bf16_wgmma_kernel, kSmemBytes);
  bf16_wgmma_kernel<<<grid, kThreads, kSmemBytes, cuda::stream(device)>>>(map_a, map_b, g, km.stride_a == 0,
                                                                           km.stride_b == 0);
  MINIDL_LAUNCH_CHECK();
  return true;
}

}  // namespace

void register_matmul_bf16_wgmma_cuda() {
  // portable + 5, just below the TF32 kernels (portable + 6 to 9): far below cuBLAS, so it serves a call
  // only when selected by name, or under --precision bf16 when every kernel above declines.
  register_kernel(keys::matmul, DeviceType::cuda, kName, Priority::portable + 5,
                  "BF16 tensor cores: operands rounded to bfloat16 by a pre-pass, Hopper wgmma m64n256k16 with "
                  "float32 accumulation, tf32_wgmma_v3's TMA/mbarrier/cluster pipeline with 64-element K "
                  "slices (only under --precision bf16 or when selected; sm_90a, compute capability 9.0)",
                  cuda::matmul_entry<run_bf16_wgmma>);
}

}  // namespace minidl
