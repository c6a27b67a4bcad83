// cuda/hopper_tma.cuh — the Hopper (sm_90) machinery the TMA + mbarrier GEMM kernels share
// (tf32_wgmma_v3, bf16_wgmma): mbarriers, cluster barriers and addresses, TMA tensor copies (plain and
// multicast), setmaxnreg, and on the host the tensor maps that describe a K-major operand to the copy
// engine. cuda/matmul_tf32_wgmma_v3.cu explains how a kernel uses them (producer and consumer
// warpgroups, full/empty barriers per stage, clusters sharing a tile by multicast).
//
// The device functions assemble to sm_90 instructions: only files compiled for sm_90a may call them (an
// inline function nobody calls is not emitted). The host functions reach cuTensorMapEncodeTiled through
// the runtime's driver entry point, so minidl does not link libcuda.
#pragma once
#include <cuda.h>          // CUtensorMap and its enums (types only: no libcuda function is linked)
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.h"

namespace minidl {
namespace cuda {

// ---------------------------------------------------------------- mbarrier and TMA (device side)
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

// One arrival on an mbarrier of any block of the cluster (bar from cluster_address). The arrival orders
// this thread's earlier memory operations at block scope only (PTX's default, .release.cta), as CUTLASS's
// ClusterBarrier::arrive does: the kernels use it to say "my wgmmas have finished reading this stage"
// (wgmma.wait_group already guarantees that), and no data written by this thread travels with it. A
// release at cluster scope would make every arrival wait for a cluster-wide memory fence first.
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(bar) : "memory");
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

// Whether the phase of the given parity has completed (acquire at block scope, PTX's default). Enough for
// both uses: on a full barrier the consumer then reads what the TMA unit wrote, which the transaction
// count orders; on an empty barrier the producer reads nothing, it only issues the next copy into the stage.
__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
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
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  if (mbar_try_wait(bar, parity)) return;
  const uint64_t start = globaltimer_ns();
  while (!mbar_try_wait(bar, parity))
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

// ---------------------------------------------------------------- tensor maps (host side)

// cuTensorMapEncodeTiled from the driver the runtime loaded, looked up once; null when the driver is
// older than CUDA 12.0 (then the kernels that need it decline).
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
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

// The tensor map of a K-major operand x (elements of `element_bytes` bytes and TMA type `type`; entry e
// at x + e * stride elements, rows of ld elements, 16-byte aligned): dimensions, innermost first,
// (K, mn_extent, entries), boxes of box_k x box_rows x 1 landing with the 128-byte swizzle (box_k *
// element_bytes must be 128: one swizzle row); k >= K and rows >= mn_extent read as zeros. A batch
// stride of 0 (one matrix for every entry) becomes a batch extent of 1, read at entry 0 (the kernels
// test the stride). `kernel` names the caller in the error.
inline CUtensorMap k_major_map(PFN_cuTensorMapEncodeTiled_v12000 encode, const void* x, CUtensorMapDataType type,
                               size_t element_bytes, int64_t ld, int64_t stride, int64_t batch, int64_t mn_extent,
                               int64_t K, int box_k, int box_rows, const char* kernel) {
  const bool one_matrix = stride == 0;
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(K), static_cast<cuuint64_t>(mn_extent),
                              static_cast<cuuint64_t>(one_matrix ? 1 : batch)};
  // Byte strides of dimensions 1 and 2 (dimension 0 is contiguous); multiples of 16 as TMA requires.
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(ld) * element_bytes,
                                 static_cast<cuuint64_t>(one_matrix ? mn_extent * ld : stride) * element_bytes};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(box_k), static_cast<cuuint32_t>(box_rows), 1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  CUtensorMap map;
  const CUresult res = encode(&map, type, 3, const_cast<void*>(x), dims, strides, box, element_strides,
                              CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  MINIDL_CHECK(res == CUDA_SUCCESS, kernel, ": cuTensorMapEncodeTiled failed (CUresult ", static_cast<int>(res),
               ") for K ", K, ", rows ", mn_extent, ", ld ", ld, ", batch stride ", stride);
  return map;
}

}  // namespace cuda
}  // namespace minidl
