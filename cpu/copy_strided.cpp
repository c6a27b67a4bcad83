// cpu/copy_strided.cpp — copy between tensors of any strides, for speed ("rows_omp"): the copies behind
// contiguous() of a permuted or sliced view (the captcha model's CNN-to-RNN reshapes and its RNN's
// per-direction slices, for instance).
//
// The reference (cpu/copy_naive.cpp) turns every linear position into an offset through all the strides
// (a division and a multiplication per dimension per element): about 0.5 GB/s. Here the dimensions
// that both tensors walk alike are merged first (coalesce_dims, cpu/strided.h), the result is seen as
// [rows, cols] with cols the last merged dimension, each row's two start offsets are computed once,
// and the row is copied with each tensor's own inner stride (a memcpy when both are 1). Rows are split
// across OpenMP threads above 32k elements. Any dtype; src and dst have the same dtype and shape (the
// "copy" key; "cast" converts). Accumulation convention: dst is overwritten (=).
#include <cstring>

#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr int64_t kParallelThreshold = 1 << 15;

template <class T>
void copy_rows(const Tensor& src, Tensor& dst) {
  Shape shape = dst.shape(), dst_strides = dst.strides(), src_strides = src.strides();
  coalesce_dims(shape, {&dst_strides, &src_strides});
  const int64_t n = dst.numel();
  const int64_t cols = shape.empty() ? 1 : shape.back();
  const int64_t rows = n / cols;
  const int64_t sd = dst_strides.empty() ? 1 : dst_strides.back();
  const int64_t ss = src_strides.empty() ? 1 : src_strides.back();
  const StridedIndex di(shape, dst_strides), si(shape, src_strides);
  const T* ps = src.data<T>();
  T* pd = dst.data<T>();
#pragma omp parallel for schedule(static) if (n > kParallelThreshold && rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    const T* s = ps + si.offset(r * cols);
    T* d = pd + di.offset(r * cols);
    if (sd == 1 && ss == 1) {
      std::memcpy(d, s, static_cast<size_t>(cols) * sizeof(T));
    } else if (sd == 1) {
      for (int64_t j = 0; j < cols; ++j) d[j] = s[j * ss];
    } else {
      for (int64_t j = 0; j < cols; ++j) d[j * sd] = s[j * ss];
    }
  }
}

bool copy_rows_omp(const Tensor& src, Tensor& dst) {
  if (src.dtype() != dst.dtype()) return false;
  if (dst.numel() == 0) return true;
  return MINIDL_ALL_TYPES(dst.dtype(), { copy_rows<T>(src, dst); });
}

}  // namespace

void register_copy_strided_cpu() {
  register_kernel(keys::copy, DeviceType::cpu, "rows_omp", Priority::reference + 5,
                  "merged dims, one offset per row, rows across OpenMP threads (any strides)",
                  copy_rows_omp);
}

}  // namespace minidl
