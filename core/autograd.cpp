#include "core/autograd.h"

#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "ops/ops.h"

namespace minidl {

namespace {
thread_local bool grad_enabled = true;

// A node whose backward is a lambda; its captures are the saved tensors.
struct FunctionNode final : Node {
  BackwardFn fn;
  InputGradients apply(const Tensor& g) override {
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
  InputGradients apply(const Tensor& g) override {
    Tensor t(leaf);
    Tensor old = t.grad();
    t.set_grad(old.defined() ? add(old, g) : g.contiguous().detach());
    return {};
  }
};
// [/doc:accumulate_grad]

// Gradient-ready hooks, by leaf. The weak pointer guards against a hook outliving its tensor and a new
// tensor reusing the address.
struct HookEntry {
  uint64_t id;
  std::weak_ptr<TensorImpl> leaf;
  GradReadyHook fn;
};
std::mutex hooks_mutex;
std::unordered_map<TensorImpl*, std::vector<HookEntry>> hooks_by_leaf;
uint64_t next_hook_id = 1;

bool any_hooks() {
  std::lock_guard<std::mutex> lock(hooks_mutex);
  return !hooks_by_leaf.empty();
}

bool has_hooks(TensorImpl* leaf) {
  std::lock_guard<std::mutex> lock(hooks_mutex);
  auto it = hooks_by_leaf.find(leaf);
  if (it == hooks_by_leaf.end()) return false;
  for (const HookEntry& h : it->second)
    if (h.leaf.lock().get() == leaf) return true;
  return false;
}

// The live hooks of `leaf`, copied so they run without the lock (a hook may add or remove hooks).
std::vector<GradReadyHook> hooks_of(TensorImpl* leaf) {
  std::lock_guard<std::mutex> lock(hooks_mutex);
  std::vector<GradReadyHook> out;
  auto it = hooks_by_leaf.find(leaf);
  if (it == hooks_by_leaf.end()) return out;
  for (const HookEntry& h : it->second)
    if (h.leaf.lock().get() == leaf) out.push_back(h.fn);
  return out;
}

void remove_hook(uint64_t id) {
  std::lock_guard<std::mutex> lock(hooks_mutex);
  for (auto it = hooks_by_leaf.begin(); it != hooks_by_leaf.end(); ++it) {
    auto& list = it->second;
    for (auto h = list.begin(); h != list.end(); ++h)
      if (h->id == id) {
        list.erase(h);
        if (list.empty()) hooks_by_leaf.erase(it);
        return;
      }
  }
}

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

  // Gradient-ready hooks: a leaf used k times in the graph has k AccumulateGrad nodes (edge_to makes one
  // per use); its .grad is final when the walk has passed all k. Count them, for hooked leaves only.
  std::unordered_map<TensorImpl*, int> accumulations_left;
  std::unordered_set<TensorImpl*> accumulated;  // hooked leaves that received a gradient in this pass
  if (any_hooks())
    for (Node* node : order)
      if (auto* acc = dynamic_cast<AccumulateGrad*>(node))
        if (has_hooks(acc->leaf.get())) ++accumulations_left[acc->leaf.get()];
  // Called for every AccumulateGrad the walk passes, whether a gradient reached it or not.
  auto passed_accumulation = [&](Node* node, bool received) {
    if (accumulations_left.empty()) return;
    auto* acc = dynamic_cast<AccumulateGrad*>(node);
    if (!acc) return;
    auto left = accumulations_left.find(acc->leaf.get());
    if (left == accumulations_left.end()) return;
    if (received) accumulated.insert(acc->leaf.get());
    if (--left->second > 0 || !accumulated.count(acc->leaf.get())) return;
    const Tensor leaf(acc->leaf);
    for (const GradReadyHook& hook : hooks_of(acc->leaf.get())) hook(leaf);
  };

  // [doc:backward_walk] quoted by docs/course/02-autograd.md
  std::unordered_map<Node*, Tensor> pending{{start.get(), seed}};
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    auto found = pending.find(node);
    if (found == pending.end()) {  // no gradient flowed here
      passed_accumulation(node, false);
      continue;
    }
    Tensor g = found->second;
    pending.erase(found);
    InputGradients input_grads = node->apply(g);
    node->release();
    passed_accumulation(node, true);
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

GradReadyHookHandle add_grad_ready_hook(const Tensor& leaf, GradReadyHook hook) {
  MINIDL_CHECK(leaf.defined() && leaf.is_leaf() && leaf.requires_grad(),
               "add_grad_ready_hook: the tensor must be a leaf that requires grad (a parameter)");
  MINIDL_CHECK(hook != nullptr, "add_grad_ready_hook: empty hook");
  std::lock_guard<std::mutex> lock(hooks_mutex);
  const uint64_t id = next_hook_id++;
  hooks_by_leaf[leaf.impl()].push_back(HookEntry{id, leaf.impl_ptr(), std::move(hook)});
  return GradReadyHookHandle(id);
}

GradReadyHookHandle::~GradReadyHookHandle() {
  if (id_) remove_hook(id_);
}

GradReadyHookHandle& GradReadyHookHandle::operator=(GradReadyHookHandle&& other) noexcept {
  if (this != &other) {
    if (id_) remove_hook(id_);
    id_ = other.id_;
    other.id_ = 0;
  }
  return *this;
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
