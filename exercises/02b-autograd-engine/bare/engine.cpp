// exercises/02b-autograd-engine/engine.cpp — EXERCISE 2b, no scaffolding: a scalar autograd engine's local
// gradients and backward walk. Read first: docs/course/02-autograd.md and engine.h. Check: `make exercise N=2b`.
//
// Contract (engine.h):
//   input_gradients(node, g): given g = dL/d(node), returns dL/d(input i) for each of node.inputs, in
//     order, for every Op (leaf: none). Changes nothing.
//   backward(root): with L = root, adds dL/d(leaf) to leaf.grad (+=) for every leaf root depends on; nodes
//     that are not leaves keep grad = 0. Each node that is not a leaf gets its inputs' gradients through
//     run_node_backward(node, g) exactly once, with g its complete dL/d(node). A graph may share nodes
//     (a value used twice, diamonds) and be thousands of nodes deep.
#include "exercises/02b-autograd-engine/engine.h"

namespace minidl {
namespace engine {

std::vector<double> input_gradients(const Node& node, double g) {
  (void)node;
  (void)g;
  return {};
}

void backward(const Value& root) {
  (void)root;
}

}  // namespace engine
}  // namespace minidl
