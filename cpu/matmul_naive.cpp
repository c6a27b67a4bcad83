// cpu/matmul_naive.cpp — the reference batched matrix product: three nested loops, one output element
// at a time, accumulated in double.
//   out[i, m, n] = sum_k op(a[i])[m, k] * op(b[i])[k, n]
//   op(a)[m, k] = trans_a ? a[k, m] : a[m, k]      op(b)[k, n] = trans_b ? b[n, k] : b[k, n]
// Layouts: a [B, ra, ca], b [B, rb, cb], out [B, M, N], all contiguous (ops/kernel_signatures.h).
// Accumulation convention: out is overwritten (=).
#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

template <class T>
void matmul_loops(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  const int64_t batch = out.shape()[0], m_size = out.shape()[1], n_size = out.shape()[2];
  const int64_t k_size = trans_a ? a.shape()[1] : a.shape()[2];
  const int64_t lda = a.shape()[2], ldb = b.shape()[2];
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  for (int64_t i = 0; i < batch; ++i) {
    const T* ai = pa + i * a.shape()[1] * lda;
    const T* bi = pb + i * b.shape()[1] * ldb;
    T* oi = po + i * m_size * n_size;
    // [doc:matmul_naive] quoted by docs/course/04-cpu-kernels.md
    for (int64_t m = 0; m < m_size; ++m)
      for (int64_t n = 0; n < n_size; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < k_size; ++k) {
          const T av = trans_a ? ai[k * lda + m] : ai[m * lda + k];
          const T bv = trans_b ? bi[n * ldb + k] : bi[k * ldb + n];
          acc += static_cast<double>(av) * static_cast<double>(bv);
        }
        oi[m * n_size + n] = static_cast<T>(acc);
      }
    // [/doc:matmul_naive]
  }
}

bool matmul_naive(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  return MINIDL_FLOAT_TYPES(out.dtype(), { matmul_loops<T>(a, b, out, trans_a, trans_b); });
}

}  // namespace

void register_matmul_naive_cpu() {
  register_kernel(keys::matmul, DeviceType::cpu, "naive", Priority::reference,
                  "reference: triple loop per batch, double accumulator", matmul_naive);
}

}  // namespace minidl
