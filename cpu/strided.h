// cpu/strided.h — walking a tensor of any strides in row-major order, for the naive CPU kernels.
//
// StridedIndex turns a linear position i in [0, numel) of a shape into the element offset
//   offset(i) = sum_d  digit_d(i) * strides[d],    where digit_d are i's mixed-radix digits by shape.
// The naive kernels call it per element: slow but obviously right, which is their job.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace minidl {

struct StridedIndex {
  Shape shape, strides;

  explicit StridedIndex(const Tensor& t) : shape(t.shape()), strides(t.strides()) {}
  StridedIndex(Shape shape_, Shape strides_) : shape(std::move(shape_)), strides(std::move(strides_)) {}

  int64_t offset(int64_t linear) const {
    int64_t off = 0;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      const int64_t digit = linear % shape[d];
      linear /= shape[d];
      off += digit * strides[d];
    }
    return off;
  }
};

// Merges neighbouring dimensions that every tensor walks as one: dims i and i+1 merge when, for each
// stride list, strides[i] == strides[i+1] * shape[i+1] (e.g. a [N, C, H, W] bias broadcast [0, 1, 0, 0]
// becomes [N, C, H*W] with strides [0, 1, 0]). Fewer dims mean longer inner loops and cheaper offsets.
inline void coalesce_dims(Shape& shape, std::vector<Shape*> strides) {
  if (shape.empty()) return;
  Shape merged_shape{shape[0]};
  std::vector<Shape> merged(strides.size());
  for (size_t t = 0; t < strides.size(); ++t) merged[t] = {(*strides[t])[0]};
  for (size_t i = 1; i < shape.size(); ++i) {
    bool can_merge = true;
    for (size_t t = 0; t < strides.size(); ++t)
      if (merged[t].back() != (*strides[t])[i] * shape[i]) can_merge = false;
    if (can_merge) {
      merged_shape.back() *= shape[i];
      for (size_t t = 0; t < strides.size(); ++t) merged[t].back() = (*strides[t])[i];
    } else {
      merged_shape.push_back(shape[i]);
      for (size_t t = 0; t < strides.size(); ++t) merged[t].push_back((*strides[t])[i]);
    }
  }
  shape = merged_shape;
  for (size_t t = 0; t < strides.size(); ++t) *strides[t] = merged[t];
}

// Calls f(T* element) for every element of a contiguous-or-not tensor, in row-major order.
template <class T, class F>
void for_each_element(const Tensor& t, F f) {
  T* base = t.data<T>();
  const StridedIndex idx(t);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) f(i, base[idx.offset(i)]);
}

// Expands to an expression that runs the code given (with T the C++ type of `dtype`) and is true, or is
// false for a dtype that is not floating: `return MINIDL_FLOAT_TYPES(x.dtype(), { ... use T ... });`
#define MINIDL_FLOAT_TYPES(dtype, ...)            \
  [&] {                                            \
    switch (dtype) {                               \
      case DType::float32: { using T = float; __VA_ARGS__; return true; }  \
      case DType::float64: { using T = double; __VA_ARGS__; return true; } \
      default: return false;                       \
    }                                              \
  }()

// Like MINIDL_FLOAT_TYPES but for the four arithmetic dtypes (float32, float64, int32, int64); false for
// bfloat16, a storage-only type that kernels handle by name where they take it (cast, copy, fill).
#define MINIDL_ALL_TYPES(dtype, ...)              \
  [&] {                                            \
    switch (dtype) {                               \
      case DType::float32: { using T = float; __VA_ARGS__; return true; }   \
      case DType::float64: { using T = double; __VA_ARGS__; return true; }  \
      case DType::int32: { using T = int32_t; __VA_ARGS__; return true; }   \
      case DType::int64: { using T = int64_t; __VA_ARGS__; return true; }   \
      case DType::bfloat16: break;                 \
    }                                              \
    return false;                                  \
  }()

}  // namespace minidl
