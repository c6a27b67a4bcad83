// exercises/02-gradient-formulas/check.cpp — the checker of exercise 2: the gradients of softplus and
// hypot at hand-checkable points, then the float64 finite-difference gradient check (tests/test_util.h
// gradcheck) on same-shape and broadcast inputs, inside a larger graph, and without recording (no-grad).
#include <cmath>
#include <sstream>

#include "exercises/02-gradient-formulas/gradients.h"
#include "exercises/common/exercise.h"
#include "ops/ops.h"
#include "tests/test_util.h"

using namespace minidl;

namespace {

Tensor f64(const std::vector<double>& v, const Shape& shape) {
  return from_vector(v, shape, DType::float64).requires_grad_();
}

// gradcheck's report, with a hint for the usual causes.
std::string explain_gradcheck(const std::string& report) {
  if (report.empty()) return "";
  std::string hint;
  if (report.find("analytic 0 ") != std::string::npos)
    hint = "\nAn analytic gradient of 0 where the numeric one is not: does the backward still return zeros (the stub)?";
  return report + "(analytic: what your backward returned; numeric: (L(x+h) - L(x-h)) / 2h, the slope of the loss "
                  "measured by nudging that one element)" + hint;
}

// Runs gradcheck and turns autograd's shape error into advice about broadcasting.
std::string gradcheck_explained(const std::function<Tensor(const std::vector<Tensor>&)>& f, std::vector<Tensor> inputs) {
  try {
    return explain_gradcheck(testing::gradcheck(f, std::move(inputs)));
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.find("has shape") != std::string::npos)
      return what + "\nEach gradient must have the shape of its input. An input that was broadcast (a [4] used "
                    "for every row of a [3, 4]) gets the sum of its contributions over the broadcast dimensions: "
                    "sum_to(t, shape), taken last, on the whole product (sum_to(g * b / y, b.shape())): a sum_to "
                    "followed by a product with a full-shape factor is broadcast back to the full shape.";
    throw;
  }
}

std::string values_close(const Tensor& got, const std::vector<double>& expected, const std::string& what) {
  const std::vector<double> v = got.to_vector<double>();
  std::ostringstream os;
  for (size_t i = 0; i < expected.size(); ++i)
    if (!exercise::agrees(v[i], expected[i], 1e-6, 1e-6)) {
      os << what << "[" << i << "] is " << v[i] << ", expected " << expected[i] << "\n";
    }
  return os.str();
}

}  // namespace

int main(int argc, char** argv) {
  exercise::Checker c(argc, argv, {2, "the gradients of softplus and hypot", "exercises/02-gradient-formulas/gradients.cpp"});

  c.section("2a  softplus(x) = log(1 + exp(x)),  d/dx = sigmoid(x)");
  c.check("the gradient of sum(softplus(x)) at x = [-2, 0, 3] is sigmoid(x) = [0.1192, 0.5, 0.9526]", [] {
    Tensor x = f64({-2, 0, 3}, {3});
    sum(student_softplus(x)).backward();
    if (!x.grad().defined()) return std::string("no gradient reached x: is the node attached (attach_grad_fn)?");
    const std::string bad = values_close(x.grad(), {1 / (1 + std::exp(2.0)), 0.5, 1 / (1 + std::exp(-3.0))}, "x.grad");
    return bad.empty() ? "" : bad + "(with L = sum(softplus(x)), g = dL/d(out) is all ones, so x.grad = sigmoid(x))";
  });
  c.check("gradcheck, x [3, 4] in [-3, 3]", [] {
    return gradcheck_explained([](const std::vector<Tensor>& in) { return student_softplus(in[0]); },
                               {testing::uniform({3, 4}, -3, 3).requires_grad_()});
  });
  c.check("gradcheck inside a larger graph: softplus(x) * x + softplus(x) (x reaches the loss three ways)", [] {
    return gradcheck_explained(
        [](const std::vector<Tensor>& in) {
          const Tensor s = student_softplus(in[0]);
          return add(mul(s, in[0]), s);
        },
        {testing::uniform({5}, -2, 2).requires_grad_()});
  });
  c.check("records nothing under NoGradGuard, or when x needs no gradient", [] {
    Tensor x = f64({1, 2}, {2});
    Tensor plain = from_vector({1, 2}, {2}, DType::float64);
    std::string problem;
    {
      NoGradGuard no_grad;
      if (student_softplus(x).requires_grad()) problem += "under NoGradGuard the output requires grad\n";
    }
    if (student_softplus(plain).requires_grad()) problem += "for an input without requires_grad the output requires grad\n";
    return problem;
  });

  c.section("2b  hypot(a, b) = sqrt(a^2 + b^2),  d/da = a / hypot,  d/db = b / hypot");
  c.check("the gradients of hypot(3, 4) = 5 are (3/5, 4/5) = (0.6, 0.8)", [] {
    Tensor a = f64({3}, {1}), b = f64({4}, {1});
    student_hypot(a, b).backward();
    if (!a.grad().defined() || !b.grad().defined())
      return std::string("no gradient reached a or b: is the node attached (attach_grad_fn)?");
    return values_close(a.grad(), {0.6}, "a.grad") + values_close(b.grad(), {0.8}, "b.grad");
  });
  c.check("gradcheck, a and b [3, 4]", [] {
    return gradcheck_explained([](const std::vector<Tensor>& in) { return student_hypot(in[0], in[1]); },
                               {testing::uniform({3, 4}, 0.5, 2).requires_grad_(),
                                testing::uniform({3, 4}, -2, -0.5).requires_grad_()});
  });
  c.check("gradcheck with only a needing a gradient (b a constant)", [] {
    return gradcheck_explained([](const std::vector<Tensor>& in) { return student_hypot(in[0], in[1]); },
                               {testing::uniform({2, 3}, 0.5, 2).requires_grad_(), testing::uniform({2, 3}, 0.5, 2)});
  });
  c.check("broadcast: a [3, 4] with b [4] (b's gradient sums over the rows)", [] {
    return gradcheck_explained([](const std::vector<Tensor>& in) { return student_hypot(in[0], in[1]); },
                               {testing::uniform({3, 4}, 0.5, 2).requires_grad_(),
                                testing::uniform({4}, 0.5, 2).requires_grad_()});
  });
  c.check("broadcast both ways: a [3, 1] with b [1, 4]", [] {
    return gradcheck_explained([](const std::vector<Tensor>& in) { return student_hypot(in[0], in[1]); },
                               {testing::uniform({3, 1}, 0.5, 2).requires_grad_(),
                                testing::uniform({1, 4}, 0.5, 2).requires_grad_()});
  });
  c.check("broadcast: a [2, 3, 4] with b [3, 1]", [] {
    return gradcheck_explained([](const std::vector<Tensor>& in) { return student_hypot(in[0], in[1]); },
                               {testing::uniform({2, 3, 4}, 0.5, 2).requires_grad_(),
                                testing::uniform({3, 1}, 0.5, 2).requires_grad_()});
  });

  if (c.timing_wanted())
    c.note("no timing in this exercise: both ops run existing kernels (chapter 10 times what fusing them saves)");
  return c.finish();
}
