// exercises/02b-autograd-engine/engine.h — the mini autograd engine of exercise 2b, given: a scalar Value in
// double precision, its graph nodes and the forward ops; and what the student's file (engine.cpp) defines,
// the local gradients and the backward walk. Chapter: docs/course/02-autograd.md. Self-contained: it uses
// nothing of minidl, so the whole engine fits in two files (micrograd's engine.py, in C++).
#pragma once
#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace minidl {
namespace engine {

// What made a node: a leaf (an input or a constant) or one of the ops below.
enum class Op { leaf, add, sub, mul, div, pow, exp, log, tanh, relu, sum, mean };

inline const char* op_name(Op op) {
  static const char* names[] = {"leaf", "add", "sub", "mul", "div", "pow", "exp", "log", "tanh", "relu", "sum", "mean"};
  return names[static_cast<int>(op)];
}

// One node of the graph: its value, the op that made it and the nodes it was made from (its inputs, in
// the op's argument order: for sub(a, b), inputs[0] is a and inputs[1] is b).
struct Node {
  double value = 0;
  Op op = Op::leaf;
  std::vector<std::shared_ptr<Node>> inputs;
  double exponent = 0;  // pow's p (a constant, not an input)
  double grad = 0;      // dL/d(this), accumulated (+=) by backward(), on leaves only; 0 on other nodes
  int runs = 0;         // how many times run_node_backward ran on this node (the checker reads it)
};

// A handle on a node, as a Tensor is a handle on its storage: copies share the node.
class Value {
 public:
  Value(double v = 0) : node_(std::make_shared<Node>()) { node_->value = v; }  // a leaf
  Value(Op op, double v, std::vector<std::shared_ptr<Node>> inputs, double exponent = 0)
      : node_(std::make_shared<Node>()) {
    node_->op = op;
    node_->value = v;
    node_->inputs = std::move(inputs);
    node_->exponent = exponent;
  }
  double value() const { return node_->value; }
  double grad() const { return node_->grad; }
  Node& node() const { return *node_; }
  const std::shared_ptr<Node>& ptr() const { return node_; }

 private:
  std::shared_ptr<Node> node_;
};

// The forward ops. Each computes its value and records its inputs; none computes a gradient.
inline Value add(const Value& a, const Value& b) { return Value(Op::add, a.value() + b.value(), {a.ptr(), b.ptr()}); }
inline Value sub(const Value& a, const Value& b) { return Value(Op::sub, a.value() - b.value(), {a.ptr(), b.ptr()}); }
inline Value mul(const Value& a, const Value& b) { return Value(Op::mul, a.value() * b.value(), {a.ptr(), b.ptr()}); }
inline Value div(const Value& a, const Value& b) { return Value(Op::div, a.value() / b.value(), {a.ptr(), b.ptr()}); }
inline Value pow(const Value& a, double p) { return Value(Op::pow, std::pow(a.value(), p), {a.ptr()}, p); }
inline Value exp(const Value& a) { return Value(Op::exp, std::exp(a.value()), {a.ptr()}); }
inline Value log(const Value& a) { return Value(Op::log, std::log(a.value()), {a.ptr()}); }
inline Value tanh(const Value& a) { return Value(Op::tanh, std::tanh(a.value()), {a.ptr()}); }
inline Value relu(const Value& a) { return Value(Op::relu, a.value() > 0 ? a.value() : 0.0, {a.ptr()}); }
inline Value sum(const std::vector<Value>& xs) {
  double s = 0;
  std::vector<std::shared_ptr<Node>> inputs;
  for (const Value& x : xs) {
    s += x.value();
    inputs.push_back(x.ptr());
  }
  return Value(Op::sum, s, inputs);
}
inline Value mean(const std::vector<Value>& xs) {
  double s = 0;
  std::vector<std::shared_ptr<Node>> inputs;
  for (const Value& x : xs) {
    s += x.value();
    inputs.push_back(x.ptr());
  }
  return Value(Op::mean, s / static_cast<double>(xs.size()), inputs);
}

inline Value operator+(const Value& a, const Value& b) { return add(a, b); }
inline Value operator-(const Value& a, const Value& b) { return sub(a, b); }
inline Value operator*(const Value& a, const Value& b) { return mul(a, b); }
inline Value operator/(const Value& a, const Value& b) { return div(a, b); }

// ---------------------------------------------------------------- the student's file (engine.cpp)

// Given g = dL/d(node), returns dL/d(input) for each of node.inputs, in order (node.inputs.size() values;
// none for a leaf). Reads node.value, node.exponent and the inputs' values; changes nothing.
std::vector<double> input_gradients(const Node& node, double g);

// dL/d(leaf) += for every leaf that root depends on, with L = root (dL/d(root) = 1). Each node that is
// not a leaf runs once (through run_node_backward, below), after every node that uses it has run.
void backward(const Value& root);

// One node's step of the walk, for backward() to call: counts the run, then returns input_gradients.
inline std::vector<double> run_node_backward(Node& node, double g) {
  ++node.runs;
  return input_gradients(node, g);
}

}  // namespace engine
}  // namespace minidl
