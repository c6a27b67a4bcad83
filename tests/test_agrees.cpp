// tests/test_agrees.cpp — the comparison the tests and the exercises' checkers share (tests/agrees.h):
// an infinity or NaN matches only itself, in single numbers (agrees), tensors (compare) and gradient
// checks (gradcheck). The rule it replaced let any finite value pass where -inf was expected (issue 28).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "core/autograd.h"
#include "tests/agrees.h"
#include "tests/test_util.h"

using namespace minidl;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

// The identity, with a backward that returns NaN: a gradient check must fail on it.
Tensor identity_with_nan_gradient(const Tensor& x) {
  Tensor out = mul_scalar(x.detach(), 1.0);
  if (needs_grad({x}))
    attach_grad_fn(out, "NanGradient", {x}, [](const Tensor& g) { return InputGradients{mul_scalar(g, NAN)}; });
  return out;
}

}  // namespace

TEST_CASE("exercise checkers and tests compare numbers alike: an infinity or NaN matches only itself", "[check_util]") {
  CHECK(testing::agrees(1.0, 1.0 + 1e-10, 1e-9, 1e-9));
  CHECK_FALSE(testing::agrees(1.1, 1.0, 1e-9, 1e-9));
  CHECK(testing::agrees(-kInf, -kInf, 1e-9, 1e-9));
  CHECK_FALSE(testing::agrees(-0.693, -kInf, 1e-9, 1e-9));  // |got - want| <= tol (1 + |want|) said yes here
  CHECK_FALSE(testing::agrees(-kInf, -0.693, 1e-9, 1e-9));
  CHECK_FALSE(testing::agrees(kInf, -kInf, 1e-9, 1e-9));
  CHECK(testing::agrees(NAN, NAN, 0, 0));
  CHECK_FALSE(testing::agrees(NAN, 1.0, 1e9, 1e9));
  CHECK_FALSE(testing::agrees(1.0, NAN, 1e9, 1e9));

  const Tensor want = from_vector({-kInf, 1.0, kInf}, {3}, DType::float64);
  CHECK(testing::compare(from_vector({-kInf, 1.0, kInf}, {3}, DType::float64), want, 1e-6, 1e-6).empty());
  const std::string report = testing::compare(from_vector({-5.0, 1.0, 1e300}, {3}, DType::float64), want, 1e-6, 1e-6);
  INFO(report);
  CHECK(report.find("2 of 3 elements differ") != std::string::npos);
  CHECK(report.find("2 with a NaN or an infinity") != std::string::npos);

  const std::string grad_report = testing::gradcheck(
      [](const std::vector<Tensor>& in) { return identity_with_nan_gradient(in[0]); },
      {testing::uniform({3}, -1, 1).requires_grad_()});
  INFO(grad_report);
  CHECK(grad_report.find("3 gradient mismatches") != std::string::npos);
}
