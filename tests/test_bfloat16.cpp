// tests/test_bfloat16.cpp — the bfloat16 storage type (core/bfloat16.h, DType::bfloat16): the host
// conversion against an independent nearest-value search, its special values, and bfloat16 tensors on
// every test device (cast both ways, strided casts, fill, copy, printing), the checkpoint's refusal, and
// arithmetic ops declining them. The GPU's BF16 products are in tests/test_bf16_precision.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/bfloat16.h"
#include "nn/checkpoint.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

float float_of(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// The bfloat16 nearest to a finite x, found without the rounding formula: the two bfloat16 values around
// x are x's float32 bits with the low 16 cleared (toward zero) and the next one away from zero; the nearer
// one wins (distances in double are exact), on a tie the one whose lowest kept bit is 0 (the even one).
uint16_t nearest_bfloat16(float x) {
  const uint32_t b = bits_of(x);
  const uint32_t toward_zero = b & 0xFFFF0000u;
  const uint32_t away = toward_zero + 0x10000u;  // may step into the exponent, or to infinity: both correct
  const double dx = x, d0 = float_of(toward_zero), d1 = float_of(away);
  const double e0 = std::abs(dx - d0), e1 = std::abs(d1 - dx);
  if (e0 < e1) return static_cast<uint16_t>(toward_zero >> 16);
  if (e1 < e0) return static_cast<uint16_t>(away >> 16);
  return static_cast<uint16_t>(((toward_zero >> 16) & 1u) == 0 ? toward_zero >> 16 : away >> 16);
}

}  // namespace

TEST_CASE("bfloat16: rounding to nearest, ties to even, on chosen values", "[bfloat16]") {
  // 1 + 2^-8 lies halfway between 1 (mantissa ...0) and 1 + 2^-7 (...1): the tie goes to 1.
  CHECK(float_to_bfloat16(1.0f).bits == 0x3F80);
  CHECK(float_to_bfloat16(1.0f + std::ldexp(1.0f, -8)).bits == 0x3F80);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even): up.
  CHECK(float_to_bfloat16(1.0f + 3 * std::ldexp(1.0f, -8)).bits == 0x3F82);
  // Just above the first tie: up; just below the second: down.
  CHECK(float_to_bfloat16(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)).bits == 0x3F81);
  CHECK(float_to_bfloat16(std::nextafter(1.0f + 3 * std::ldexp(1.0f, -8), 0.0f)).bits == 0x3F81);
  CHECK(float_to_bfloat16(-2.5f).bits == 0xC020);
  CHECK(float_to_bfloat16(0.0f).bits == 0x0000);
  CHECK(float_to_bfloat16(-0.0f).bits == 0x8000);
  // A carry out of the mantissa steps the exponent: the largest float below 2 rounds to 2.
  CHECK(float_to_bfloat16(std::nextafter(2.0f, 0.0f)).bits == 0x4000);
  // Back to float32 is exact.
  CHECK(bfloat16_to_float(bfloat16{0x3F82}) == 1.0f + std::ldexp(1.0f, -6));
  CHECK(bfloat16_to_float(bfloat16{0xC020}) == -2.5f);
}

