// cuda/matmul_tf32_wgmma.cu — matmul kernel "tf32_wgmma", the Hopper step of the GEMM ladder
// (docs/gemm-ladder.md): out[r] = op(a[r]) op(b[r]) with the products on TF32 tensor cores through
// wgmma, any M, N, K, all four transpose flags, float32 only, compute capability 9.0 only. Accumulation
// convention: out is overwritten (=).
//
// Built for sm_90a alone (wgmma exists only there): CMakeLists.txt compiles this file in its own object
// library with -gencode arch=compute_90a,code=sm_90a, and only when the CUDA architectures include 90;
// the #error below stops any other device pass. At run time the kernel declines unless the GPU is 9.0.
// Precision: as tf32_mma, except that the inputs reach the tensor cores straight from shared memory,
// without a rounding step: the hardware uses their top 19 bits (truncation, at most 2^-10 relative per
// input, against 2^-11 for tf32_mma's round-to-nearest). Declines unless MINIDL_TF32=1 or selected by
// name (cuda/sgemm_common.cuh, tf32_kernel_allowed).
//
// What changes from tf32_mma (cuda/matmul_tf32_mma.cu): Hopper's warpgroup MMA. Four warps (a
// warpgroup, 128 threads) issue one wgmma.mma_async.m64n128k8 together: a 64 x 8 tile of A times an
// 8 x 128 tile of B (65,536 FMAs, 64x one mma.sync), read by the tensor cores directly from shared
// memory through two 64-bit descriptors, accumulating into 64 registers per thread. No fragment loads,
// no conversions: the warps only issue copies and wgmmas. The instruction is asynchronous (fence,
// commit_group, wait_group).
//
//   block tile 128 x 128 = 2 warpgroups x (64 x 128); K slices of 32 = 4 wgmma k-steps of 8
//   shared tiles: op(A) as [128 rows (m)][32 k], op(B)^T as [128 rows (n)][32 k]: "K-major", the only
//   layout wgmma takes for TF32 (its transpose bits exist only for 16-bit types), each row 128 bytes,
//   with the 128-byte swizzle: in every 8-row group (1024 bytes) chunk c (16 bytes) of row r sits at
//   chunk c ^ r (cuda/sgemm_common.cuh, SmemKMajorSwizzle128):
//
//       row 0:  c0 c1 c2 c3 c4 c5 c6 c7        descriptor: start address / 16, leading byte offset 1
//       row 1:  c1 c0 c3 c2 c5 c4 c7 c6        (unused by swizzled K-major layouts), stride byte offset
//       row 2:  c2 c3 c0 c1 c6 c7 c4 c5        1024 / 16 (one 8-row group to the next), swizzle mode 1
//       ...                                    (128 B); k-step j starts 32 * j bytes into the rows (the
//       row 7:  c7 c6 c5 c4 c3 c2 c1 c0        hardware applies the XOR to the final address)
//
// Loads: cp.async, 3 stages (v6's pipeline): 16-byte copies for K-contiguous aligned operands (A plain,
// B transposed), 4-byte copies that transpose into the K-major layout otherwise. After a thread's copies
// land it executes fence.proxy.async: cp.async writes through the generic proxy and wgmma reads through
// the async proxy, which a barrier alone does not order. (The same fence, one iteration later, also
// orders the wgmma reads of a stage, complete after wait_group 0, before the copies that refill it.)
// Not done (what cuBLAS and the public worklogs add): TMA bulk copies with mbarriers (cuTensorMapEncodeTiled
// needs the driver API), a producer warpgroup with setmaxnreg, keeping one wgmma group in flight
// (wait_group 1) across slices, 128 x 256 tiles, clusters, split-K.
// Why faster: wgmma is the only way to Hopper's full TF32 rate (mma.sync reaches roughly 60% of it).
#include "cuda/sgemm_common.cuh"
#include "ops/kernel_signatures.h"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "cuda/matmul_tf32_wgmma.cu uses wgmma: compile it for sm_90a only (-gencode arch=compute_90a,code=sm_90a)"
#endif

namespace minidl {

namespace {

using cuda::GemmBatch;
using cuda::Operand;

constexpr char kName[] = "tf32_wgmma";
constexpr int kBM = 128, kBN = 128, kBK = 32, kStages = 3, kThreads = 256;  // 2 warpgroups
constexpr int kTileFloats = kBM * kBK;  // one operand tile: 128 rows of 32 floats (kBN = kBM)
static_assert(kBN == kBM && kBK == 32, "tiles are 128 rows of one 128-byte swizzle row each");
// Stages of A, then stages of B, plus up to 1024 bytes to align the first tile (the swizzle pattern is
// anchored to 1024-byte boundaries of the address).
constexpr size_t kSmemBytes = sizeof(float) * 2 * kStages * kTileFloats + 1024;

// d += A B for one k-step: A is 64 x 8 (descriptor desc_a), B is 8 x 128 given as its 128 x 8 transpose
// (desc_b), d is the warpgroup's 64 x 128 accumulator. Thread (warp w of the warpgroup, lane 4g + t)
// holds d[4j + e] = D[16w + g + 8(e / 2)][8j + 2t + e % 2], j = 0..15.
__device__ __forceinline__ void wgmma_m64n128k8_tf32(float (&d)[64], uint64_t desc_a, uint64_t desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7,"
      " %8, %9, %10, %11, %12, %13, %14, %15,"
      " %16, %17, %18, %19, %20, %21, %22, %23,"
      " %24, %25, %26, %27, %28, %29, %30, %31,"
      " %32, %33, %34, %35, %36, %37, %38, %39,"
      " %40, %41, %42, %43, %44, %45, %46, %47,"
      " %48, %49, %50, %51, %52, %53, %54, %55,"
      " %56, %57, %58, %59, %60, %61, %62, %63},"
      " %64, %65, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(1)
      : "memory");
}


template <bool TA, bool TB>
__device__ __forceinline__ void copy_slice(float* tiles, const Operand& a, const Operand& b, int m0, int n0, int k0,
                                           int stage) {
  cuda::cp_async_tile<kBM, kBK, kThreads, !TA, cuda::SmemKMajorSwizzle128>(tiles + stage * kTileFloats, a, m0, k0);
  cuda::cp_async_tile<kBN, kBK, kThreads, TB, cuda::SmemKMajorSwizzle128>(tiles + (kStages + stage) * kTileFloats, b,
                                                                         n0, k0);
}

template <bool TA, bool TB>
__global__ void __launch_bounds__(kThreads, 2) tf32_wgmma_kernel(GemmBatch g) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const uint32_t raw = cuda::smem_address(smem_raw);
  float* tiles = reinterpret_cast<float*>(smem_raw + (1024 - raw % 1024) % 1024);  // A stages, then B stages

