// tests/agrees.h — the one rule by which the tests and the exercises' checkers call a computed number
// right: an infinity matches only the same infinity, NaN only NaN, and finite numbers match when
// |got - want| <= atol + rtol |want|. The usual one-line test, |got - want| <= atol + rtol |want|, is true
// for any finite got when want is infinite (both sides are infinite), and false for two NaNs: an exercise
// checker that used it passed a kernel writing finite values where -inf was expected (issue 28).
// testing::compare (tests/test_util.h) applies it to every element of a tensor, testing::gradcheck to
// each gradient, and the checkers (exercises/common/exercise.h) to single numbers.
#pragma once
#include <cmath>

namespace minidl {
namespace testing {

inline bool agrees(double got, double want, double rtol, double atol) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  if (std::isinf(got) || std::isinf(want)) return got == want;
  return std::fabs(got - want) <= atol + rtol * std::fabs(want);
}

}  // namespace testing
}  // namespace minidl
