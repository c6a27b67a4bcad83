// examples/data/captcha_random.h — the random numbers of one captcha (examples/data/captcha_gen.h).
//
// A captcha is a pure function of (seed, index): each (seed, index) gets its own Philox stream, one for the
// text and one for the image, so rendering a text never changes which text an index gets, and any thread
// can draw any captcha in any order. Internal to the generator (captcha_*.cpp).
#pragma once
#include <cstdint>

#include "core/philox.h"

namespace minidl::captcha_gen {

enum class Stream : uint64_t { text = 1, image = 2 };

// The random numbers of one captcha: Philox4x32-10 (core/philox.h) keyed by a hash of (seed, stream,
// index), counter 0, 1, 2, ... So each (seed, index) has its own stream, needing no shared state. Uniform
// and integer draws are built from the raw bits here (std:: distributions differ between libraries).
class CaptchaRandom {
 public:
  CaptchaRandom(uint64_t seed, uint64_t index, Stream stream)
      : key_(splitmix64(splitmix64(splitmix64(seed) ^ static_cast<uint64_t>(stream)) + index)) {}

  uint32_t next_u32() {
    if (used_ == 4) {
      block_ = philox4x32_10(counter_++, key_);
      used_ = 0;
    }
    return block_.v[used_++];
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() {
    const uint64_t hi = next_u32() >> 5, lo = next_u32() >> 6;  // 27 + 26 bits
    return (static_cast<double>(hi) * 67108864.0 + static_cast<double>(lo)) * (1.0 / 9007199254740992.0);
  }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [lo, hi] (multiply-shift: no modulo; its bias is below 2^-32 * span).
  int uniform_int(int lo, int hi) {
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int>((static_cast<uint64_t>(next_u32()) * span) >> 32);
  }

 private:
  uint64_t key_;
  uint64_t counter_ = 0;
  Philox4 block_{};
  int used_ = 4;
};

}  // namespace minidl::captcha_gen
