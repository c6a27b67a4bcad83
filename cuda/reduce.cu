// cuda/reduce.cu — row reductions (sum, max), gather / its backward and index_select on the GPU.
// Layouts are in ops/kernel_signatures.h: x is [rows, cols] contiguous for the reductions, [outer, n,
// inner] for gather and index_select.
// Accumulation convention: outputs are overwritten (=); gather.backward zeroes grad_x, then adds.
//
// sum "rows":   out[r] = sum_c x[r, c], accumulated in double (cheap on Hopper, where a memory-bound
//               reduction has arithmetic to spare, and close to the CPU reference's double accumulator).
//               Rows of up to 1024 go one per warp (lanes stride the row, then a shuffle tree), longer
//               rows one per block (shuffle tree per warp, then the warps' partials through shared
//               memory). When there are few long rows (fewer than two per multiprocessor), each row is
//               split over several blocks that write partial sums, and a second launch adds them up:
//               otherwise a full reduction (rows = 1) would run on one multiprocessor.
// max "rows":   out[r] = max_c x[r, c], index[r] = the first c reaching it. Each thread scans its strided
//               share with `>` (keeping its first maximum), then (value, index) pairs merge with ties
//               going to the smaller index, so the result is the first maximum of the row. Rows holding
//               NaN may pick another element than the CPU scan does.
// gather "direct":          one thread per output element. An index outside [0, n) cannot throw on the
//                           GPU; it yields NaN instead of reading out of bounds.
// gather.backward "direct": cudaMemsetAsync(grad_x, 0), then one atomicAdd per grad_out element
//                           (indices outside [0, n) are skipped). The order of the additions varies, so
//                           results may differ in the last bits between runs where indices repeat.
//                           Declines in deterministic mode (core/determinism.h).
// gather.backward "ordered": one thread per grad_x element (o, n', i) adds, for j = 0 .. k-1 in order, the
//                           grad_out[o, j, i] whose index is n': no atomics, the same bits every run, at
//                           the cost of reading k indices per grad_x element (n times more index reads
//                           than "direct"). The kernel --deterministic runs.
// index_select "direct":    one thread per output element, copying its 4 or 8 bytes unchanged (so any
//                           dtype of that size). An index outside [0, n) cannot throw on the GPU; the
//                           element becomes all one bits instead (NaN in float32/float64, -1 in int64).
#include <cmath>
#include <limits>

#include "core/determinism.h"
#include "cuda/device_utils.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

using cuda::global_thread_count;
using cuda::global_thread_index;
using cuda::kBlock;
using cuda::RowMapping;
using cuda::row_all_reduce;
using cuda::SumOp;

// ---------------------------------------------------------------- sum

// out[r] = sum_c x[r, c]. In and Out may differ: the second pass of the split sum reads double partials.
template <class In, class Out, bool kBlockPerRow>
__global__ void sum_rows_kernel(const In* x, Out* out, int64_t rows, int64_t cols) {
  const RowMapping<kBlockPerRow> m;
  for (int64_t r = m.first_row; r < rows; r += m.row_step) {
    const In* row = x + r * cols;
    double acc = 0;
    for (int64_t c = m.lane; c < cols; c += m.lanes) acc += static_cast<double>(row[c]);
    acc = row_all_reduce<kBlockPerRow>(acc, SumOp());
    if (m.lane == 0) out[r] = static_cast<Out>(acc);
  }
}

// Pass 1 of the split sum: block (chunk, r) adds x[r, chunk*chunk_cols ..) into partial[r, chunk].
template <class T>
__global__ void sum_partial_kernel(const T* x, double* partial, int64_t cols, int64_t chunk_cols) {
  const int64_t r = blockIdx.y, chunk = blockIdx.x, chunks = gridDim.x;
  const int64_t begin = chunk * chunk_cols;
  const int64_t end = begin + chunk_cols < cols ? begin + chunk_cols : cols;
  const T* row = x + r * cols;
  double acc = 0;
  for (int64_t c = begin + threadIdx.x; c < end; c += blockDim.x) acc += static_cast<double>(row[c]);
  acc = cuda::block_all_reduce(acc, SumOp());
  if (threadIdx.x == 0) partial[r * chunks + chunk] = acc;
}

