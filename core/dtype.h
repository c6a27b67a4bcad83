// core/dtype.h — element types a tensor can hold.
//
// float32 is the training type; float64 exists for reference computations and the finite-difference
// gradient checker; int32/int64 hold labels and indices; bfloat16 (core/bfloat16.h) holds the operands
// of BF16 tensor-core products and the captcha model's activations under `--precision bf16` (a storage type:
// cast, copy and fill, and the ops of ops/bfloat16_widening.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/bfloat16.h"

namespace minidl {

enum class DType { float32, float64, int32, int64, bfloat16 };

inline size_t dtype_size(DType t) {
  switch (t) {
    case DType::float32: return 4;
    case DType::float64: return 8;
    case DType::int32: return 4;
    case DType::int64: return 8;
    case DType::bfloat16: return 2;
  }
  return 0;
}

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::bfloat16: return "bfloat16";
  }
  return "?";
}

// The dtypes arithmetic ops compute in. bfloat16 is not one of them: it is only stored and cast.
inline bool is_floating(DType t) { return t == DType::float32 || t == DType::float64; }

// Maps a C++ type to its DType: dtype_of<float>() == DType::float32.
template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::float32; }
template <> constexpr DType dtype_of<double>() { return DType::float64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::int32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::int64; }
template <> constexpr DType dtype_of<bfloat16>() { return DType::bfloat16; }

}  // namespace minidl
