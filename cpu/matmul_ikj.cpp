// cpu/matmul_ikj.cpp — matmul with the loops of "naive" reordered: step 1 of the CPU GEMM ladder
// (docs/results/benchmarks.md) and the worked example of docs/adding-a-kernel.md.
//   out[i, m, n] = sum_k op(a[i])[m, k] * op(b[i])[k, n]      (ops/kernel_signatures.h, key "matmul")
//
// What changed from "naive": naive computes one output at a time (m, n, then the sum over k), reading
// op(b) down a column: N floats apart, a new cache line for every multiply-add. Here the loops run
// m, k, n: each a[m, k] is multiplied into a whole row of out,
//     out[m, :] += a[m, k] * b[k, :]
// so the inner loop reads a row of b and writes a row of out, both with stride 1: every cache line
// serves 16 multiply-adds, and the compiler turns the loop into vector instructions.
// It accumulates in float (naive uses double), one thread, no blocking.
//
// Declines: float64 (it is a float32 example), and a transposed b, whose rows are not contiguous (the
// dispatcher then tries the next kernel). A transposed a is read in place: a[k, m] instead of a[m, k].
// Accumulation convention: out is overwritten (=): each row is zeroed, then accumulated.
#include <algorithm>

#include "core/dispatch.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

bool matmul_ikj(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  if (out.dtype() != DType::float32 || trans_b) return false;
  const int64_t batch = out.shape()[0], m_size = out.shape()[1], n_size = out.shape()[2];
  const int64_t k_size = trans_a ? a.shape()[1] : a.shape()[2];
  const int64_t lda = a.shape()[2];  // a's row stride: K, or M when a is stored transposed
  for (int64_t i = 0; i < batch; ++i) {
    const float* ai = a.data<float>() + i * a.shape()[1] * lda;
    const float* bi = b.data<float>() + i * k_size * n_size;
    float* oi = out.data<float>() + i * m_size * n_size;
    for (int64_t m = 0; m < m_size; ++m) {
      float* out_row = oi + m * n_size;
      std::fill(out_row, out_row + n_size, 0.0f);
      for (int64_t k = 0; k < k_size; ++k) {
        const float a_mk = trans_a ? ai[k * lda + m] : ai[m * lda + k];
        const float* b_row = bi + k * n_size;
        for (int64_t n = 0; n < n_size; ++n) out_row[n] += a_mk * b_row[n];
      }
    }
  }
  return true;
}

}  // namespace

void register_matmul_ikj_cpu() {
  // reference + 1: above naive, below every other CPU matmul, so it is never the default by accident.
  register_kernel(keys::matmul, DeviceType::cpu, "ikj", Priority::reference + 1,
                  "naive's loops reordered m-k-n: stride-1 inner loop over rows of b (f32, b not transposed)",
                  matmul_ikj);
}

}  // namespace minidl
