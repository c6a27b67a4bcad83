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
//                    [a = a.detach(), b = b.detach()](const Tensor& g) { return InputGradients{mul(g, b), mul(g, a)}; });
// The lambda's captures are the "saved tensors"; they are released when backward has used the node.
// Save inputs/outputs *detached*: a node that held its own output's history would keep itself alive.
//
// Gradient-ready hooks (add_grad_ready_hook, below) let code outside the engine act on a parameter's
// gradient as soon as backward has finished it, while backward goes on with earlier layers.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace minidl {

// The gradients of a node's inputs, one per input in order (undefined where an input needs none).
using InputGradients = std::vector<Tensor>;
using BackwardFn = std::function<InputGradients(const Tensor& grad_output)>;

struct Node {
  virtual ~Node() = default;
  std::string name;                         // "MulBackward", for errors and graph dumps
  std::vector<std::shared_ptr<Node>> next;  // one per input; null where the input needs no gradient
  std::vector<Shape> input_shapes;          // each returned gradient must have this shape

  // Gradients for each input given the gradient of the output (undefined where not needed).
  virtual InputGradients apply(const Tensor& grad_output) = 0;
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

// ---- gradient-ready hooks
// A hook on a leaf (a parameter) runs inside backward(), right after the leaf's .grad has received the
// last contribution of this backward pass: nothing later in the pass changes that .grad again. A leaf
// used several times in the graph (a recurrent weight, once per time step) is accumulated several times;
// its hook runs once, after the last. Hooks run on the thread that called backward(), with gradient
// recording off, in the order the leaves complete (roughly the reverse of the forward order); a leaf that
// gets no gradient in a pass gets no call. Data-parallel training uses this to start averaging a group
// of gradients across processes while backward still computes the rest (dist/data_parallel.h).
using GradReadyHook = std::function<void(const Tensor& leaf)>;

// Owns one registered hook and removes it when destroyed: keep the handle as long as the hook (and
// whatever it captures) should live. Move-only.
class GradReadyHookHandle {
 public:
  GradReadyHookHandle() = default;
  explicit GradReadyHookHandle(uint64_t id) : id_(id) {}
  ~GradReadyHookHandle();
  GradReadyHookHandle(GradReadyHookHandle&& other) noexcept : id_(other.id_) { other.id_ = 0; }
  GradReadyHookHandle& operator=(GradReadyHookHandle&& other) noexcept;
  GradReadyHookHandle(const GradReadyHookHandle&) = delete;
  GradReadyHookHandle& operator=(const GradReadyHookHandle&) = delete;

 private:
  uint64_t id_ = 0;  // 0: no hook
};

// Registers `hook` for the leaf tensor `leaf` (which must require grad). Several hooks on one leaf run in
// the order they were added.
[[nodiscard]] GradReadyHookHandle add_grad_ready_hook(const Tensor& leaf, GradReadyHook hook);

}  // namespace minidl