TEST_CASE("bfloat16: infinities, NaN, the largest floats and subnormals", "[bfloat16]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(float_to_bfloat16(inf).bits == 0x7F80);
  CHECK(float_to_bfloat16(-inf).bits == 0xFF80);
  // FLT_MAX is above the largest bfloat16 (0x7F7F) by more than half a step: it overflows to infinity.
  CHECK(float_to_bfloat16(std::numeric_limits<float>::max()).bits == 0x7F80);
  CHECK(bfloat16_to_float(float_to_bfloat16(3.0e38f)) == Approx(3.0e38f).epsilon(1.0 / 128));
  // NaN stays NaN, including a NaN whose payload sits only in the low 16 bits (rounding would otherwise
  // carry it into the infinity pattern).
  CHECK(std::isnan(bfloat16_to_float(float_to_bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isnan(bfloat16_to_float(float_to_bfloat16(float_of(0x7F800001u)))));
  CHECK(std::isnan(bfloat16_to_float(float_to_bfloat16(float_of(0xFF80FFFFu)))));
  // Subnormals round like everything else (bfloat16 has float32's exponent range).
  const float tiny = std::numeric_limits<float>::denorm_min();
  CHECK(float_to_bfloat16(tiny).bits == 0x0000);  // 2^-149 is far below half of the smallest bfloat16 step
  CHECK(float_to_bfloat16(float_of(0x00010000u)).bits == 0x0001);
  CHECK(float_to_bfloat16(float_of(0x00018000u)).bits == 0x0002);  // a tie between 1 (odd) and 2: up
}

TEST_CASE("bfloat16: the rounding formula equals the nearest-value search on 200000 floats", "[bfloat16]") {
  // Random bit patterns (every exponent, both signs) and values near 1 with every low-half pattern class.
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return static_cast<uint32_t>(state >> 16);
  };
  int mismatches = 0, checked = 0;
  for (int i = 0; i < 200000; ++i) {
    uint32_t b = next();
    if (i % 4 == 1) b = 0x3F800000u | (b & 0x007FFFFFu);                 // [1, 2)
    if (i % 4 == 2) b = (b & 0xFFFF0000u) | 0x8000u;                     // exact ties
    if ((b & 0x7F800000u) == 0x7F800000u) continue;                      // infinities and NaN: above
    if ((b & 0x7FFFFFFFu) >= 0x7F7F8000u) continue;                      // rounds to infinity: above
    const float x = float_of(b);
    ++checked;
    if (float_to_bfloat16(x).bits != nearest_bfloat16(x) && ++mismatches <= 5)
      FAIL_CHECK("x bits 0x" << std::hex << b << ": formula 0x" << float_to_bfloat16(x).bits << ", nearest 0x"
                             << nearest_bfloat16(x));
  }
  CHECK(mismatches == 0);
  CHECK(checked > 150000);
}

TEST_CASE("bfloat16 tensors: casts both ways, strided views, fill, copy and printing on every device",
          "[bfloat16][cuda]") {
  const std::vector<double> values = {1.0, 1.00390625, 1.01171875, -2.5, 3.0e38, 1e-40, 0.1, -7.3};
  const Tensor host32 = from_vector(values, {2, 4}, DType::float32);
  std::vector<float> expected;
  for (float v : host32.to_vector<float>()) expected.push_back(bfloat16_to_float(float_to_bfloat16(v)));

  for (Device d : test_devices()) {
    INFO("device " << d.str());
    const Tensor x = host32.to(d);
    const Tensor h = x.to(DType::bfloat16);
    CHECK(h.dtype() == DType::bfloat16);
    CHECK(h.device() == d);
    CHECK(h.to(DType::float32).to_vector<float>() == expected);
    CHECK(h.to_vector<float>() == expected);  // to_vector reads bfloat16 directly
    // Raw bits: on the GPU __float2bfloat16_rn must agree with the host rule.
    const Tensor hc = h.to(Device::cpu());
    for (int64_t i = 0; i < hc.numel(); ++i)
      CHECK(hc.data<bfloat16>()[i].bits == float_to_bfloat16(static_cast<float>(values[i])).bits);
    // float64 and int32 go through float32.
    CHECK(x.to(DType::float64).to(DType::bfloat16).to_vector<float>() == expected);
    CHECK(from_vector({3, -300, 257}, {3}, TensorOptions(DType::int32, d)).to(DType::bfloat16).to_vector<float>() ==
          std::vector<float>{3.0f, -300.0f, 256.0f});  // 257 needs 9 significant bits: a tie, to even (256)
    // A transposed (strided) source and a strided destination.
    const Tensor t = h.transpose(0, 1).to(DType::float32);
    CHECK(t.shape() == Shape{4, 2});
    CHECK(t.to_vector<float>() == (std::vector<float>{expected[0], expected[4], expected[1], expected[5], expected[2],
                                                      expected[6], expected[3], expected[7]}));
    Tensor wide = zeros({2, 8}, TensorOptions(DType::bfloat16, d));
    copy_(wide.slice(1, 0, 8, 2), x);  // cast into every other column
    const std::vector<float> w = wide.to_vector<float>();
    CHECK(w[0] == expected[0]);
    CHECK(w[1] == 0.0f);
    CHECK(w[14] == expected[7]);
    // bfloat16 -> bfloat16 copies: contiguous, and through strides.
    Tensor same = empty({2, 4}, TensorOptions(DType::bfloat16, d));
    copy_(same, h);
    CHECK(same.to_vector<float>() == expected);
    Tensor transposed_copy = empty({4, 2}, TensorOptions(DType::bfloat16, d));
    copy_(transposed_copy, h.transpose(0, 1));
    CHECK(transposed_copy.to_vector<float>() == t.to_vector<float>());
    // fill rounds the value once: 0.1 -> 0x3DCD.
    Tensor f = empty({3, 5}, TensorOptions(DType::bfloat16, d));
    fill_(f, 0.1);
    for (float v : f.to_vector<float>()) CHECK(v == bfloat16_to_float(bfloat16{0x3DCD}));
    fill_(f.slice(1, 1, 5, 2), -1.0);
    CHECK(f.to_vector<float>()[1] == -1.0f);
    CHECK(f.to_vector<float>()[2] == bfloat16_to_float(bfloat16{0x3DCD}));
    // From the host through another device and back.
    CHECK(h.to(Device::cpu()).to(d).to_vector<float>() == expected);
    CHECK(h.str().find("bfloat16") != std::string::npos);
  }
}

TEST_CASE("bfloat16 tensors: arithmetic ops and checkpoints refuse them with a message", "[bfloat16]") {
  const Tensor a = ones({2, 2}, DType::bfloat16);
  CHECK(a.to_vector<double>() == std::vector<double>{1, 1, 1, 1});
  CHECK_THROWS_AS(a + a, Error);
  CHECK_THROWS_AS(matmul(a, a), Error);
  Checkpoint ck;
  ck.tensors.push_back({"w", a});
  const std::string path = "/tmp/minidl_test_bfloat16.ckpt";
  CHECK_THROWS_WITH(write_checkpoint(path, ck), Catch::Contains("bfloat16") && Catch::Contains("'w'"));
}
