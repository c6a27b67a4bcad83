// core/bfloat16.h — the bfloat16 number format, on the host.
//
// bfloat16 is the upper half of a float32: 1 sign bit, the same 8 exponent bits (so the same range,
// about 1e-38 to 3e38) and 7 mantissa bits instead of 23 (about 2-3 significant decimal digits):
//
//   float32   s eeeeeeee mmmmmmmmmmmmmmmmmmmmmmm
//   bfloat16  s eeeeeeee mmmmmmm                  = the float32's top 16 bits, rounded
//
// Converting float32 -> bfloat16 drops the low 16 bits, rounding to the nearest representable value and
// to the even one on a tie (IEEE round-to-nearest-even, what __float2bfloat16_rn does on a GPU):
//   bits16 = (bits32 + 0x7FFF + ((bits32 >> 16) & 1)) >> 16
// Adding 0x7FFF rounds up exactly when the dropped half is above 0x8000; the extra lowest kept bit makes a
// tie (exactly 0x8000) round up only when that bit is odd. A carry out of the mantissa correctly steps
// the exponent; the largest finite floats round to infinity, as IEEE says. NaN is kept a (quiet) NaN:
// rounding could otherwise carry its payload into the infinity pattern.
// Converting back is exact: shift the 16 bits into the top of a float32.
//
// In minidl bfloat16 is a storage type (DType::bfloat16): tensors of it can be created, cast (the op cast,
// with a gradient), copied and filled, and the GPU's BF16 tensor-core kernels read them (`--precision bf16`,
// core/precision.h). Of the arithmetic ops, conv2d, batch_norm (+ReLU) and the pooling ops take bfloat16
// activations (ops/bfloat16_widening.h: bfloat16 kernels where a device has them, else the float32 kernels on
// widened copies); the others refuse them by name.
#pragma once
#include <cstdint>
#include <cstring>

namespace minidl {

struct bfloat16 {
  uint16_t bits = 0;
};

inline bfloat16 float_to_bfloat16(float value) {
  uint32_t bits32;
  std::memcpy(&bits32, &value, sizeof bits32);
  bfloat16 out;
  if ((bits32 & 0x7F800000u) == 0x7F800000u && (bits32 & 0x007FFFFFu) != 0) {  // NaN: keep sign, quiet
    out.bits = static_cast<uint16_t>((bits32 >> 16) | 0x0040u);
    return out;
  }
  const uint32_t rounding = 0x7FFFu + ((bits32 >> 16) & 1u);
  out.bits = static_cast<uint16_t>((bits32 + rounding) >> 16);
  return out;
}

inline float bfloat16_to_float(bfloat16 value) {
  const uint32_t bits32 = static_cast<uint32_t>(value.bits) << 16;
  float out;
  std::memcpy(&out, &bits32, sizeof out);
  return out;
}

// A float64 goes through float32 first (round twice). The result can differ from a single rounding of the
// double only when the first rounding lands exactly on a bfloat16 tie, which does not matter for minidl's
// use (float64 tensors are references; BF16 math starts from float32).
inline bfloat16 double_to_bfloat16(double value) { return float_to_bfloat16(static_cast<float>(value)); }

}  // namespace minidl
