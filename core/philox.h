// core/philox.h — Philox4x32-10, a counter-based random number generator (Salmon et al., SC'11).
//
// Counter-based means: the n-th random number of a stream is a pure function of (seed, n), so any
// thread can compute any element without shared state. CPU and CUDA kernels use this same header, and so
// produce bit-identical random numbers (dropout masks, initialisation) for the same seed.
//
// One round maps a 128-bit counter (c0..c3) with a 64-bit key (k0, k1):
//   (hi0, lo0) = M0 * c0,  (hi1, lo1) = M1 * c2              (32x32 -> 64-bit products)
//   c' = (hi1 ^ c1 ^ k0,  lo1,  hi0 ^ c3 ^ k1,  lo0)
//   k0 += W0,  k1 += W1
// after 10 rounds the counter is the random output (four 32-bit words).
#pragma once
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define MINIDL_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define MINIDL_HOST_DEVICE inline
#endif

namespace minidl {

struct Philox4 {
  uint32_t v[4];
};

MINIDL_HOST_DEVICE Philox4 philox4x32_10(uint64_t counter, uint64_t seed) {
  const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u, W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(M0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(M1) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += W0;
    k1 += W1;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// Uniform in [0, 1) with 24 random bits (exactly representable as float).
MINIDL_HOST_DEVICE float philox_uniform(uint64_t seed, uint64_t index) {
  return static_cast<float>(philox4x32_10(index, seed).v[0] >> 8) * (1.0f / 16777216.0f);
}

// Standard normal by Box-Muller from two words of one Philox output (computed in double on the host
// and device alike, so both agree to the last bit of the float result in practice).
MINIDL_HOST_DEVICE double philox_normal(uint64_t seed, uint64_t index) {
  const Philox4 r = philox4x32_10(index, seed);
  const double u1 = (static_cast<double>(r.v[0]) + 1.0) * (1.0 / 4294967296.0);  // (0, 1]
  const double u2 = static_cast<double>(r.v[1]) * (1.0 / 4294967296.0);          // [0, 1)
  const double radius = std::sqrt(-2.0 * std::log(u1));
  return radius * std::cos(6.283185307179586 * u2);
}

// SplitMix64's finaliser (Steele, Lea, Flood, 2014): a 64-bit value mixed so that nearby inputs give
// unrelated outputs. Used to derive Philox keys from structured numbers (seed, epoch, sample index):
// key = splitmix64(splitmix64(seed) + epoch) and so on, one stream per combination.
MINIDL_HOST_DEVICE uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace minidl
