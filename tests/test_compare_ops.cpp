// tests/test_compare_ops.cpp — the comparison ops eq, ne, gt, ge, lt, le (ops/compare.cpp): every kernel
// on every device against the naive CPU reference (with broadcasting, views and ties), values by hand,
// integer inputs (argmax's int64), the scalar forms, no gradient; and from_vector's typed overloads.
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>

#include "core/autograd.h"
#include "core/random.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

using BinaryOp = std::function<Tensor(const Tensor&, const Tensor&)>;

struct CompareCase {
  const char* key;
  BinaryOp op;
  bool (*truth)(double, double);
};

const std::vector<CompareCase>& compare_cases() {
  static const std::vector<CompareCase> cases = {
      {"eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }, [](double a, double b) { return a == b; }},
      {"ne", [](const Tensor& a, const Tensor& b) { return ne(a, b); }, [](double a, double b) { return a != b; }},
      {"gt", [](const Tensor& a, const Tensor& b) { return gt(a, b); }, [](double a, double b) { return a > b; }},
      {"ge", [](const Tensor& a, const Tensor& b) { return ge(a, b); }, [](double a, double b) { return a >= b; }},
      {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }, [](double a, double b) { return a < b; }},
      {"le", [](const Tensor& a, const Tensor& b) { return le(a, b); }, [](double a, double b) { return a <= b; }},
  };
  return cases;
}

// Values on a grid of quarters in [-1, 1], so that a and b are often equal (ties decide eq, ge, le).
Tensor quarters(const Shape& shape) {
  Tensor u = uniform(shape, -4.999, 5, DType::float64);
  std::vector<double> v = u.to_vector<double>();
  for (double& x : v) x = static_cast<double>(static_cast<int>(x)) / 4;
  return from_vector(v, shape, DType::float32);
}

}  // namespace

TEST_CASE("compare: every kernel matches the naive reference, with broadcasting, views and ties", "[compare]") {
  manual_seed(41);
  struct Pair {
    std::string name;
    Shape a, b;
    bool transpose_a;
  };
  const std::vector<Pair> pairs = {
      {"same shape [37,41]", {37, 41}, {37, 41}, false},
      {"[5,1,7] with [3,1]", {5, 1, 7}, {3, 1}, false},
      {"transposed [41,37] with [41]", {41, 37}, {41}, true},
      {"[6,5] with a 0-d tensor", {6, 5}, {}, false},
      {"large [211,203] with [203]", {211, 203}, {203}, false},
  };
  for (const CompareCase& c : compare_cases()) {
    for (const Pair& p : pairs) {
      INFO("op " << c.key << ", inputs " << p.name);
      const Tensor a = quarters(p.a), b = quarters(p.b);
      auto view_a = [&](const Tensor& t) { return p.transpose_a ? t.transpose(0, 1) : t; };
      Tensor ref;
      {
        SelectionReset reset;
        select_kernel(c.key, DeviceType::cpu, "naive");
        ref = c.op(view_a(a), b);
      }
      // The reference itself, element by element against the C++ operator.
      const Tensor ea = view_a(a).expand(ref.shape()).contiguous(), eb = b.expand(ref.shape()).contiguous();
      const std::vector<float> va = ea.to_vector<float>(), vb = eb.to_vector<float>(), vr = ref.to_vector<float>();
      int64_t wrong = 0, ones = 0;
      for (size_t i = 0; i < vr.size(); ++i) {
        wrong += vr[i] != (c.truth(va[i], vb[i]) ? 1.0f : 0.0f);
        ones += vr[i] == 1.0f;
      }
      CHECK(wrong == 0);
      CHECK(ref.dtype() == DType::float32);
      for_each_kernel(c.key, [&](Device d, const std::string& name) {
        const Tensor xa = view_a(a.to(d)), xb = b.to(d);
        const Tensor got = c.op(xa, xb);
        const bool plain = xa.is_contiguous() && xa.shape() == xb.shape();
        CHECK(served_or_declined(c.key, d.type, name, /*may_decline=*/!plain));
        CHECK(compare(got, ref, 0, 0) == "");
      });
    }
  }
}

