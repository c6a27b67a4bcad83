// cuda/sgemm_common.cuh — what the float32 GEMM ladder after v3 (cuda/matmul_v4_warptiled.cu ...
// cuda/matmul_splitk.cu) and the TF32 tensor-core kernels (cuda/matmul_tf32_*.cu) share. docs/gemm-ladder.md
// walks through the steps.
//
// The problem is matmul's (ops/kernel_signatures.h), as one cuda::GemmBatch (cuda/gemm_batch.h) with
// group = 1: for each batch entry r,   C_r [M, N] = op(A_r) [M, K] op(B_r) [K, N].
//
// One view of both operands. op(A) is [M, K] and op(B)^T is [N, K], so both are "MN x K" matrices and
// every loader below speaks of element (mn, k). How that element is stored depends on the transpose flag:
//   K-contiguous  (A plain [M, K], B transposed [N, K]):   x[mn * ld + k]
//   MN-contiguous (A transposed [K, M], B plain [K, N]):   x[k * ld + mn]
// A kernel template takes K_CONTIG for each operand (A: !trans_a, B: trans_b), so the four transpose
// combinations are four instantiations of one kernel, and no flag is tested in an inner loop.
//
// Shared memory tiles hold a BMN x BK slice of an operand in one of three layouts (the Smem* structs):
// k-major rows padded by 4 floats (the SIMT kernels: a row of BMN values per k, read as float4s), the
// same padded by 8 or K-major rows padded by 4 (the mma.sync kernel: conflict-free fragment reads), and
// K-major rows of 32 floats with the 128-byte swizzle (the wgmma kernels, with their helpers below).
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/dispatch.h"
#include "cuda/cuda_common.h"
#include "cuda/kernel_helpers.h"
#include "cuda/gemm_batch.h"