template <class In, class Out>
void launch_sum_rows(const In* x, Out* out, int64_t rows, int64_t cols, cudaStream_t s) {
  const cuda::RowPlan plan = cuda::plan_rows(rows, cols);
  if (plan.block_per_row)
    sum_rows_kernel<In, Out, true><<<plan.grid, kBlock, 0, s>>>(x, out, rows, cols);
  else
    sum_rows_kernel<In, Out, false><<<plan.grid, kBlock, 0, s>>>(x, out, rows, cols);
  MINIDL_LAUNCH_CHECK();
}

// Columns each block of the split sum covers: enough work per block to hide its start-up.
constexpr int64_t kSplitChunkCols = 16384;

bool sum_rows(const Tensor& x, Tensor& out) {
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  if (rows == 0) return true;
  cudaStream_t s = cuda::launch_stream(x);
  const int device = x.device().index;
  const int64_t sms = cuda::properties(device).multiProcessorCount;
  const bool split = rows < 2 * sms && cols > 4 * kSplitChunkCols && rows <= 65535;
  return MINIDL_FLOAT_TYPES(x.dtype(), {
    if (!split) {
      launch_sum_rows(x.data<T>(), out.data<T>(), rows, cols, s);
    } else {
      // Enough chunks to give every multiprocessor a few blocks, none shorter than kSplitChunkCols.
      int64_t chunks = (cols + kSplitChunkCols - 1) / kSplitChunkCols;
      const int64_t wanted = (4 * sms + rows - 1) / rows;
      if (chunks > wanted) chunks = wanted;
      const int64_t chunk_cols = (cols + chunks - 1) / chunks;
      chunks = (cols + chunk_cols - 1) / chunk_cols;
      Tensor partial = empty({rows, chunks}, TensorOptions(DType::float64, x.device()));
      const dim3 grid(static_cast<unsigned int>(chunks), static_cast<unsigned int>(rows));
      sum_partial_kernel<T><<<grid, kBlock, 0, s>>>(x.data<T>(), partial.data<double>(), cols, chunk_cols);
      MINIDL_LAUNCH_CHECK();
      launch_sum_rows(partial.data<double>(), out.data<T>(), rows, chunks, s);
    }
  });
}

// ---------------------------------------------------------------- max

// A candidate maximum. kNone marks "no element seen" (a thread with no share of a short row).
constexpr int64_t kNone = std::numeric_limits<int64_t>::max();

template <class T>
struct ArgMax {
  T value;
  int64_t index;
};

// The better of two candidates: the larger value; on equal values the smaller index.
template <class T>
__device__ __forceinline__ ArgMax<T> better(ArgMax<T> a, ArgMax<T> b) {
  if (a.index == kNone) return b;
  if (b.index == kNone) return a;
  if (b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
  return a;
}

template <class T>
__device__ __forceinline__ ArgMax<T> warp_argmax(ArgMax<T> v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    ArgMax<T> other;
    other.value = __shfl_xor_sync(0xffffffffu, v.value, offset);
    other.index = __shfl_xor_sync(0xffffffffu, v.index, offset);
    v = better(v, other);
  }
  return v;
}

