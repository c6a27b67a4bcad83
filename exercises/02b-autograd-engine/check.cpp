// exercises/02b-autograd-engine/check.cpp — the checker of exercise 2b: each op's local gradient against a
// finite difference (2b.1), then the backward walk (2b.2): leaves reached and accumulated, a node used twice,
// diamonds, each node run once, and a float64 finite-difference gradient check of whole expressions (a
// neuron, a small MLP, micrograd's own test expression) whose messages say whether to blame an op or the walk.
// `--stretch` adds a graph a million nodes deep (a recursive depth-first search overflows the stack there).
#include <cmath>
#include <cstring>
#include <functional>
#include <sstream>

#include "exercises/02b-autograd-engine/engine.h"
#include "exercises/common/exercise.h"

namespace exercise = minidl::exercise;
using namespace minidl::engine;

namespace {

using Build = std::function<Value(const std::vector<Value>&)>;

template <class... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

// Frees a deep graph one node at a time (each Node owning its inputs would free a long chain recursively).
void dismantle(Value& root) {
  std::vector<std::shared_ptr<Node>> stack{root.ptr()};
  root = Value();
  while (!stack.empty()) {
    std::shared_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    for (auto& in : n->inputs) stack.push_back(std::move(in));
    n->inputs.clear();
  }
}

bool close(double got, double want, double tol = 1e-6) {
  return std::fabs(got - want) <= tol * (1 + std::fabs(want));  // false for NaN, and for inf against finite
}

std::vector<Value> leaves(const std::vector<double>& point) {
  std::vector<Value> out;
  for (double v : point) out.emplace_back(v);
  return out;
}

// d f / d point[i] by central differences, in double precision.
double numeric_derivative(const Build& f, std::vector<double> point, size_t i) {
  const double h = 1e-6 * (1 + std::fabs(point[i]));
  point[i] += h;
  const double up = f(leaves(point)).value();
  point[i] -= 2 * h;
  const double down = f(leaves(point)).value();
  return (up - down) / (2 * h);
}

// The ops whose local gradient failed in 2b.1, to say where to look when a whole expression fails in 2b.2.
std::vector<std::string> failed_ops;

std::string blame() {
  if (failed_ops.empty())
    return "Every op's input_gradients passed 2b.1, so look at the walk: is every node run after all the nodes "
           "that use it (the order), and does each input get the SUM of what its users send (pending sums)?";
  std::string ops;
  for (const std::string& op : failed_ops) ops += (ops.empty() ? "" : ", ") + op;
  return "input_gradients failed in 2b.1 for: " + ops + ". Fix those first; this check uses them.";
}

// 2b.1: input_gradients of the node that f builds from leaves at `point`, with g = 0.7, against g times the
// finite difference of f for each input.
std::string check_local(const std::string& op, const Build& f, const std::vector<double>& point) {
  const double g = 0.7;
  const std::vector<Value> in = leaves(point);
  const Value out = f(in);
  const std::vector<double> got = input_gradients(out.node(), g);
  std::ostringstream os;
  if (got.size() != point.size()) {
    os << "input_gradients returned " << got.size() << " values for a node with " << point.size()
       << " inputs: return one gradient per input, in order";
  } else {
    for (size_t i = 0; i < point.size(); ++i) {
      const double want = g * numeric_derivative(f, point, i);
      if (!close(got[i], want, 1e-5))
        os << "dL/d(input " << i << ") is " << got[i] << ", expected " << want << " (g = " << g
           << " times the finite-difference slope)\n";
    }
    if (!os.str().empty()) os << "inputs at " << [&] {
      std::ostringstream p;
      for (size_t i = 0; i < point.size(); ++i) p << (i ? ", " : "") << point[i];
      return p.str();
    }() << "; node.value = " << out.value();
  }
  if (!os.str().empty() && (failed_ops.empty() || failed_ops.back() != op)) failed_ops.push_back(op);
  return os.str();
}

// 2b.2: backward(f(leaves)) against finite differences of f, for every leaf.
std::string gradcheck(const Build& f, const std::vector<double>& point) {
  const std::vector<Value> in = leaves(point);
  backward(f(in));
  std::ostringstream os;
  int bad = 0;
  for (size_t i = 0; i < point.size(); ++i) {
    const double want = numeric_derivative(f, point, i);
    if (!close(in[i].grad(), want, 1e-5) && bad++ < 4)
      os << "leaf " << i << " (value " << point[i] << "): grad " << in[i].grad() << ", finite difference " << want << "\n";
  }
  if (bad == 0) return "";
  os << bad << " of " << point.size() << " leaves wrong.\n" << blame();
  return os.str();
}

// Every node of the graph below root, each once.
void collect(Node* root, std::vector<Node*>& out) {
  std::vector<Node*> stack{root};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    bool seen = false;
    for (Node* m : out) seen = seen || m == n;
    if (seen) continue;
    out.push_back(n);
    for (const auto& in : n->inputs) stack.push_back(in.get());
  }
}

