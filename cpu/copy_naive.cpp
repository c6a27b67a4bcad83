// cpu/copy_naive.cpp — copy, cast and fill for any strides and dtypes, and pack: the reference kernels.
// Accumulation convention: outputs are overwritten (=).
#include <cstring>

#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

template <class S>
bool cast_from(const Tensor& src, Tensor& dst) {
  const S* s = src.data<S>();
  const StridedIndex si(src), di(dst);
  const int64_t n = src.numel();
  return MINIDL_ALL_TYPES(dst.dtype(), {
    T* d = dst.data<T>();
    for (int64_t i = 0; i < n; ++i) d[di.offset(i)] = static_cast<T>(s[si.offset(i)]);
  });
}

// bfloat16 on either side (core/bfloat16.h): values go through float32, rounded to the nearest bfloat16
// (ties to even) on the way in, exact on the way out.
bool cast_with_bfloat16(const Tensor& src, Tensor& dst) {
  const StridedIndex si(src), di(dst);
  const int64_t n = src.numel();
  if (src.dtype() == DType::bfloat16) {
    const bfloat16* s = src.data<bfloat16>();
    if (dst.dtype() == DType::bfloat16) {
      bfloat16* d = dst.data<bfloat16>();
      for (int64_t i = 0; i < n; ++i) d[di.offset(i)] = s[si.offset(i)];
      return true;
    }
    return MINIDL_ALL_TYPES(dst.dtype(), {
      T* d = dst.data<T>();
      for (int64_t i = 0; i < n; ++i) d[di.offset(i)] = static_cast<T>(bfloat16_to_float(s[si.offset(i)]));
    });
  }
  bfloat16* d = dst.data<bfloat16>();
  return MINIDL_ALL_TYPES(src.dtype(), {
    const T* s = src.data<T>();
    for (int64_t i = 0; i < n; ++i) d[di.offset(i)] = double_to_bfloat16(static_cast<double>(s[si.offset(i)]));
  });
}

// dst = src through both tensors' strides; dst may have another dtype.
bool cast_naive(const Tensor& src, Tensor& dst) {
  if (src.dtype() == DType::bfloat16 || dst.dtype() == DType::bfloat16) return cast_with_bfloat16(src, dst);
  switch (src.dtype()) {
    case DType::float32: return cast_from<float>(src, dst);
    case DType::float64: return cast_from<double>(src, dst);
    case DType::int32: return cast_from<int32_t>(src, dst);
    case DType::int64: return cast_from<int64_t>(src, dst);
    case DType::bfloat16: break;  // handled above
  }
  return false;
}

bool copy_naive(const Tensor& src, Tensor& dst) { return cast_naive(src, dst); }

// Contiguous same-dtype copy: one memcpy.
// [doc:copy_memcpy] quoted by docs/course/03-dispatch.md
bool copy_memcpy(const Tensor& src, Tensor& dst) {
  if (!src.is_contiguous() || !dst.is_contiguous()) return false;
  std::memcpy(dst.raw_data(), src.raw_data(), src.numel() * dtype_size(src.dtype()));
  return true;
}
// [/doc:copy_memcpy]

bool fill_naive(Tensor& dst, double value) {
  if (dst.dtype() == DType::bfloat16) {
    const bfloat16 v = double_to_bfloat16(value);
    for_each_element<bfloat16>(dst, [&](int64_t, bfloat16& e) { e = v; });
    return true;
  }
  return MINIDL_ALL_TYPES(dst.dtype(), {
    const T v = static_cast<T>(value);
    for_each_element<T>(dst, [&](int64_t, T& e) { e = v; });
  });
}

// flat[offsets[k] + i] = srcs[k][i]: one memcpy per tensor (all contiguous, one dtype).
bool pack_naive(const std::vector<Tensor>& srcs, const std::vector<int64_t>& offsets, Tensor& flat) {
  const size_t element = dtype_size(flat.dtype());
  char* base = static_cast<char*>(flat.raw_data());
  for (size_t k = 0; k < srcs.size(); ++k)
    std::memcpy(base + static_cast<size_t>(offsets[k]) * element, srcs[k].raw_data(),
                static_cast<size_t>(srcs[k].numel()) * element);
  return true;
}

}  // namespace

void register_copy_naive_cpu() {
  register_kernel(keys::copy, DeviceType::cpu, "naive", Priority::reference, "element by element through strides", copy_naive);
  register_kernel(keys::copy, DeviceType::cpu, "memcpy", Priority::portable, "one memcpy; contiguous tensors only",
                  copy_memcpy);
  register_kernel(keys::cast, DeviceType::cpu, "naive", Priority::reference, "element by element, static_cast", cast_naive);
  register_kernel(keys::fill, DeviceType::cpu, "naive", Priority::reference, "element by element through strides", fill_naive);
  register_kernel(keys::pack, DeviceType::cpu, "naive", Priority::reference, "one memcpy per tensor", pack_naive);
}

}  // namespace minidl
