// exercises/05-cuda-kernels/cuda_kernels.cu — EXERCISE 5: two first CUDA kernels, an elementwise op and a
// reduction. Read first: docs/course/05-cuda-kernels.md. Check your work: `make exercise N=5` (on a machine
// with an NVIDIA GPU; elsewhere the checker compiles your file and says it skipped the run).
//
// A kernel launch runs a grid of blocks of threads: kernel<<<blocks, threads_per_block, shared_bytes, stream>>>.
// Inside, blockIdx.x, blockDim.x and threadIdx.x say which thread this is. Every thread runs the same code on
// other data; threads of one block can share fast on-chip memory (__shared__) and wait for each other
// (__syncthreads()); blocks cannot.
#include "exercises/05-cuda-kernels/cuda_kernels.h"

#include <algorithm>

#include "core/dispatch.h"
#include "cuda/cuda_common.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// ---------------------------------------------------------------- 5a: relu, one thread per element
// out[i] = max(x[i], 0) for i in [0, n). The grid may have fewer threads than n elements (here it is capped
// at kMaxBlocks blocks, as real kernels cap theirs: cuda::grid_for), so each thread handles i,
// i + (threads in the grid), i + 2 * (threads in the grid), ...: a grid-stride loop. Consecutive threads take consecutive i, so a warp's 32 loads are one contiguous
// 128-byte piece of memory (coalesced).
constexpr int64_t kMaxBlocks = 1024;

__global__ void relu_kernel(const float* x, float* out, int64_t n) {
  // EXERCISE: the grid-stride loop. This thread's first index is blockIdx.x * blockDim.x + threadIdx.x (as
  // int64_t), the step is gridDim.x * blockDim.x.
  (void)x;
  (void)out;
  (void)n;
}

// Key "relu" on cuda: contiguous float32 only (declines the rest; the other GPU kernels serve them).
bool relu_student(const Tensor& x, Tensor& out) {
  if (x.dtype() != DType::float32 || !x.is_contiguous()) return false;
  const int64_t n = x.numel();
  if (n == 0) return true;
  const int device = x.device().index;
  cuda::set_device(device);
  const int threads = 256;
  const unsigned int blocks = std::min<int64_t>((n + threads - 1) / threads, kMaxBlocks);
  relu_kernel<<<blocks, threads, 0, cuda::stream(device)>>>(x.data<float>(), out.data<float>(), n);
  MINIDL_LAUNCH_CHECK();
  return true;
}

// ---------------------------------------------------------------- 5b: row sums, one block per row
// Key "sum": x [rows, cols] contiguous, out[r] = sum_c x[r, c]. Block r sums row r in three steps:
//   1. each of the block's kThreads threads adds up its share of the row: columns threadIdx.x,
//      threadIdx.x + kThreads, ... (consecutive threads read consecutive columns: coalesced);
//   2. the kThreads partial sums go to shared memory;
//   3. a tree: in each round the first half of the still active threads adds the second half's values to its
//      own (partial[i] += partial[i + half]), for half = kThreads/2, kThreads/4, ..., 1, with a
//      __syncthreads() between rounds (a thread must not read a value another has not written yet);
//      partial[0] then holds the row's sum, which thread 0 writes to out[row].
constexpr int kThreads = 256;  // a power of two, for the tree

__global__ void sum_rows_kernel(const float* x, float* out, int64_t cols) {
  __shared__ float partial[kThreads];
  const int64_t row = blockIdx.x;
  const float* r = x + row * cols;
  // EXERCISE: steps 1 to 3.
  (void)partial;
  (void)r;
  (void)out;
}

bool sum_student(const Tensor& x, Tensor& out) {
  if (x.dtype() != DType::float32) return false;
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  if (rows == 0) return true;
  if (rows > 2147483647) return false;  // one block per row: the grid's x dimension is the limit
  const int device = x.device().index;
  cuda::set_device(device);
  sum_rows_kernel<<<static_cast<unsigned int>(rows), kThreads, 0, cuda::stream(device)>>>(x.data<float>(),
                                                                                          out.data<float>(), cols);
  MINIDL_LAUNCH_CHECK();
  return true;
}

}  // namespace

// Priority -10: serve only when selected (the checker selects them).
void register_student_cuda_kernels() {
  register_kernel(keys::relu, DeviceType::cuda, "student", Priority::reference - 10, "exercise 5a: grid-stride loop, f32 contiguous",
                  relu_student);
  register_kernel(keys::sum, DeviceType::cuda, "student", Priority::reference - 10, "exercise 5b: one block per row, shared-memory tree",
                  sum_student);
}

}  // namespace minidl
