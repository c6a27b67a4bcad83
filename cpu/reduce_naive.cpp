// cpu/reduce_naive.cpp — row reductions (sum, max) and gather / its backward, as plain loops.
// Layouts are in ops/kernel_signatures.h. Accumulation convention: outputs are overwritten (=);
// gather.backward zeroes grad_x first, then adds.
#include "cpu/register.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// out[r] = sum_c x[r, c], accumulated in double so the reference is as exact as we can cheaply make it.
bool sum_naive(const Tensor& x, Tensor& out) {
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  return MINIDL_FLOAT_TYPES(x.dtype(), {
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      double acc = 0;
      for (int64_t c = 0; c < cols; ++c) acc += px[r * cols + c];
      po[r] = static_cast<T>(acc);
    }
  });
}

// Rows in parallel, each accumulated in T with the compiler's vectorisation.
template <class T>
void sum_rows(const T* px, T* po, int64_t rows, int64_t cols) {
#pragma omp parallel for schedule(static) if (rows * cols > (1 << 15) && rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    T acc = 0;
    const T* row = px + r * cols;
    for (int64_t c = 0; c < cols; ++c) acc += row[c];
    po[r] = acc;
  }
}

bool sum_rows_omp(const Tensor& x, Tensor& out) {
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  return MINIDL_FLOAT_TYPES(x.dtype(), { sum_rows<T>(x.data<T>(), out.data<T>(), rows, cols); });
}

bool max_naive(const Tensor& x, Tensor& out, Tensor& index) {
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  if (cols == 0) return false;
  int64_t* pi = index.data<int64_t>();
  return MINIDL_FLOAT_TYPES(x.dtype(), {
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      int64_t best = 0;
      for (int64_t c = 1; c < cols; ++c)
        if (px[r * cols + c] > px[r * cols + best]) best = c;
      po[r] = px[r * cols + best];
      pi[r] = best;
    }
  });
}

bool gather_naive(const Tensor& x, const Tensor& index, Tensor& out) {
  const int64_t outer = x.shape()[0], n = x.shape()[1], inner = x.shape()[2], k = index.shape()[1];
  const int64_t* idx = index.data<int64_t>();
  return MINIDL_FLOAT_TYPES(x.dtype(), {
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < k; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t src = idx[(o * k + j) * inner + i];
          MINIDL_CHECK(src >= 0 && src < n, "gather: index ", src, " out of range [0, ", n, ")");
          po[(o * k + j) * inner + i] = px[(o * n + src) * inner + i];
        }
  });
}

bool scatter_add_naive(const Tensor& grad_out, const Tensor& index, Tensor& grad_x) {
  const int64_t outer = grad_x.shape()[0], n = grad_x.shape()[1], inner = grad_x.shape()[2], k = index.shape()[1];
  const int64_t* idx = index.data<int64_t>();
  return MINIDL_FLOAT_TYPES(grad_x.dtype(), {
    const T* pg = grad_out.data<T>();
    T* px = grad_x.data<T>();
    for (int64_t e = 0; e < outer * n * inner; ++e) px[e] = T(0);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < k; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t dst = idx[(o * k + j) * inner + i];
          MINIDL_CHECK(dst >= 0 && dst < n, "gather.backward: index ", dst, " out of range [0, ", n, ")");
          px[(o * n + dst) * inner + i] += pg[(o * k + j) * inner + i];
        }
  });
}

}  // namespace

void register_reduce_naive_cpu() {
  register_kernel<RowReduceKernel>("sum", DeviceType::cpu, "naive", 0, "reference: one row at a time, double accumulator",
                                   sum_naive);
  register_kernel<RowReduceKernel>("sum", DeviceType::cpu, "rows_omp", 10,
                                   "rows split across OpenMP threads, vectorised inner loop", sum_rows_omp);
  register_kernel<RowMaxKernel>("max", DeviceType::cpu, "naive", 0, "reference: scan each row, first maximum wins",
                                max_naive);
  register_kernel<GatherKernel>("gather", DeviceType::cpu, "naive", 0, "reference: plain loops", gather_naive);
  register_kernel<ScatterAddKernel>("gather.backward", DeviceType::cpu, "naive", 0,
                                    "reference: zero, then add each gradient at its index", scatter_add_naive);
}

}  // namespace minidl
