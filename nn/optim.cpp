#include "nn/optim.h"

#include <map>
#include <set>
#include <tuple>

#include "core/autograd.h"
#include "ops/optim_ops.h"

namespace minidl {

namespace {

Tensor scalar_tensor(double v, DType dtype) { return from_vector({v}, {1}, TensorOptions(dtype, Device::cpu())); }

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params, double lr, std::vector<std::string> buffer_names)
    : params_(std::move(params)), lr_(lr), buffer_names_(std::move(buffer_names)) {
  MINIDL_CHECK(!params_.empty(), "optimizer: no parameters to optimize");
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    MINIDL_CHECK(p.defined() && p.requires_grad() && p.is_leaf(), "optimizer: parameter ", i,
                 " is not a leaf tensor that requires grad");
    MINIDL_CHECK(p.dtype() == DType::float32 && p.is_contiguous(), "optimizer: parameter ", i,
                 " must be contiguous float32, got ", dtype_name(p.dtype()), " ", shape_str(p.shape()),
                 p.is_contiguous() ? "" : " (non-contiguous)");
    for (size_t j = 0; j < i; ++j)
      MINIDL_CHECK(params_[j].impl() != p.impl(), "optimizer: parameter ", i, " is the same tensor as parameter ", j);
  }
  set_lr(lr);  // checks it
  buffers_.assign(buffer_names_.size(), std::vector<Tensor>(params_.size()));
  param_steps_.assign(params_.size(), 0);
}

void Optimizer::set_lr(double lr) {
  MINIDL_CHECK(lr >= 0, "optimizer: learning rate must be >= 0, got ", lr);
  lr_ = lr;
}

void Optimizer::zero_grad() {
  for (const Tensor& p : params_) p.zero_grad();
}

void Optimizer::step() {
  begin_step(false);
  finish_step();
}

void Optimizer::begin_step(bool every_parameter) {
  MINIDL_CHECK(pending_.empty(), type_name(), ": begin_step() twice without finish_step()");
  // Checks first, so that a bad gradient changes nothing.
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    MINIDL_CHECK(g.device() == p.device() && g.dtype() == p.dtype() && g.shape() == p.shape(), type_name(),
                 ": parameter ", i, " ", shape_str(p.shape()), " on ", p.device().str(), " has a gradient ",
                 shape_str(g.shape()), " ", dtype_name(g.dtype()), " on ", g.device().str());
  }
  ++step_count_;
  // Group by (device, the step number this update will be for that parameter).
  std::map<std::tuple<int, int, int64_t>, Group> groups;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    if (!every_parameter && !p.grad().defined()) continue;
    // State buffers here, not in finish_step(): a graph captures finish_step(), and zeros made there
    // would be made again by every replay.
    for (auto& slot : buffers_)
      if (!slot[i].defined()) slot[i] = zeros_like(p);
    const int64_t t = ++param_steps_[i];
    Group& group = groups[{static_cast<int>(p.device().type), p.device().index, t}];
    group.t = t;
    group.index.push_back(i);
  }
  std::map<std::pair<int, int>, size_t> groups_on_device;
  for (auto& [key, group] : groups) {
    const Device device = params_[group.index.front()].device();
    const int type = static_cast<int>(device.type);
    Tensor& scalars = scalars_[{type, device.index, groups_on_device[{type, device.index}]++}];
    const std::vector<double> values = scalar_values(group);
    const int64_t count = static_cast<int64_t>(values.size());
    if (!scalars.defined() || scalars.numel() != count)
      scalars = empty({count}, TensorOptions(DType::float64, device));
    // Ordered after the updates already queued on the device (they read the previous values).
    copy_(scalars, from_vector(values, {count}, TensorOptions(DType::float64, Device::cpu())));
    group.scalars = scalars;
    pending_.push_back(std::move(group));
  }
}

void Optimizer::finish_step() {
  std::vector<Group> groups = std::move(pending_);
  pending_.clear();
  for (Group& group : groups) {
    for (size_t i : group.index) {
      const Tensor g = params_[i].grad();
      MINIDL_CHECK(g.defined(), type_name(), ": parameter ", i, " has no gradient, but begin_step() counted it");
      group.params.push_back(params_[i]);
      group.grads.push_back(g.contiguous());
    }
    group.buffers.resize(buffers_.size());
    for (size_t s = 0; s < buffers_.size(); ++s)
      for (size_t i : group.index) group.buffers[s].push_back(buffers_[s][i]);
    update(group);
  }
}

void Optimizer::finish_step_replayed() {
  MINIDL_CHECK(!pending_.empty(), type_name(), ": finish_step_replayed() without begin_step()");
  pending_.clear();
}