// Like cuda::block_all_reduce, for (value, index) pairs.
template <class T>
__device__ ArgMax<T> block_argmax(ArgMax<T> v) {
  __shared__ T values[32];
  __shared__ int64_t indices[32];
  v = warp_argmax(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  if (lane == 0) {
    values[warp] = v.value;
    indices[warp] = v.index;
  }
  __syncthreads();
  ArgMax<T> total{values[0], indices[0]};
  for (int w = 1; w < warps; ++w) total = better(total, ArgMax<T>{values[w], indices[w]});
  __syncthreads();
  return total;
}

template <class T, bool kBlockPerRow>
__global__ void max_rows_kernel(const T* x, T* out, int64_t* index, int64_t rows, int64_t cols) {
  const RowMapping<kBlockPerRow> m;
  for (int64_t r = m.first_row; r < rows; r += m.row_step) {
    const T* row = x + r * cols;
    ArgMax<T> best{T(0), kNone};
    for (int64_t c = m.lane; c < cols; c += m.lanes)
      if (best.index == kNone || row[c] > best.value) best = ArgMax<T>{row[c], c};
    if constexpr (kBlockPerRow)
      best = block_argmax(best);
    else
      best = warp_argmax(best);
    if (m.lane == 0) {
      out[r] = best.value;
      index[r] = best.index;
    }
  }
}

bool max_rows(const Tensor& x, Tensor& out, Tensor& index) {
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  if (cols == 0) return false;  // no maximum of nothing (as the CPU reference)
  if (rows == 0) return true;
  cudaStream_t s = cuda::launch_stream(x);
  const cuda::RowPlan plan = cuda::plan_rows(rows, cols);
  return MINIDL_FLOAT_TYPES(x.dtype(), {
    if (plan.block_per_row)
      max_rows_kernel<T, true><<<plan.grid, kBlock, 0, s>>>(x.data<T>(), out.data<T>(), index.data<int64_t>(), rows,
                                                           cols);
    else
      max_rows_kernel<T, false><<<plan.grid, kBlock, 0, s>>>(x.data<T>(), out.data<T>(), index.data<int64_t>(), rows,
                                                            cols);
    MINIDL_LAUNCH_CHECK();
  });
}

// ---------------------------------------------------------------- gather

// e runs over out = [outer, k, inner]: e = (o * k + j) * inner + i.
template <class T>
__global__ void gather_kernel(const T* x, const int64_t* index, T* out, int64_t total, int64_t n, int64_t k,
                              int64_t inner) {
  for (int64_t e = global_thread_index(); e < total; e += global_thread_count()) {
    const int64_t i = e % inner, o = e / (k * inner);
    const int64_t src = index[e];
    out[e] = (src >= 0 && src < n) ? x[(o * n + src) * inner + i] : T(NAN);
  }
}

template <class T>
__global__ void scatter_add_kernel(const T* grad_out, const int64_t* index, T* grad_x, int64_t total, int64_t n,
                                   int64_t k, int64_t inner) {
  for (int64_t e = global_thread_index(); e < total; e += global_thread_count()) {
    const int64_t i = e % inner, o = e / (k * inner);
    const int64_t dst = index[e];
    if (dst >= 0 && dst < n) atomicAdd(&grad_x[(o * n + dst) * inner + i], grad_out[e]);
  }
}

// e runs over grad_x = [outer, n, inner]: e = (o * n + d) * inner + i; sums in index order.
template <class T>
__global__ void scatter_add_ordered_kernel(const T* grad_out, const int64_t* index, T* grad_x, int64_t total,
                                           int64_t n, int64_t k, int64_t inner) {
  for (int64_t e = global_thread_index(); e < total; e += global_thread_count()) {
    const int64_t i = e % inner, d = e / inner % n, o = e / (n * inner);
    T sum = T(0);
    for (int64_t j = 0; j < k; ++j) {
      const int64_t at = (o * k + j) * inner + i;
      if (index[at] == d) sum += grad_out[at];
    }
    grad_x[e] = sum;
  }
}

bool gather_direct(const Tensor& x, const Tensor& index, Tensor& out) {
  const int64_t n = x.shape()[1], k = index.shape()[1], inner = x.shape()[2];
  const int64_t total = out.numel();
  if (total == 0) return true;
  cudaStream_t s = cuda::launch_stream(out);
  return MINIDL_FLOAT_TYPES(x.dtype(), {
    gather_kernel<T><<<cuda::grid_for(total, kBlock), kBlock, 0, s>>>(x.data<T>(), index.data<int64_t>(),
                                                                      out.data<T>(), total, n, k, inner);
    MINIDL_LAUNCH_CHECK();
  });
}

bool scatter_add_direct(const Tensor& grad_out, const Tensor& index, Tensor& grad_x) {
  if (deterministic_algorithms()) return false;  // atomicAdd order varies: "ordered" takes the call
  const int64_t n = grad_x.shape()[1], k = index.shape()[1], inner = grad_x.shape()[2];
  const int64_t total = grad_out.numel();
  if (grad_x.numel() == 0) return true;
  cudaStream_t s = cuda::launch_stream(grad_x);
  return MINIDL_FLOAT_TYPES(grad_x.dtype(), {
    MINIDL_CUDA_CHECK(cudaMemsetAsync(grad_x.raw_data(), 0, grad_x.numel() * sizeof(T), s));
    if (total > 0) {
      scatter_add_kernel<T><<<cuda::grid_for(total, kBlock), kBlock, 0, s>>>(
          grad_out.data<T>(), index.data<int64_t>(), grad_x.data<T>(), total, n, k, inner);
      MINIDL_LAUNCH_CHECK();
    }
  });
}

bool scatter_add_ordered(const Tensor& grad_out, const Tensor& index, Tensor& grad_x) {
  const int64_t n = grad_x.shape()[1], k = index.shape()[1], inner = grad_x.shape()[2];
  const int64_t total = grad_x.numel();
  if (total == 0) return true;
  cudaStream_t s = cuda::launch_stream(grad_x);
  return MINIDL_FLOAT_TYPES(grad_x.dtype(), {
    scatter_add_ordered_kernel<T><<<cuda::grid_for(total, kBlock), kBlock, 0, s>>>(
        grad_out.data<T>(), index.data<int64_t>(), grad_x.data<T>(), total, n, k, inner);
    MINIDL_LAUNCH_CHECK();
  });
}

// ---------------------------------------------------------------- index_select

// e runs over out = [outer, k, inner]: e = (o * k + j) * inner + i; Word is the element's bit pattern.
template <class Word>
__global__ void index_select_kernel(const Word* x, const int64_t* index, Word* out, int64_t total, int64_t n,
                                    int64_t k, int64_t inner) {
  for (int64_t e = global_thread_index(); e < total; e += global_thread_count()) {
    const int64_t i = e % inner, j = e / inner % k, o = e / (k * inner);
    const int64_t src = index[j];
    out[e] = (src >= 0 && src < n) ? x[(o * n + src) * inner + i] : static_cast<Word>(~Word(0));
  }
}

bool index_select_direct(const Tensor& x, const Tensor& index, Tensor& out) {
  const int64_t n = x.shape()[1], k = index.shape()[0], inner = x.shape()[2];
  const int64_t total = out.numel();
  if (total == 0) return true;
  cudaStream_t s = cuda::launch_stream(out);
  const unsigned grid = cuda::grid_for(total, kBlock);
  if (dtype_size(x.dtype()) == 4) {
    index_select_kernel<uint32_t><<<grid, kBlock, 0, s>>>(static_cast<const uint32_t*>(x.raw_data()),
                                                          index.data<int64_t>(), static_cast<uint32_t*>(out.raw_data()),
                                                          total, n, k, inner);
  } else if (dtype_size(x.dtype()) == 8) {
    index_select_kernel<uint64_t><<<grid, kBlock, 0, s>>>(static_cast<const uint64_t*>(x.raw_data()),
                                                          index.data<int64_t>(), static_cast<uint64_t*>(out.raw_data()),
                                                          total, n, k, inner);
  } else {
    return false;  // no other element size reaches here (the front end allows float32, float64, int64)
  }
  MINIDL_LAUNCH_CHECK();
  return true;
}

}  // namespace

void register_reduce_cuda() {
  register_kernel(keys::sum, DeviceType::cuda, "rows", Priority::portable,
                  "warp per row (<=1024 cols) or block per row, double accumulator; few long rows "
                  "split over blocks in two passes",
                  sum_rows);
  register_kernel(keys::max, DeviceType::cuda, "rows", Priority::portable,
                  "warp or block per row, (value, index) shuffle tree; first maximum wins", max_rows);
  register_kernel(keys::gather, DeviceType::cuda, "direct", Priority::portable, "one thread per output element",
                  gather_direct);
  register_kernel(keys::gather_backward, DeviceType::cuda, "direct", Priority::portable,
                  "memset to zero, then one atomicAdd per gradient element (declines with "
                  "--deterministic)",
                  scatter_add_direct);
  register_kernel(keys::gather_backward, DeviceType::cuda, "ordered", Priority::reference + 5,
                  "one thread per grad_x element, adds in index order: deterministic",
                  scatter_add_ordered);
  register_kernel(keys::index_select, DeviceType::cuda, "direct", Priority::portable,
                  "one thread per output element, its bytes copied", index_select_direct);
}

}  // namespace minidl
