// core/autograd.h — the define-by-run backward graph.
//
// Each op that produces a tensor from inputs needing gradients attaches a Node to its output:
//   out.grad_fn = node,  node->next[i] = the node that produced input i (or an AccumulateGrad for a leaf)
// backward() walks the nodes reachable from the loss in reverse topological order; each node maps the
// gradient of its output to gradients of its inputs, which are summed (`+=`) where a tensor feeds
// several consumers. Leaves accumulate into .grad across backward calls until zero_grad().
//
// Writing a gradient (ops/*.cpp):
//   if (needs_grad({a, b}))
//     attach_grad_fn(out, "MulBackward", {a, b},
//                    [a = a.detach(), b = b.detach()](const Tensor& g) { return grads{mul(g, b), mul(g, a)}; });
// The lambda's captures are the "saved tensors"; they are released when backward has used the node.
// Save inputs/outputs *detached*: a node that held its own output's history would keep itself alive.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace minidl {

using grads = std::vector<Tensor>;
using BackwardFn = std::function<grads(const Tensor& grad_output)>;

struct Node {
  virtual ~Node() = default;
  std::string name;                         // "MulBackward", for errors and graph dumps
  std::vector<std::shared_ptr<Node>> next;  // one per input; null where the input needs no gradient
  std::vector<Shape> input_shapes;          // each returned gradient must have this shape

  // Gradients for each input given the gradient of the output (undefined where not needed).
  virtual grads apply(const Tensor& grad_output) = 0;
  // Frees saved tensors once backward has used this node.
  virtual void release() {}
};

// Whether gradients are being recorded on this thread (false inside a NoGradGuard).
bool grad_mode_enabled();

class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// True when grad mode is on and any of the tensors requires grad.
bool needs_grad(std::initializer_list<Tensor> inputs);
bool needs_grad(const std::vector<Tensor>& inputs);

// Makes `out` a non-leaf produced by `fn` from `inputs` (see the header comment).
void attach_grad_fn(Tensor& out, const std::string& name, const std::vector<Tensor>& inputs, BackwardFn fn);

// Runs backward from `root` with d(loss)/d(root) = grad_root (ones for a scalar root when undefined).
void run_backward(const Tensor& root, const Tensor& grad_root);

}  // namespace minidl