NamedTensors Optimizer::state_dict() const {
  NamedTensors out;
  out.emplace_back("step", scalar_tensor(static_cast<double>(step_count_), DType::int64));
  out.emplace_back("lr", scalar_tensor(lr_, DType::float64));
  for (size_t i = 0; i < params_.size(); ++i) {
    if (param_steps_[i] == 0) continue;
    const std::string prefix = str_cat("param.", i, ".");
    out.emplace_back(prefix + "step", scalar_tensor(static_cast<double>(param_steps_[i]), DType::int64));
    for (size_t s = 0; s < buffers_.size(); ++s) out.emplace_back(prefix + buffer_names_[s], buffers_[s][i]);
  }
  return out;
}

void Optimizer::load_state_dict(const NamedTensors& state) {
  std::map<std::string, Tensor> given(state.begin(), state.end());
  std::vector<std::string> problems;
  std::set<std::string> used;
  auto take = [&](const std::string& name, const Shape& shape) -> Tensor {
    auto it = given.find(name);
    if (it == given.end() || !it->second.defined()) {
      problems.push_back("missing " + name);
      return Tensor();
    }
    used.insert(name);
    if (it->second.shape() != shape) {
      problems.push_back(str_cat(name, " has shape ", shape_str(it->second.shape()), ", expected ", shape_str(shape)));
      return Tensor();
    }
    return it->second;
  };

  const Tensor step = take("step", {1});
  const Tensor lr = take("lr", {1});
  std::vector<int64_t> steps(params_.size(), 0);
  std::vector<std::vector<Tensor>> buffers(buffers_.size(), std::vector<Tensor>(params_.size()));
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string prefix = str_cat("param.", i, ".");
    if (!given.count(prefix + "step")) continue;  // never updated
    const Tensor t = take(prefix + "step", {1});
    if (t.defined()) steps[i] = t.item<int64_t>();
    for (size_t s = 0; s < buffers_.size(); ++s) buffers[s][i] = take(prefix + buffer_names_[s], params_[i].shape());
  }
  for (const auto& [name, t] : given)
    if (!used.count(name)) problems.push_back("unexpected " + name);
  if (!problems.empty())
    throw Error(str_cat(type_name(), ".load_state_dict: the state does not match this optimizer (",
                        params_.size(), " parameters): ", join_names(problems)));

  step_count_ = step.item<int64_t>();
  lr_ = lr.item<double>();
  param_steps_ = steps;
  for (size_t s = 0; s < buffers_.size(); ++s)
    for (size_t i = 0; i < params_.size(); ++i) {
      const Tensor& src = buffers[s][i];
      buffers_[s][i] = src.defined() ? src.to(DType::float32).to(params_[i].device()).contiguous().clone() : Tensor();
    }
}

// ------------------------------------------------------------------ SGD

SGD::SGD(std::vector<Tensor> params, const SgdOptions& o)
    : Optimizer(std::move(params), o.lr,
                o.momentum != 0 ? std::vector<std::string>{"momentum_buffer"} : std::vector<std::string>{}),
      options(o) {
  MINIDL_CHECK(o.momentum >= 0 && o.weight_decay >= 0, "SGD: momentum and weight_decay must be >= 0, got ",
               o.momentum, " and ", o.weight_decay);
  MINIDL_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0),
               "SGD: Nesterov momentum needs momentum > 0 and dampening 0");
}

void SGD::update(Group& group) {
  SgdParams h;
  h.lr = lr_;
  h.momentum = options.momentum;
  h.dampening = options.dampening;
  h.weight_decay = options.weight_decay;
  h.nesterov = options.nesterov;
  h.first_step = group.t == 1;
  h.scalars = group.scalars;
  std::vector<Tensor> no_buffers;
  sgd_step(group.params, group.grads, group.buffers.empty() ? no_buffers : group.buffers[0], h);
}

std::vector<double> SGD::scalar_values(const Group& group) const { return {lr_, group.t == 1 ? 1.0 : 0.0}; }

// ------------------------------------------------------------------ Adam, AdamW

Adam::Adam(std::vector<Tensor> params, const AdamOptions& o)
    : Optimizer(std::move(params), o.lr, {"exp_avg", "exp_avg_sq"}), options(o) {
  MINIDL_CHECK(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1 && o.eps >= 0 && o.weight_decay >= 0,
               "Adam: bad hyper-parameters: beta1 ", o.beta1, ", beta2 ", o.beta2, ", eps ", o.eps,
               ", weight_decay ", o.weight_decay);
}

void Adam::update(Group& group) {
  AdamParams h;
  h.lr = lr_;
  h.beta1 = options.beta1;
  h.beta2 = options.beta2;
  h.eps = options.eps;
  h.weight_decay = options.weight_decay;
  h.decoupled_weight_decay = decoupled();
  h.step = group.t;
  h.scalars = group.scalars;
  adam_step(group.params, group.grads, group.buffers[0], group.buffers[1], h);
}

std::vector<double> Adam::scalar_values(const Group& group) const { return {lr_, static_cast<double>(group.t)}; }

AdamW::AdamW(std::vector<Tensor> params, const AdamOptions& o) : Adam(std::move(params), o) {}

AdamOptions AdamW::default_options() {
  AdamOptions o;
  o.weight_decay = 0.01;
  return o;
}

}  // namespace minidl