  const int M = static_cast<int>(g.M), N = static_cast<int>(g.N), K = static_cast<int>(g.K);
  const int m0 = static_cast<int>(blockIdx.y) * kBM, n0 = static_cast<int>(blockIdx.x) * kBN;
  const int64_t r = blockIdx.z;  // batch entry
  const Operand a = cuda::make_operand(g.A, g.lda, g.stride_a, r, M, K, g.vec_a);
  const Operand b = cuda::make_operand(g.B, g.ldb, g.stride_b, r, N, K, g.vec_b);
  const int wg = static_cast<int>(threadIdx.x) / 128;  // warpgroup: block rows 64 wg .. 64 wg + 63
  const int slices = (K + kBK - 1) / kBK;

  float acc[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = 0.0f;

#pragma unroll
  for (int t = 0; t < kStages - 1; ++t) {
    if (t < slices) copy_slice<TA, TB>(tiles, a, b, m0, n0, t * kBK, t);
    cuda::cp_async_commit();
  }
  for (int t = 0; t < slices; ++t) {
    cuda::cp_async_wait<kStages - 2>();  // this thread's copies of slice t have landed ...
    cuda::fence_proxy_async();           // ... and are visible to the tensor cores' reads ...
    __syncthreads();                     // ... as are everyone's; and both warpgroups finished slice t-1
    const int next = t + kStages - 1;
    if (next < slices) copy_slice<TA, TB>(tiles, a, b, m0, n0, next * kBK, next % kStages);
    cuda::cp_async_commit();

    const int stage = t % kStages;
    const uint64_t desc_a =
        cuda::smem_descriptor_sw128(cuda::smem_address(tiles + stage * kTileFloats + wg * 64 * kBK));
    const uint64_t desc_b = cuda::smem_descriptor_sw128(cuda::smem_address(tiles + (kStages + stage) * kTileFloats));
    cuda::wgmma_fence();
#pragma unroll
    for (int j = 0; j < kBK / 8; ++j)  // k-step j: 8 floats = 32 bytes = 2 units of the address field
      wgmma_m64n128k8_tf32(acc, desc_a + 2 * j, desc_b + 2 * j);
    cuda::wgmma_commit();
    cuda::wgmma_wait<0>();
    cuda::fence_accumulators(acc);
  }
  cuda::cp_async_wait<0>();

  const int warp = (static_cast<int>(threadIdx.x) % 128) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  float* C = g.C + r * g.stride_c;
#pragma unroll
  for (int j = 0; j < 16; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = m0 + wg * 64 + warp * 16 + lane / 4 + (e / 2) * 8;
      const int col = n0 + j * 8 + 2 * (lane % 4) + e % 2;
      if (row < M && col < N) C[static_cast<int64_t>(row) * g.ldc + col] = acc[4 * j + e];
    }
}

bool run_tf32_wgmma(const GemmBatch& g, int device) {
  const cudaDeviceProp& prop = cuda::properties(device);
  if (!cuda::tf32_kernel_allowed(kName) || prop.major != 9 || prop.minor != 0 || !cuda::ladder_fits(g, kBM) ||
      kSmemBytes > prop.sharedMemPerBlockOptin)
    return false;
  const dim3 grid(static_cast<unsigned>((g.N + kBN - 1) / kBN), static_cast<unsigned>((g.M + kBM - 1) / kBM),
                  static_cast<unsigned>(g.batch));
  cuda::launch_for_flags(g.trans_a, g.trans_b, [&](auto ta, auto tb) {
    auto* kernel = tf32_wgmma_kernel<decltype(ta)::value, decltype(tb)::value>;
    cuda::allow_dynamic_smem(kernel, kSmemBytes);
    kernel<<<grid, kThreads, kSmemBytes, cuda::stream(device)>>>(g);
  });
  MINIDL_LAUNCH_CHECK();
  return true;
}

}  // namespace

void register_matmul_tf32_wgmma_cuda() {
  // portable + 7: the TF32 kernels' place, in ladder order (cuda/matmul_tf32_mma.cu says why).
  register_kernel(keys::matmul, DeviceType::cuda, kName, Priority::portable + 7,
                  "TF32 tensor cores: Hopper wgmma m64n128k8 on swizzled shared tiles, cp.async (only "
                  "with MINIDL_TF32=1 or when selected; sm_90a, compute capability 9.0)",
                  cuda::matmul_entry<run_tf32_wgmma>);
}

}  // namespace minidl