namespace minidl {
namespace cuda {

// ---------------------------------------------------------------- the problem, on the host

// matmul's call as a GemmBatch: a [B, ra, ca], b [B, rb, cb], out [B, M, N], all contiguous float32.
// The vec_* flags say whether rows may be read as 16-byte words (base, row length and batch stride all
// multiples of 4 floats).
inline GemmBatch matmul_gemm_batch(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  GemmBatch g;
  g.batch = out.size(0);
  g.M = out.size(1);
  g.N = out.size(2);
  g.K = trans_a ? a.size(1) : a.size(2);
  g.A = a.data<float>();
  g.lda = a.size(2);
  g.stride_a = g.M * g.K;
  g.B = b.data<float>();
  g.ldb = b.size(2);
  g.stride_b = g.K * g.N;
  g.C = out.data<float>();
  g.ldc = g.N;
  g.stride_c = g.M * g.N;
  g.group = 1;
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.vec_a = rows_aligned(g.A, g.lda, g.stride_a);
  g.vec_b = rows_aligned(g.B, g.ldb, g.stride_b);
  g.vec_c = rows_aligned(g.C, g.ldc, g.stride_c);
  return g;
}

// The limits every kernel of the ladder checks before launching (it declines otherwise): tile
// coordinates are 32-bit (M, N, K below 2^31 - 256, so that m0 + BM never overflows), the grid has at
// most 65535 row tiles (gridDim.y) and 65535 batch entries times K splits (gridDim.z).
inline bool ladder_fits(const GemmBatch& g, int bm, int64_t splits = 1) {
  constexpr int64_t kMaxDim = INT32_MAX - 256;
  return g.M <= kMaxDim && g.N <= kMaxDim && g.K <= kMaxDim && (g.M + bm - 1) / bm <= 65535 &&
         g.batch * splits <= 65535;
}

// TF32 tensor-core kernels serve a call only when MINIDL_TF32=1 (the switch cuBLAS and cuDNN obey, see
// kernel_helpers.h) or when the user selected that very kernel by name (--kernel matmul=tf32_mma,
// MINIDL_KERNELS, the test sweeps, `minidl bench`): float32 results must not silently lose precision.
inline bool tf32_kernel_allowed(const char* name) {
  return tf32_enabled() || KernelRegistry::instance().is_selected("matmul", DeviceType::cuda, name);
}

// Raises a kernel's dynamic shared-memory limit when it needs more than the default 48 KiB (called
// before every launch: a cheap driver call, and per device, which a static flag would not be).
template <class Kernel>
void allow_dynamic_smem(Kernel* kernel, size_t bytes) {
  if (bytes > 48 * 1024)
    MINIDL_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

// The MatmulKernel entry of a ladder kernel whose work is `bool Run(const GemmBatch&, int device)`:
// float32 only (the ladder declines float64; v1, v2 and cuBLAS take it), the device made current, an
// empty output served without a launch. Run returns false to decline.
template <bool (*Run)(const GemmBatch&, int)>
bool matmul_entry(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  if (out.dtype() != DType::float32) return false;
  const int device = out.device().index;
  set_device(device);
  if (out.numel() == 0) return true;
  return Run(matmul_gemm_batch(a, b, out, trans_a, trans_b), device);
}

// The call with both operands K-major and 16-byte aligned, the only form the wgmma kernels from
// tf32_wgmma_v2 on take (wgmma reads TF32 operands K-major only; TMA needs 16-byte aligned rows): g with
// A stored [M, K] and B as B^T stored [N, K] (!trans_a, trans_b, vec_a, vec_b). An operand already so is
// used in place; any other is copied first, by a pre-pass queued on the device's stream, into scratch
// rows of K rounded up to 4 floats (zeros past K). The scratch lives as long as the KMajorGemm: keep it
// until the kernels that read it are queued. Defined in cuda/matmul_tf32_wgmma_v2.cu (sm_90a builds only).
struct KMajorGemm {
  GemmBatch g;
  Tensor a_storage, b_storage;  // the packed copies, when made
};
KMajorGemm k_major_gemm(const GemmBatch& g, int device);

// The operands of bf16_wgmma: op(A) as bfloat16 rows [M, lda] and op(B)^T as bfloat16 rows [N, ldb],
// K-major, lda and ldb multiples of 8 (16-byte rows), entry r at A + r * stride_a (0: one matrix for
// every entry), rounded to nearest even by a pre-pass queued on the device's stream (the same pass as
// k_major_gemm's, writing bfloat16). Keep the KMajorBf16 until the kernels that read it are queued.
// Defined in cuda/matmul_tf32_wgmma_v2.cu (sm_90a builds only).
struct KMajorBf16 {
  const void* A = nullptr;
  const void* B = nullptr;
  int64_t lda = 0, ldb = 0, stride_a = 0, stride_b = 0;
  Tensor a_storage, b_storage;
};
KMajorBf16 k_major_bf16(const GemmBatch& g, int device);

// ---------------------------------------------------------------- the problem, on the device

// One operand of one batch entry, as "MN x K" (see the top of the file). Elements with mn >= mn_extent
// or k >= k_extent read as zero; k_extent is K, or the end of this block's K range under split-K.
struct Operand {
  const float* ptr;
  int64_t ld;
  int mn_extent, k_extent;
  bool vec;  // 16-byte accesses allowed along the stored rows
};

__device__ __forceinline__ Operand make_operand(const float* base, int64_t ld, int64_t stride, int64_t r, int mn_extent,
                                                int k_extent, bool vec) {
  return Operand{base + r * stride, ld, mn_extent, k_extent, vec};
}

// The stored-matrix coordinates of element (mn, k): row and column, and the matrix extents.
template <bool K_CONTIG>
struct Stored {
  int row, col, rows, cols;
  __device__ __forceinline__ Stored(const Operand& x, int mn, int k)
      : row(K_CONTIG ? mn : k),
        col(K_CONTIG ? k : mn),
        rows(K_CONTIG ? x.mn_extent : x.k_extent),
        cols(K_CONTIG ? x.k_extent : x.mn_extent) {}
  __device__ __forceinline__ const float* ptr(const Operand& x) const { return x.ptr + static_cast<int64_t>(row) * x.ld + col; }
};

// ---------------------------------------------------------------- shared-memory tile layouts
// offset(mn, k) in floats. kChunksAlongK / kChunksAlongMN: four elements consecutive along k (along mn),
// starting at a multiple of 4, are consecutive and 16-byte aligned in shared memory, so one 16-byte
// copy can move them.

// S[k][mn], rows of LD floats (LD = BMN + padding).
template <int LD>
struct SmemMNMajor {
  static_assert(LD % 4 == 0, "rows must stay 16-byte aligned");
  static constexpr bool kChunksAlongK = false, kChunksAlongMN = true;
  __device__ __forceinline__ static int offset(int mn, int k) { return k * LD + mn; }
};

// S[mn][k], rows of LD floats (LD = BK + padding).
template <int LD>
struct SmemKMajor {
  static_assert(LD % 4 == 0, "rows must stay 16-byte aligned");
  static constexpr bool kChunksAlongK = true, kChunksAlongMN = false;
  __device__ __forceinline__ static int offset(int mn, int k) { return mn * LD + k; }
};

// S[mn][k] with rows of 32 floats (128 bytes) and the 128-byte swizzle of Hopper's wgmma (and TMA): in
// each group of 8 rows (1024 bytes), the 16-byte chunk c of row r is stored at chunk c ^ (r % 8). The tile
// must start at a 1024-byte aligned address. The XOR spreads a column of chunks over all 32 banks.
struct SmemKMajorSwizzle128 {
  static constexpr bool kChunksAlongK = true, kChunksAlongMN = false;
  __device__ __forceinline__ static int offset(int mn, int k) { return mn * 32 + (((k >> 2) ^ (mn & 7)) << 2) + (k & 3); }
};

// ---------------------------------------------------------------- cp.async (sm_80+)
// Copies from global to shared memory without passing through registers, completing asynchronously:
// a thread groups its copies with commit and waits for all but the newest N groups with wait<N>. The
// source size operand (0 to the copy size) reads only that many bytes and fills the rest with zeros:
// that is how tiles hanging over the matrix edge get their zeros.
__device__ __forceinline__ uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async_4(float* dst, const float* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_address(dst)), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_16(float* dst, const float* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(dst)), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Starts the copy of the BMN x BK tile at (mn0, k0) of x into shared memory laid out as Layout. THREADS
// threads call it together. Two ways, both coalesced along the stored rows:
//   - 16-byte copies when rows are aligned and the layout keeps 4 consecutive elements together:
//     consecutive threads take consecutive 16-byte chunks of a stored row;
//   - 4-byte copies otherwise (unaligned rows, or a transposing layout): a warp takes 8 consecutive
//     elements of 4 stored rows, 32-byte pieces of memory. For the transposing layouts used here that
//     warp writes 32 different banks (S[k][mn] with LD = 4 mod 32: bank 4k + mn; the swizzled K-major
//     layout: bank ((k/4 ^ mn%8) * 4 + k%4), mn%8 and k%4 running over the warp).
// The copy loops are not unrolled: unrolled, the compiler keeps every copy's addresses live across the
// FMA loop of the pipelined kernels and spills (ptxas -v); a few extra instructions per slice are cheap.
template <int BMN, int BK, int THREADS, bool K_CONTIG, class Layout>
__device__ __forceinline__ void cp_async_tile(float* smem, const Operand& x, int mn0, int k0) {
  constexpr int kAlong = K_CONTIG ? BK : BMN;   // tile extent along the stored rows
  constexpr int kAcross = K_CONTIG ? BMN : BK;  // tile extent across them
  constexpr bool kChunked = K_CONTIG ? Layout::kChunksAlongK : Layout::kChunksAlongMN;
  const int tid = static_cast<int>(threadIdx.x);
  if constexpr (kChunked) {
    if (x.vec) {
      constexpr int kChunks = kAlong / 4 * kAcross;
      static_assert(kAlong % 4 == 0 && kChunks % THREADS == 0, "the tile must split into 16-byte chunks per thread");
#pragma unroll 1
      for (int it = 0; it < kChunks / THREADS; ++it) {
        const int v = it * THREADS + tid;
        const int along = (v % (kAlong / 4)) * 4, across = v / (kAlong / 4);
        const int mn = K_CONTIG ? across : along, k = K_CONTIG ? along : across;
        const Stored<K_CONTIG> e(x, mn0 + mn, k0 + k);
        const int bytes = e.row < e.rows ? 4 * max(0, min(4, e.cols - e.col)) : 0;
        cp_async_16(smem + Layout::offset(mn, k), bytes > 0 ? e.ptr(x) : x.ptr, bytes);
      }
      return;
    }
  }
  constexpr int kElems = kAlong * kAcross;
  static_assert(kAlong % 8 == 0 && kAcross % 4 == 0 && kElems % THREADS == 0 && THREADS % 32 == 0,
                "the tile must split into warp blocks of 8 x 4 elements");
#pragma unroll 1
  for (int it = 0; it < kElems / THREADS; ++it) {
    const int v = it * THREADS + tid, lane = v % 32, w = v / 32;
    const int along = (w % (kAlong / 8)) * 8 + lane % 8, across = (w / (kAlong / 8)) * 4 + lane / 8;
    const int mn = K_CONTIG ? across : along, k = K_CONTIG ? along : across;
    const Stored<K_CONTIG> e(x, mn0 + mn, k0 + k);
    const bool in = e.row < e.rows && e.col < e.cols;
    cp_async_4(smem + Layout::offset(mn, k), in ? e.ptr(x) : x.ptr, in ? 4 : 0);
  }
}

// ---------------------------------------------------------------- wgmma (sm_90a: the tf32_wgmma kernels)
// Hopper's warpgroup MMA reads its operands from shared memory through 64-bit descriptors and runs
// asynchronously: wgmma_fence before a batch, wgmma_commit to close it as a group, wgmma_wait<N> to wait
// until at most N groups are still running. Only files compiled for sm_90a may call these (ptxas rejects
// wgmma elsewhere); an inline function nobody calls is not emitted, so other files may include this one.

// The shared-memory matrix descriptor of a K-major tile with the 128-byte swizzle (SmemKMajorSwizzle128)
// starting at `addr` (a shared-space byte address, 1024-byte aligned up to the k-step offset).
__device__ __forceinline__ uint64_t smem_descriptor_sw128(uint32_t addr) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4)      // bits 0-13: start address / 16
         | (static_cast<uint64_t>(1) << 16)                // bits 16-29: leading byte offset / 16 (unused here)
         | (static_cast<uint64_t>(1024 >> 4) << 32)        // bits 32-45: stride byte offset / 16 (8 rows)
         | (static_cast<uint64_t>(1) << 62);               // bits 62-63: swizzle mode 1 = 128 bytes
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Orders this thread's generic-proxy accesses to shared memory (cp.async writes, plain reads) with the
// async proxy's (wgmma reads), which a barrier alone does not order.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// d += A B for one k-step (tf32_wgmma_v2 and v3): A is 64 x 8 (descriptor desc_a), B is 8 x 256 given as
// its 256 x 8 transpose (desc_b), d is the warpgroup's 64 x 256 accumulator. Thread (warp w of the
// warpgroup, lane 4g + t) holds d[4j + e] = D[16w + g + 8(e / 2)][8j + 2t + e % 2], j = 0..31
// (m64n128k8's layout, twice as wide).
__device__ __forceinline__ void wgmma_m64n256k8_tf32(float (&d)[128], uint64_t desc_a, uint64_t desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7,"
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
      " %128, %129, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
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

// Tells the compiler the accumulators may change here (beside wgmma_fence and after wgmma_wait): keeps
// it from moving their uses across the asynchronous instructions. Emits no instruction.
template <int N>
__device__ __forceinline__ void fence_accumulators(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Writes a warpgroup's 64 x 256 accumulator (wgmma_m64n256k8_tf32's layout) to output rows row0 .. row0 + 63
// and columns n0 .. n0 + 255 of batch entry r (tf32_wgmma_v2 and v3): thread (warp w of the warpgroup, lane
// 4g + t) holds acc[4j + e] = D[16w + g + 8(e / 2)][8j + 2t + e % 2]; a pair of adjacent columns is one
// 8-byte store where C's rows are 16-byte aligned (vec_c; the column is even) and both exist. Rows >= M (a
// ragged tile, or a cluster's padding block) and columns >= N are not written.
__device__ __forceinline__ void store_m64n256_tile(const float (&acc)[128], const GemmBatch& g, int row0, int n0,
                                                   int64_t r) {
  const int M = static_cast<int>(g.M), N = static_cast<int>(g.N);
  const int warp = (static_cast<int>(threadIdx.x) % 128) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  float* C = g.C + r * g.stride_c;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = row0 + warp * 16 + lane / 4 + 8 * h;
    if (row >= M) continue;
    float* c_row = C + static_cast<int64_t>(row) * g.ldc;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const int col = n0 + j * 8 + 2 * (lane % 4);
      const float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
      if (g.vec_c && col + 1 < N) {
        *reinterpret_cast<float2*>(c_row + col) = make_float2(v0, v1);
      } else {
        if (col < N) c_row[col] = v0;
        if (col + 1 < N) c_row[col + 1] = v1;
      }
    }
  }
}

// ---------------------------------------------------------------- the SIMT kernels' register tiles (v4-v7)

// Block tile BM x BN, K slices of BK, warp tile WM x WN; every thread owns 8 x 8 outputs: rows
// {0, WM/2} + lane_m*4 + {0..3} and columns {0, WN/2} + lane_n*4 + {0..3} of its warp's tile, so the
// float4 reads of a k-row of the staged tiles are consecutive 16-byte words across lanes (no bank
// conflicts), and a warp reads only WM + WN floats of shared memory per k (a squarish warp footprint).
// Shared rows are padded by 4 floats: transposing stores (S[k][mn] from K-contiguous rows) then spread
// over the banks (see StagedTile) while rows stay 16-byte aligned.
template <int BM_, int BN_, int BK_, int WM_, int WN_>
struct WarpTiling {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_;
  static constexpr int kWarpsN = BN / WN, kWarps = (BM / WM) * (BN / WN), kThreads = 32 * kWarps;
  static constexpr int kLanesN = WN / 8;  // lanes along n in a warp
  static constexpr int kLdA = BM + 4, kLdB = BN + 4;
  // Resident blocks per multiprocessor the kernels ask for (__launch_bounds__): 16 warps, a cap of 128
  // registers per thread, except the 2-warp tile, which asks for 12 warps (a 168-register cap): at 128 its
  // kernels spilled 24-40 bytes (ptxas -v), the addressing of both operands being live across the FMAs.
  static constexpr int kMinBlocks = kThreads == 64 ? 6 : 512 / kThreads;
  // Shared buffers of the cp.async pipeline (cuda/sgemm_cp_async.cuh): 2 (K slices of 16) or 3 (of 8)
  // slices, 32 or 24 k, in flight while one is multiplied.
  static constexpr int kStages = BK >= 16 ? 3 : 4;
  static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must cover the block tile");
  static_assert((WM / 8) * (WN / 8) == 32, "a warp's 32 lanes own 8 x 8 outputs each");
  static_assert(BK % 8 == 0 && BM % 16 == 0 && BN % 16 == 0, "loader granularity");
};

// The block tiles the ladder uses (names are BMxBN): 8 warps on 128 x 128, 4 on 128 x 64 and
// 64 x 128, 2 on 64 x 64. The 2-warp tile takes K slices of 8: with 16, its 64 threads would each stage
// 4 float4s per operand and spill at the 128-register cap of 16 resident warps (ptxas -v).
using Tile128x128 = WarpTiling<128, 128, 16, 64, 32>;
using Tile128x64 = WarpTiling<128, 64, 16, 64, 32>;
using Tile64x128 = WarpTiling<64, 128, 16, 32, 64>;
using Tile64x64 = WarpTiling<64, 64, 8, 32, 64>;

// One block per BM x BN tile of each output: gridDim.z = batch entries x K splits.
template <class Cfg>
dim3 tile_grid(const GemmBatch& g, int64_t splits = 1) {
  return dim3(static_cast<unsigned>((g.N + Cfg::BN - 1) / Cfg::BN), static_cast<unsigned>((g.M + Cfg::BM - 1) / Cfg::BM),
              static_cast<unsigned>(g.batch * splits));
}

// The fixed tile rule of v4, v5, v6 and splitk (v3's, use_128_tiles): calls launch(Tile128x128{}) when
// 128 x 128 tiles give every multiprocessor a block, else launch(Tile64x64{}).
template <class Launch>
void with_rule_tile(const GemmBatch& g, int device, Launch&& launch) {
  if (use_128_tiles(g.M, g.N, g.batch, properties(device).multiProcessorCount))
    launch(Tile128x128{});
  else
    launch(Tile64x64{});
}

// This thread's first output row and column inside the block tile.
template <class Cfg>
__device__ __forceinline__ int2 thread_tile_origin() {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  return make_int2((warp / Cfg::kWarpsN) * Cfg::WM + (lane / Cfg::kLanesN) * 4,
                   (warp % Cfg::kWarpsN) * Cfg::WN + (lane % Cfg::kLanesN) * 4);
}

// acc += As^T Bs over one staged slice: As is [BK][kLdA] (As[k][m]), Bs is [BK][kLdB] (Bs[k][n]).
// Per k: 4 float4 shared loads feed 64 FMAs. The K order is 0, 1, 2, ... in every kernel of the
// ladder, so all of them (and all tile sizes) give bit-identical results for the same K range.
template <class Cfg>
__device__ __forceinline__ void fma_slice(const float* As, const float* Bs, int m, int n, float (&acc)[8][8]) {
#pragma unroll
  for (int k = 0; k < Cfg::BK; ++k) {
    const float4 a_lo = *reinterpret_cast<const float4*>(As + k * Cfg::kLdA + m);
    const float4 a_hi = *reinterpret_cast<const float4*>(As + k * Cfg::kLdA + m + Cfg::WM / 2);
    const float4 b_lo = *reinterpret_cast<const float4*>(Bs + k * Cfg::kLdB + n);
    const float4 b_hi = *reinterpret_cast<const float4*>(Bs + k * Cfg::kLdB + n + Cfg::WN / 2);
    const float a[8] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w};
    const float b[8] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
}

template <int R, int C>
__device__ __forceinline__ void zero(float (&acc)[R][C]) {
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int j = 0; j < C; ++j) acc[i][j] = 0.0f;
}