TEST_CASE("compare: values by hand, scalar forms, integer inputs, no gradient", "[compare]") {
  const Tensor a = from_vector({1, 2, 3, 4}, {4});
  const Tensor b = from_vector({4, 2, 1, 4}, {4});
  CHECK(eq(a, b).to_vector<float>() == std::vector<float>{0, 1, 0, 1});
  CHECK(ne(a, b).to_vector<float>() == std::vector<float>{1, 0, 1, 0});
  CHECK(gt(a, b).to_vector<float>() == std::vector<float>{0, 0, 1, 0});
  CHECK(ge(a, b).to_vector<float>() == std::vector<float>{0, 1, 1, 1});
  CHECK(lt(a, b).to_vector<float>() == std::vector<float>{1, 0, 0, 0});
  CHECK(le(a, b).to_vector<float>() == std::vector<float>{1, 1, 0, 1});
  CHECK(gt(a, 2.5).to_vector<float>() == std::vector<float>{0, 0, 1, 1});
  CHECK(eq(a, 2).to_vector<float>() == std::vector<float>{0, 1, 0, 0});
  CHECK(le(a, 1).to_vector<float>() == std::vector<float>{1, 0, 0, 0});

  // A float64 input keeps its dtype; mixed float32 and float64 meet in float64.
  CHECK(eq(a.to(DType::float64), 2.0).dtype() == DType::float64);
  CHECK(eq(a, b.to(DType::float64)).dtype() == DType::float64);

  // Accuracy as a user writes it: argmax (int64) against int64 labels.
  const Tensor logits = from_vector({0.1, 0.9, 0.8, 0.2, 0.3, 0.7}, {3, 2});
  const Tensor labels = from_vector(std::vector<int64_t>{1, 1, 1}, {3}, DType::int64);
  const Tensor hits = eq(argmax(logits, 1), labels);
  CHECK(hits.dtype() == DType::float64);
  CHECK(hits.to_vector<double>() == std::vector<double>{1, 0, 1});
  CHECK(mean(hits).item<double>() == Approx(2.0 / 3));

  // No gradient: the output never requires grad, and a graph through it does not reach the input.
  Tensor x = from_vector({-1, 0.5, 2}, {3}, TensorOptions(DType::float64).with_requires_grad());
  const Tensor mask = gt(x, 0.0);
  CHECK_FALSE(mask.requires_grad());
  CHECK(mask.to_vector<double>() == std::vector<double>{0, 1, 1});

  CHECK_THROWS_WITH(eq(from_vector({1, 2}, {2}), from_vector({1, 2, 3}, {3})), Catch::Contains("eq: shapes"));
}

TEST_CASE("from_vector: float, int32 and int64 vectors and braced lists", "[tensor]") {
  const std::vector<float> f{1.5f, -2.25f, 3.0f};
  const Tensor tf = from_vector(f, {3});
  CHECK(tf.dtype() == DType::float32);
  CHECK(tf.to_vector<float>() == f);
  CHECK(from_vector(f, {3}, DType::float64).to_vector<double>() == std::vector<double>{1.5, -2.25, 3.0});

  const std::vector<int64_t> big{(int64_t(1) << 60) + 1, -7, 0};
  const Tensor ti = from_vector(big, {3}, DType::int64);
  CHECK(ti.to_vector<int64_t>() == big);  // exact: not through double, which would lose the + 1
  CHECK(from_vector(std::vector<int32_t>{3, -4}, {2}, DType::int32).to_vector<int32_t>() ==
        std::vector<int32_t>{3, -4});
  CHECK(from_vector(std::vector<int32_t>{3, -4}, {2}).to_vector<float>() == std::vector<float>{3, -4});

  const Tensor braced = from_vector({1, 2, 3, 4}, {2, 2});
  CHECK(braced.dtype() == DType::float32);
  CHECK(braced.to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  CHECK(from_vector(f, {3}, TensorOptions(DType::float32).with_requires_grad()).requires_grad());
  CHECK_THROWS_WITH(from_vector(f, {2}), Catch::Contains("from_vector: 3 values for shape [2]"));
  CHECK_THROWS_WITH(from_vector(big, {2, 2}), Catch::Contains("from_vector: 3 values"));
}
