// exercises/02b-autograd-engine/engine.cpp — EXERCISE 2b (reference solution): the local gradient of each op
// and the backward walk of a scalar autograd engine. The graph and the forward ops are in engine.h.
#include "exercises/02b-autograd-engine/engine.h"

#include <unordered_map>
#include <unordered_set>

namespace minidl {
namespace engine {

std::vector<double> input_gradients(const Node& node, double g) {
  const auto in = [&](size_t i) { return node.inputs[i]->value; };
  switch (node.op) {
    case Op::leaf:
      return {};
    case Op::add:
      return {g, g};
    case Op::sub:
      return {g, -g};
    case Op::mul:
      return {g * in(1), g * in(0)};
    case Op::div:
      return {g / in(1), -g * in(0) / (in(1) * in(1))};
    case Op::pow:
      return {g * node.exponent * std::pow(in(0), node.exponent - 1)};
    case Op::exp:
      return {g * node.value};
    case Op::log:
      return {g / in(0)};
    case Op::tanh:
      return {g * (1 - node.value * node.value)};
    case Op::relu:
      return {in(0) > 0 ? g : 0.0};
    case Op::sum:
      return std::vector<double>(node.inputs.size(), g);
    case Op::mean:
      return std::vector<double>(node.inputs.size(), g / static_cast<double>(node.inputs.size()));
  }
  return {};
}

void backward(const Value& root) {
  // Topological order: depth-first, each node after all of its inputs (post-order). Reversed, every node
  // comes after all the nodes that use it.
  std::vector<Node*> order;
  std::unordered_set<Node*> visited;
  std::vector<std::pair<Node*, size_t>> stack{{&root.node(), 0}};
  visited.insert(&root.node());
  while (!stack.empty()) {
    auto& [node, next_input] = stack.back();
    if (next_input < node->inputs.size()) {
      Node* input = node->inputs[next_input++].get();
      if (visited.insert(input).second) stack.push_back({input, 0});
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }

  // The walk: each node's pending gradient is complete when its turn comes (all its users ran before it).
  std::unordered_map<Node*, double> pending{{&root.node(), 1.0}};
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    const double g = pending[node];
    if (node->op == Op::leaf) {
      node->grad += g;
      continue;
    }
    const std::vector<double> grads = run_node_backward(*node, g);
    for (size_t i = 0; i < node->inputs.size(); ++i) pending[node->inputs[i].get()] += grads[i];
  }
}

}  // namespace engine
}  // namespace minidl