// Layers of diamonds: each x is used twice by the next layer.
Value stacked_diamonds(const Value& x, int layers) {
  Value y = x;
  for (int k = 0; k < layers; ++k) y = tanh(y) * y + Value(0.1);
  return y;
}

// micrograd's test expression (test/test_engine.py, test_more_ops), with a and b as the leaves.
Value micrograd_expression(const std::vector<Value>& in) {
  const Value a = in[0], b = in[1];
  const Value one(1.0), two(2.0), three(3.0), ten(10.0), zero(0.0);
  Value c = a + b;
  Value d = a * b + pow(b, 3);
  c = c + c + one;
  c = c + one + c + (zero - a);
  d = d + d * two + relu(b + a);
  d = d + three * d + relu(b - a);
  const Value e = c - d;
  const Value f = pow(e, 2);
  Value g = f / two;
  g = g + ten / f;
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  bool stretch = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--stretch") == 0)
      stretch = true;
    else
      args.push_back(argv[i]);
  }
  exercise::Checker c(static_cast<int>(args.size()), args.data(),
                      {"2b", "the autograd engine", "exercises/02b-autograd-engine/engine.cpp"});

  c.section("2b.1  input_gradients: each op's local gradient, against a finite difference (g = 0.7)");
  struct Local {
    std::string op, where;
    Build f;
    std::vector<double> point;
  };
  const std::vector<Local> locals = {
      {"add", "a + b", [](const std::vector<Value>& v) { return v[0] + v[1]; }, {1.5, -2.0}},
      {"sub", "a - b", [](const std::vector<Value>& v) { return v[0] - v[1]; }, {1.5, -2.0}},
      {"mul", "a * b", [](const std::vector<Value>& v) { return v[0] * v[1]; }, {1.5, -2.0}},
      {"div", "a / b", [](const std::vector<Value>& v) { return v[0] / v[1]; }, {1.5, -2.0}},
      {"pow", "a^3", [](const std::vector<Value>& v) { return pow(v[0], 3); }, {-1.3}},
      {"pow", "a^0.5", [](const std::vector<Value>& v) { return pow(v[0], 0.5); }, {2.0}},
      {"pow", "a^-1", [](const std::vector<Value>& v) { return pow(v[0], -1); }, {0.8}},
      {"exp", "exp(a)", [](const std::vector<Value>& v) { return exp(v[0]); }, {0.4}},
      {"log", "log(a)", [](const std::vector<Value>& v) { return log(v[0]); }, {2.5}},
      {"tanh", "tanh(a)", [](const std::vector<Value>& v) { return tanh(v[0]); }, {0.6}},
      {"relu", "relu(a), a > 0", [](const std::vector<Value>& v) { return relu(v[0]); }, {0.9}},
      {"relu", "relu(a), a < 0", [](const std::vector<Value>& v) { return relu(v[0]); }, {-0.9}},
      {"sum", "sum of 4", [](const std::vector<Value>& v) { return sum(v); }, {1, -2, 3, 0.5}},
      {"mean", "mean of 4", [](const std::vector<Value>& v) { return mean(v); }, {1, -2, 3, 0.5}},
  };
  for (const Local& l : locals)
    c.check(l.op + ": " + l.where, [&] { return check_local(l.op, l.f, l.point); });

  c.section("2b.2  backward: the walk (order, pending sums, accumulation into leaves)");
  c.check("z = x * y: x.grad = y = -2, y.grad = x = 3", [] {
    Value x(3.0), y(-2.0);
    backward(x * y);
    if (x.grad() == 0 && y.grad() == 0)
      return std::string("no gradient reached the leaves: does backward() walk from root down to the leaves and add "
                         "to each leaf's node.grad?");
    std::string bad;
    if (!close(x.grad(), -2)) bad += cat("x.grad is ", x.grad(), ", expected -2\n");
    if (!close(y.grad(), 3)) bad += cat("y.grad is ", y.grad(), ", expected 3\n");
    return bad.empty() ? bad : bad + blame();
  });
  c.check("root is a leaf: backward(x) gives x.grad = 1", [] {
    Value x(4.0);
    backward(x);
    return close(x.grad(), 1) ? "" : cat("x.grad is ", x.grad(), ", expected 1 (dL/dL = 1: the walk starts there)");
  });
  c.check("a node used twice: z = x * x at x = 3 gives x.grad = 2x = 6", [] {
    Value x(3.0);
    backward(x * x);
    if (close(x.grad(), 3))
      return std::string("x.grad is 3, one of its two contributions: x is both inputs of the mul; a node's "
                         "gradient is the SUM over its uses (add each into its pending sum, do not overwrite)");
    return close(x.grad(), 6) ? "" : cat("x.grad is ", x.grad(), ", expected 6\n") + blame();
  });
  c.check("a diamond: a = x * y; L = exp(a) + log(a) * a (a reaches L three ways)", [] {
    return gradcheck([](const std::vector<Value>& v) {
      const Value a = v[0] * v[1];
      return exp(a) + log(a) * a;
    }, {0.7, 1.3});
  });
  c.check("each node that is not a leaf runs once (20 stacked diamonds)", [] {
    Value x(0.3);
    const Value root = stacked_diamonds(x, 20);
    backward(root);
    std::vector<Node*> nodes;
    collect(&root.node(), nodes);
    for (Node* n : nodes) {
      if (n->op == Op::leaf) continue;
      if (n->runs == 0)
        return cat("a ", op_name(n->op), " node never ran: the walk must get every node's input gradients through "
                                        "run_node_backward(node, g) (engine.h), which counts the runs");
      if (n->runs > 1)
        return cat("a ", op_name(n->op), " node ran ", n->runs, " times: run each node once, with its complete "
                   "pending sum, in topological order. A walk that follows every path separately runs a node once "
                   "per path, 2^layers times here");
    }
    return std::string();
  });
  c.check("leaves accumulate: a second backward adds the same gradient again (x.grad 6, then 12)", [] {
    Value x(3.0);
    const Value z = x * x;
    backward(z);
    const double first = x.grad();
    backward(z);
    if (close(first, 6) && close(x.grad(), 6))
      return std::string("after two calls x.grad is still 6: add to leaf.grad (+=), do not assign (=); "
                         "a training loop's zero_grad() is what clears it");
    if (close(first, 6) && !close(x.grad(), 12))
      return cat("after two calls x.grad is ", x.grad(), ", expected 12: do the pending sums start from zero at "
                                                        "each call?");
    return close(x.grad(), 12) ? "" : cat("after one call x.grad is ", first, ", expected 6\n") + blame();
  });
  c.check("only leaves hold a gradient: node.grad stays 0 on the others", [] {
    Value x(0.5), y(2.0);
    const Value a = x * y, b = tanh(a);
    backward(b * a);
    if (a.grad() != 0 || b.grad() != 0)
      return cat("the inner node a = x * y has grad ", a.grad(), ": keep pending sums in a table for the walk (as "
                                                                  "minidl's run_backward does) and write only leaves' grad");
    return std::string();
  });

  c.section("2b.2  backward: finite-difference gradient check of whole expressions (float64)");
  c.check("a neuron: tanh(w1 x1 + w2 x2 + b)", [] {
    return gradcheck([](const std::vector<Value>& v) { return tanh(v[0] * v[1] + v[2] * v[3] + v[4]); },
                     {0.5, -1.2, 0.3, 0.8, 0.1});
  });
  c.check("logsumexp(x) - x_0 over 4 values (sum, exp, log; x_0 used twice)", [] {
    return gradcheck([](const std::vector<Value>& v) {
      std::vector<Value> e;
      for (const Value& x : v) e.push_back(exp(x));
      return log(sum(e)) - v[0];
    }, {0.2, -1.0, 1.5, 0.3});
  });
  c.check("(x + y)^2 / (x * y) + sqrt(x) - 1 / y", [] {
    return gradcheck([](const std::vector<Value>& v) {
      return pow(v[0] + v[1], 2) / (v[0] * v[1]) + pow(v[0], 0.5) - Value(1.0) / v[1];
    }, {1.7, 0.6});
  });
  c.check("an MLP 2-3-1 (tanh, relu), mean squared error over 3 samples", [] {
    // leaves: w1 (3x2), b1 (3), w2 (3), b2 (1): 13 parameters; the samples are constants.
    return gradcheck([](const std::vector<Value>& p) {
      const double xs[3][2] = {{0.5, -1.0}, {1.5, 0.3}, {-0.7, 0.9}}, ys[3] = {0.2, -0.4, 0.9};
      std::vector<Value> errors;
      for (int s = 0; s < 3; ++s) {
        std::vector<Value> hidden;
        for (int j = 0; j < 3; ++j) {
          const Value pre = p[2 * j] * Value(xs[s][0]) + p[2 * j + 1] * Value(xs[s][1]) + p[6 + j];
          hidden.push_back(j == 1 ? relu(pre) : tanh(pre));
        }
        const Value out = hidden[0] * p[9] + hidden[1] * p[10] + hidden[2] * p[11] + p[12];
        errors.push_back(pow(out - Value(ys[s]), 2));
      }
      return mean(errors);
    }, {0.3, -0.5, 0.8, 0.2, -0.4, 0.6, 0.1, 0.25, -0.2, 0.7, -0.3, 0.5, 0.05});
  });
  c.check("micrograd's test expression: a.grad = 138.8338, b.grad = 645.5773", [] {
    const std::string fd = gradcheck(micrograd_expression, {-4.0, 2.0});
    if (!fd.empty()) return fd;
    const std::vector<Value> in = leaves({-4.0, 2.0});
    backward(micrograd_expression(in));
    if (!close(in[0].grad(), 138.83381924198252) || !close(in[1].grad(), 645.5772594752186))
      return cat("a.grad ", in[0].grad(), ", b.grad ", in[1].grad(), ": expected 138.8338 and 645.5773 (PyTorch's)");
    return std::string();
  });
  c.check("a chain 10000 nodes deep: x * 1.0001, 10000 times", [] {
    Value x(1.0);
    Value y = x;
    for (int k = 0; k < 10000; ++k) y = y * Value(1.0001);
    backward(y);
    const double want = std::pow(1.0001, 10000);
    dismantle(y);
    return close(x.grad(), want) ? "" : cat("x.grad is ", x.grad(), ", expected ", want, "\n") + blame();
  });
  if (stretch) {
    c.check("stretch: a chain 1000000 nodes deep (a recursive depth-first search overflows the stack)", [] {
      Value x(1.0);
      Value y = x;
      for (int k = 0; k < 1000000; ++k) y = y + Value(1.0);
      backward(y);
      dismantle(y);
      return close(x.grad(), 1) ? "" : cat("x.grad is ", x.grad(), ", expected 1");
    });
  }

  if (c.timing_wanted()) c.note("no timing in this exercise: the engine is for understanding, not for speed");
  return c.finish();
}
