// exercises/02b-autograd-engine/engine.cpp — EXERCISE 2b: build the autograd engine. Write the local gradient
// of each op (2b.1) and the backward walk (2b.2) of a scalar engine, as micrograd's engine.py does.
// Read first: docs/course/02-autograd.md. Check your work: `make exercise N=2b`.
//
// engine.h gives the graph: a Value is a handle on a Node, which holds its value, the op that made it and
// its inputs; the forward ops (add, mul, exp, ...) build the graph and compute values only.
#include "exercises/02b-autograd-engine/engine.h"

#include <unordered_map>
#include <unordered_set>

namespace minidl {
namespace engine {

// EXERCISE 2b.1: given g = dL/d(node), return dL/d(input i) for each input, in order: by the chain rule,
// g times d(node)/d(input i). Inputs' values: node.inputs[i]->value; the node's own value: node.value.
std::vector<double> input_gradients(const Node& node, double g) {
  const size_t n = node.inputs.size();
  switch (node.op) {
    case Op::leaf:  // no inputs
      return {};
    case Op::add:  // a + b:      d/da = 1,                d/db = 1
    case Op::sub:  // a - b:      d/da = 1,                d/db = -1
    case Op::mul:  // a * b:      d/da = b,                d/db = a
    case Op::div:  // a / b:      d/da = 1 / b,            d/db = -a / b^2
    case Op::pow:  // a^p:        d/da = p * a^(p - 1)     (p is node.exponent, a constant)
    case Op::exp:  // exp(a):     d/da = exp(a)            (node.value)
    case Op::log:  // log(a):     d/da = 1 / a
    case Op::tanh:  // tanh(a):   d/da = 1 - tanh(a)^2
    case Op::relu:  // max(a, 0): d/da = 1 where a > 0, else 0
    case Op::sum:   // x_1 + ... + x_n:        d/dx_i = 1
    case Op::mean:  // (x_1 + ... + x_n) / n:  d/dx_i = 1 / n
      (void)g;
      return std::vector<double>(n, 0.0);
  }
  return {};
}

// EXERCISE 2b.2: the backward walk. L = root, so dL/d(root) = 1.
//   1. Order the graph: every node after all the nodes that use it (reverse post-order of a depth-first
//      search from root; visit each node once, even one reached by several paths).
//   2. Walk that order with a table of pending gradients (node -> the sum of what its users sent so far):
//      a node's pending sum is complete when its turn comes. For a node that is not a leaf, get the
//      gradients of its inputs with run_node_backward(node, its pending sum) (engine.h: it calls your
//      input_gradients and counts the run) and add each to that input's pending sum.
//   3. A leaf adds its pending sum to node.grad (+=, so that two backward calls accumulate, as in minidl
//      and PyTorch). Nodes that are not leaves keep grad = 0.
void backward(const Value& root) {
  (void)root;
}

}  // namespace engine
}  // namespace minidl
