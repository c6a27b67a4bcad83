// cpu/reduce_naive.cpp — row reductions (sum, max), gather / its backward and index_select, as plain
// loops. Layouts are in ops/kernel_signatures.h. Accumulation convention: outputs are overwritten (=);
// gather.backward zeroes grad_x first, then adds.
#include <cstring>

#include "core/dispatch.h"
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

// out[o, j, i] = x[o, index[j], i]: each (o, j) is one run of `inner` elements, copied whole (any dtype:
// the bytes are moved, not interpreted).
bool index_select_naive(const Tensor& x, const Tensor& index, Tensor& out) {
  const int64_t outer = x.shape()[0], n = x.shape()[1], inner = x.shape()[2], k = index.shape()[0];
  const int64_t* idx = index.data<int64_t>();
  const size_t run_bytes = static_cast<size_t>(inner) * dtype_size(x.dtype());
  const char* px = static_cast<const char*>(x.raw_data());
  char* po = static_cast<char*>(out.raw_data());
  for (int64_t j = 0; j < k; ++j)
    MINIDL_CHECK(idx[j] >= 0 && idx[j] < n, "index_select: index ", idx[j], " out of range [0, ", n, ")");
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < k; ++j)
      if (run_bytes > 0) std::memcpy(po + (o * k + j) * run_bytes, px + (o * n + idx[j]) * run_bytes, run_bytes);
  return true;
}

}  // namespace

void register_reduce_naive_cpu() {
  register_kernel(keys::sum, DeviceType::cpu, "naive", Priority::reference, "reference: one row at a time, double accumulator",
                  sum_naive);
  register_kernel(keys::sum, DeviceType::cpu, "rows_omp", Priority::portable,
                  "rows split across OpenMP threads, vectorised inner loop", sum_rows_omp);
  register_kernel(keys::max, DeviceType::cpu, "naive", Priority::reference, "reference: scan each row, first maximum wins",
                  max_naive);
  register_kernel(keys::gather, DeviceType::cpu, "naive", Priority::reference, "reference: plain loops", gather_naive);
  register_kernel(keys::gather_backward, DeviceType::cpu, "naive", Priority::reference,
                  "reference: zero, then add each gradient at its index", scatter_add_naive);
  register_kernel(keys::index_select, DeviceType::cpu, "naive", Priority::reference,
                  "reference: one memcpy per selected slice", index_select_naive);
}

}  // namespace minidl
