// cuda/device_utils.cuh — small device-side helpers shared by the CUDA kernel files of the runtime:
// the launch preamble, strided indexing, grid-stride loops and warp/block reductions.
#pragma once
#include <cstdint>

#include "core/dispatch.h"
#include "cpu/strided.h"  // MINIDL_FLOAT_TYPES / MINIDL_ALL_TYPES: the dtype switch, shared with the CPU
#include "cuda/cuda_common.h"

namespace minidl {
namespace cuda {

// Makes t's device current and returns its stream: the first lines of every kernel entry.
inline cudaStream_t launch_stream(const Tensor& t) {
  const int device = t.device().index;
  set_device(device);
  return stream(device);
}

// Threads per block of the elementwise and row kernels: a multiple of the warp size, and small enough
// that several blocks fit on a multiprocessor.
constexpr int kBlock = 256;

// Element offset of row-major position `linear` in a tensor described by d (cpu/strided.h's
// StridedIndex, on the device): offset = sum_k digit_k(linear) * strides[k].
// Index is the type of the digit arithmetic: a 64-bit division costs several times a 32-bit one on the
// GPU, so kernels use uint32_t when every linear index fits (fits_32bit) and int64_t otherwise.
template <class Index>
__device__ __forceinline__ int64_t strided_offset(const StridedDesc& d, Index linear) {
  int64_t off = 0;
#pragma unroll
  for (int k = kMaxDims - 1; k >= 0; --k) {
    if (k < d.ndim) {
      const Index size = static_cast<Index>(d.shape[k]);
      off += static_cast<int64_t>(linear % size) * d.strides[k];
      linear /= size;
    }
  }
  return off;
}

// Whether linear indices below n fit the 32-bit path of strided_offset.
inline bool fits_32bit(int64_t n) { return n <= (int64_t(1) << 31); }

// Calls f(Index{}) with Index = uint32_t when every index below n fits 32 bits (fits_32bit), int64_t
// otherwise: the launch of a kernel templated on its index type, written once, as
//   with_index_type(n, [&](auto index) { using Index = decltype(index); kernel<T, Index><<<...>>>(...); });
template <class F>
void with_index_type(int64_t n, F&& f) {
  if (fits_32bit(n))
    f(uint32_t{});
  else
    f(int64_t{});
}

__device__ __forceinline__ int64_t global_thread_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t global_thread_count() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// ---- reductions. The *_all_reduce helpers return the result to every participating thread.
struct SumOp {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct MaxOp {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const { return b > a ? b : a; }
};

// [doc:block_reduce] quoted by docs/course/05-cuda-kernels.md
template <class T, class Op>
__device__ __forceinline__ T warp_all_reduce(T v, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Every thread of the block must call it (it has barriers); blockDim.x must be a multiple of 32.
// Each thread folds the per-warp partials in the same order, so all get the same bits.
template <class T, class Op>
__device__ T block_all_reduce(T v, Op op) {
  __shared__ T partial[32];
  v = warp_all_reduce(v, op);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  T total = partial[0];
  for (int w = 1; w < warps; ++w) total = op(total, partial[w]);
  __syncthreads();  // the next call may overwrite partial[] only after everyone has read it
  return total;
}
// [/doc:block_reduce]

// ---- one row per warp, or one row per block.
// Row kernels are instantiated twice: kBlockPerRow = false gives each warp of a block its own row
// (short rows: no barriers, no shared memory); true gives each block one row (long rows).
template <bool kBlockPerRow>
struct RowMapping {
  int64_t first_row, row_step;
  int lane, lanes;
  __device__ RowMapping() {
    if (kBlockPerRow) {
      first_row = blockIdx.x;
      row_step = gridDim.x;
      lane = threadIdx.x;
      lanes = blockDim.x;
    } else {
      const int warps = blockDim.x >> 5;
      first_row = static_cast<int64_t>(blockIdx.x) * warps + (threadIdx.x >> 5);
      row_step = static_cast<int64_t>(gridDim.x) * warps;
      lane = threadIdx.x & 31;
      lanes = 32;
    }
  }
};

template <bool kBlockPerRow, class T, class Op>
__device__ __forceinline__ T row_all_reduce(T v, Op op) {
  if constexpr (kBlockPerRow)
    return block_all_reduce(v, op);
  else
    return warp_all_reduce(v, op);
}

// Rows up to this long go one per warp (at most 32 elements per lane).
constexpr int64_t kWarpRowMaxCols = 1024;

struct RowPlan {
  bool block_per_row;
  unsigned int grid;
};
inline RowPlan plan_rows(int64_t rows, int64_t cols) {
  RowPlan p;
  p.block_per_row = cols > kWarpRowMaxCols;
  const int64_t rows_per_block = p.block_per_row ? 1 : kBlock / 32;
  p.grid = grid_for(rows, static_cast<int>(rows_per_block));
  return p;
}

}  // namespace cuda
}  // namespace minidl
