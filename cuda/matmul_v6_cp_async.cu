// cuda/matmul_v6_cp_async.cu — matmul kernel "v6_cp_async", step 6 of the FP32 GEMM ladder
// (docs/gemm-ladder.md): out[r] = op(a[r]) op(b[r]) in exact float32 FMAs, any M, N, K, all four
// transpose flags, float32 only, compute capability 8.0 and up. Accumulation convention: out is
// overwritten (=).
//
// What changes from v5 (cuda/matmul_v5_double_buffered.cu): the staging goes around the registers.
// cp.async (sm_80+) copies global memory straight into shared memory and completes in the background;
// a ring of 3 buffers (4 for the small tile) keeps 2 (3) K slices in flight while one is multiplied
// (the pipeline is drawn in cuda/sgemm_cp_async.cuh):
//
//     v5:  global -> registers (live across the FMAs) -> shared, 2 buffers, 1 slice ahead
//     v6:  global ---------- cp.async --------------> shared, 3 buffers, 2 slices ahead
//
// Rows that are contiguous along the tile's shared rows (A transposed, B plain) move as 16-byte copies
// when aligned; the others (A plain, B transposed) move as 4-byte copies that transpose on the way
// (cp.async cannot transpose inside a 16-byte copy), a warp writing 32 different banks
// (cuda/sgemm_common.cuh, cp_async_tile). Odd edges are zero-filled by the copy itself.
// Why faster: the registers that v5 kept for staging go back to the compiler, the latency hiding is two
// slices deep instead of one, and no thread executes the shared-memory stores.
// Tiles: v4's rule (128 x 128, 3 stages, when it fills the GPU; else 64 x 64, 4 stages).
#include "cuda/sgemm_cp_async.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

bool run_v6_cp_async(const cuda::GemmBatch& g, int device) {
  if (!cuda::cp_async_fits<cuda::Tile64x64>(g, 1, device)) return false;
  cuda::with_rule_tile(g, device, [&](auto tile) {
    cuda::launch_sgemm_cp_async<decltype(tile)>(g, cuda::KSplit{}, cuda::stream(device));
  });
  return true;
}

}  // namespace

void register_matmul_v6_cp_async_cuda() {
  register_kernel(keys::matmul, DeviceType::cuda, "v6_cp_async", Priority::tuned + 3,
                  "v4 tiles fed by cp.async straight to shared memory, 3-4 stage pipeline (f32, sm_80+)",
                  cuda::matmul_entry<run_v6_cp_async>);
}

}  // namespace minidl
