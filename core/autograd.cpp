#include "core/autograd.h"

#include <unordered_map>
#include <unordered_set>

#include "ops/ops.h"

namespace minidl {

namespace {
thread_local bool grad_enabled = true;

// A node whose backward is a lambda; its captures are the saved tensors.
struct FunctionNode final : Node {
  BackwardFn fn;
  grads apply(const Tensor& g) override {
    MINIDL_CHECK(fn != nullptr, name, ": backward through a graph that was already freed; "
                 "run the forward pass again before calling backward a second time");
    return fn(g);
  }
  void release() override { fn = nullptr; }
};

// The node that ends every path at a leaf: adds the incoming gradient into leaf.grad.
// [doc:accumulate_grad] quoted by docs/course/02-autograd.md
struct AccumulateGrad final : Node {
  std::shared_ptr<TensorImpl> leaf;
  grads apply(const Tensor& g) override {
    Tensor t(leaf);
    Tensor old = t.grad();
    t.set_grad(old.defined() ? add(old, g) : g.contiguous().detach());
    return {};
  }
};
// [/doc:accumulate_grad]

std::shared_ptr<Node> edge_to(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return nullptr;
  if (t.impl()->grad_fn) return t.impl()->grad_fn;
  auto acc = std::make_shared<AccumulateGrad>();
  acc->name = "AccumulateGrad";
  acc->leaf = t.impl_ptr();
  acc->input_shapes = {t.shape()};
  return acc;
}
}  // namespace

bool grad_mode_enabled() { return grad_enabled; }

NoGradGuard::NoGradGuard() : previous_(grad_enabled) { grad_enabled = false; }
NoGradGuard::~NoGradGuard() { grad_enabled = previous_; }

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}
bool needs_grad(std::initializer_list<Tensor> inputs) { return needs_grad(std::vector<Tensor>(inputs)); }

void attach_grad_fn(Tensor& out, const std::string& name, const std::vector<Tensor>& inputs, BackwardFn fn) {
  auto node = std::make_shared<FunctionNode>();
  node->name = name;
  node->fn = std::move(fn);
  for (const Tensor& t : inputs) {
    node->next.push_back(edge_to(t));
    node->input_shapes.push_back(t.defined() ? t.shape() : Shape{});
  }
  out.impl()->grad_fn = std::move(node);
  out.impl()->requires_grad = true;
}

void run_backward(const Tensor& root, const Tensor& grad_root) {
  MINIDL_CHECK(root.requires_grad(), "backward: the tensor does not require grad (no parameter or input "
               "with requires_grad=true contributed to it, or it was computed under NoGradGuard)");
  Tensor seed = grad_root;
  if (!seed.defined()) {
    MINIDL_CHECK(root.numel() == 1, "backward: a tensor of shape ", shape_str(root.shape()),
                 " needs an explicit output gradient; only scalars get an implicit 1");
    seed = ones(root.shape(), root.options());
  }
  MINIDL_CHECK(seed.shape() == root.shape(), "backward: gradient of shape ", shape_str(seed.shape()),
               " for a tensor of shape ", shape_str(root.shape()));
  NoGradGuard no_grad;  // gradients are computed without building a graph of their own

  std::shared_ptr<Node> start = edge_to(root);

  // Topological order by iterative depth-first search (post-order), so deep graphs (long RNN unrolls)
  // cannot overflow the stack.
  std::vector<Node*> order;
  std::unordered_set<Node*> visited;
  std::vector<std::pair<Node*, size_t>> stack{{start.get(), 0}};
  visited.insert(start.get());
  while (!stack.empty()) {
    auto& [node, child] = stack.back();
    if (child < node->next.size()) {
      Node* n = node->next[child++].get();
      if (n && visited.insert(n).second) stack.push_back({n, 0});
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }

  // [doc:backward_walk] quoted by docs/course/02-autograd.md
  std::unordered_map<Node*, Tensor> pending{{start.get(), seed}};
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    auto found = pending.find(node);
    if (found == pending.end()) continue;  // no gradient flowed here
    Tensor g = found->second;
    pending.erase(found);
    grads input_grads = node->apply(g);
    node->release();
    for (size_t i = 0; i < node->next.size() && i < input_grads.size(); ++i) {
      Node* target = node->next[i].get();
      const Tensor& gi = input_grads[i];
      if (!target || !gi.defined()) continue;
      MINIDL_CHECK(gi.shape() == node->input_shapes[i], node->name, ": gradient for input ", i, " has shape ",
                   shape_str(gi.shape()), " but the input has shape ", shape_str(node->input_shapes[i]));
      auto slot = pending.find(target);
      if (slot == pending.end())
        pending.emplace(target, gi);
      else
        slot->second = add(slot->second, gi);
    }
  }
  // [/doc:backward_walk]
}

Tensor& Tensor::requires_grad_(bool value) {
  MINIDL_CHECK(!value || is_floating(dtype()), "requires_grad: only floating tensors can require gradients, not ",
               dtype_name(dtype()));
  MINIDL_CHECK(is_leaf(), "requires_grad_: only leaf tensors can change requires_grad; use detach() first");
  impl_->requires_grad = value;
  return *this;
}

Tensor Tensor::detach() const {
  auto impl = std::make_shared<TensorImpl>(*impl_);
  impl->requires_grad = false;
  impl->grad.reset();
  impl->grad_fn.reset();
  return Tensor(impl);
}

void Tensor::backward(const Tensor& grad_output) const { run_backward(*this, grad_output); }

}  // namespace minidl