// Writes the 8 x 8 tile whose first element is C(m, n): register row i is C row m + (i/4)*WM/2 + i%4,
// columns likewise. float4 stores where the row is aligned (vec) and all four columns exist.
template <class Cfg>
__device__ __forceinline__ void store_thread_tile(const float (&acc)[8][8], float* C, int64_t ldc, int M, int N, int m,
                                                  int n, bool vec) {
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int row = m + (i / 4) * (Cfg::WM / 2) + i % 4;
    if (row >= M) continue;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int col = n + half * (Cfg::WN / 2);
      float* out = C + static_cast<int64_t>(row) * ldc + col;
      const float* v = &acc[i][half * 4];
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

// A BMN x BK operand tile moved global -> registers -> shared memory S[k][mn] (rows of LDS floats), the
// way v4 and v5 stage their tiles (v6 replaces it with cp_async_tile). Each thread holds kPerThread
// float4 chunks of 4 elements consecutive in memory; out-of-range elements are zeros.
//   - MN-contiguous rows: chunks run along mn, consecutive threads on consecutive chunks; one float4
//     store each.
//   - K-contiguous rows: chunks run along k and are stored as 4 scalars down a column of S. A warp
//     takes 16 rows x 2 chunks, so with LDS = 4 mod 32 each of the 4 stores hits bank
//     16*chunk + 4*j + row (+ const): 32 different banks.
template <int BMN, int BK, int THREADS, int LDS, bool K_CONTIG>
struct StagedTile {
  static constexpr int kChunks = BMN * BK / 4;
  static constexpr int kPerThread = kChunks / THREADS;
  static_assert(kChunks % THREADS == 0 && BMN % 16 == 0 && BK % 8 == 0, "tile must split into chunks per thread");
  static_assert(LDS % 32 == 4, "padding that keeps the transposing stores conflict-free");
  float4 r[kPerThread];

  __device__ __forceinline__ static void chunk_origin(int v, int& mn, int& k) {
    if (K_CONTIG) {
      const int lane = v % 32, w = v / 32;
      mn = (w % (BMN / 16)) * 16 + lane % 16;
      k = (w / (BMN / 16)) * 8 + (lane / 16) * 4;
    } else {
      mn = (v % (BMN / 4)) * 4;
      k = v / (BMN / 4);
    }
  }

  __device__ __forceinline__ void load(const Operand& x, int mn0, int k0) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      int mn, k;
      chunk_origin(i * THREADS + static_cast<int>(threadIdx.x), mn, k);
      const Stored<K_CONTIG> e(x, mn0 + mn, k0 + k);  // the chunk is e.col .. e.col + 3 of stored row e.row
      const float* p = e.ptr(x);
      if (x.vec && e.row < e.rows && e.col + 3 < e.cols) {
        r[i] = *reinterpret_cast<const float4*>(p);
      } else {
        const bool row_ok = e.row < e.rows;
        r[i].x = (row_ok && e.col + 0 < e.cols) ? p[0] : 0.0f;
        r[i].y = (row_ok && e.col + 1 < e.cols) ? p[1] : 0.0f;
        r[i].z = (row_ok && e.col + 2 < e.cols) ? p[2] : 0.0f;
        r[i].w = (row_ok && e.col + 3 < e.cols) ? p[3] : 0.0f;
      }
    }
  }

  __device__ __forceinline__ void store(float* smem) const {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      int mn, k;
      chunk_origin(i * THREADS + static_cast<int>(threadIdx.x), mn, k);
      if (K_CONTIG) {
        smem[(k + 0) * LDS + mn] = r[i].x;
        smem[(k + 1) * LDS + mn] = r[i].y;
        smem[(k + 2) * LDS + mn] = r[i].z;
        smem[(k + 3) * LDS + mn] = r[i].w;
      } else {
        *reinterpret_cast<float4*>(smem + k * LDS + mn) = r[i];
      }
    }
  }
};

// Launches KERNEL<TA, TB> for the call's transpose flags: the four instantiations of a kernel template.
// Use: launch_for_flags(g.trans_a, g.trans_b, [&](auto ta, auto tb) { my_kernel<..., ta, tb><<<...>>>(...); });
template <class Fn>
void launch_for_flags(bool trans_a, bool trans_b, Fn&& fn) {
  if (!trans_a && !trans_b) fn(std::false_type{}, std::false_type{});
  if (trans_a && !trans_b) fn(std::true_type{}, std::false_type{});
  if (!trans_a && trans_b) fn(std::false_type{}, std::true_type{});
  if (trans_a && trans_b) fn(std::true_type{}, std::true_type{});
}

}  // namespace cuda
}  // namespace minidl
