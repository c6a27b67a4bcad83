#include "nn/module.h"

#include <map>
#include <set>

#include "core/autograd.h"
#include "core/error.h"

namespace minidl {

namespace {

// Rebinds t's storage to a copy on `device`. The TensorImpl stays the same object, so every handle to
// it (the layer's member, the module's registry, a user's copy) now refers to the moved data.
void move_in_place(const Tensor& t, Device device) {
  if (t.device() == device) return;
  Tensor moved = t.detach().contiguous().to(device);
  TensorImpl* impl = t.impl();
  impl->storage = moved.impl()->storage;
  impl->strides = moved.strides();
  impl->offset = moved.offset();
  if (impl->grad) impl->grad = Tensor(impl->grad).to(device).impl_ptr();
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

Tensor Module::forward(const Tensor&) {
  throw Error(str_cat(type_name(), ": forward(const Tensor&) is not defined for this module"));
}

void Module::check_new_name(const std::string& name) const {
  MINIDL_CHECK(!name.empty() && name.find('.') == std::string::npos, type_name(), ": invalid name '", name,
               "' (names must be non-empty and contain no '.')");
  for (const auto& [n, t] : parameters_)
    MINIDL_CHECK(n != name, type_name(), ": the name '", name, "' is already a parameter");
  for (const auto& [n, t] : buffers_)
    MINIDL_CHECK(n != name, type_name(), ": the name '", name, "' is already a buffer");
  for (const auto& [n, m] : children_)
    MINIDL_CHECK(n != name, type_name(), ": the name '", name, "' is already a child module");
}

Tensor Module::register_parameter(const std::string& name, Tensor t) {
  check_new_name(name);
  MINIDL_CHECK(t.defined(), type_name(), ": parameter '", name, "' is undefined");
  if (!t.requires_grad()) t.requires_grad_(true);
  parameters_.emplace_back(name, t);
  return t;
}

Tensor Module::register_buffer(const std::string& name, Tensor t) {
  check_new_name(name);
  MINIDL_CHECK(t.defined(), type_name(), ": buffer '", name, "' is undefined");
  buffers_.emplace_back(name, t);
  return t;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name);
  MINIDL_CHECK(module != nullptr, type_name(), ": child module '", name, "' is null");
  children_.emplace_back(name, std::move(module));
}

void Module::collect(const std::string& prefix, bool want_parameters, NamedTensors& out) const {
  for (const auto& [name, t] : want_parameters ? parameters_ : buffers_) out.emplace_back(prefix + name, t);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", want_parameters, out);
}

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  collect("", true, out);
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  collect("", false, out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters()) out.push_back(t);
  return out;
}

int64_t Module::parameter_count() const {
  int64_t n = 0;
  for (const Tensor& t : parameters()) n += t.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::to(Device device) {
  for (auto& [name, t] : named_parameters()) move_in_place(t, device);
  for (auto& [name, t] : named_buffers()) move_in_place(t, device);
}

void Module::zero_grad() {
  for (const Tensor& t : parameters()) t.zero_grad();
}

NamedTensors Module::state_dict() const {
  NamedTensors out;
  for (auto& [name, t] : named_parameters()) out.emplace_back(name, t.detach());
  for (auto& [name, t] : named_buffers()) out.emplace_back(name, t.detach());
  return out;
}

void Module::load_state_dict(const NamedTensors& state) {
  std::map<std::string, Tensor> given;
  for (const auto& [name, t] : state) {
    MINIDL_CHECK(!given.count(name), "load_state_dict: the name '", name, "' appears twice in the given state");
    given[name] = t;
  }
  const NamedTensors mine = state_dict();
  std::vector<std::string> missing, mismatched, unexpected;
  std::set<std::string> known;
  for (const auto& [name, dst] : mine) {
    known.insert(name);
    auto it = given.find(name);
    if (it == given.end() || !it->second.defined()) {
      missing.push_back(name);
    } else if (it->second.shape() != dst.shape()) {
      mismatched.push_back(str_cat(name, " (expected ", shape_str(dst.shape()), ", got ",
                                   shape_str(it->second.shape()), ")"));
    }
  }
  for (const auto& [name, t] : state)
    if (!known.count(name)) unexpected.push_back(name);
  if (!missing.empty() || !mismatched.empty() || !unexpected.empty()) {
    std::string msg = str_cat("load_state_dict: the state does not match this ", type_name());
    if (!missing.empty()) msg += str_cat("; missing: ", join_names(missing));
    if (!unexpected.empty()) msg += str_cat("; unexpected: ", join_names(unexpected));
    if (!mismatched.empty()) msg += str_cat("; shape mismatch: ", join_names(mismatched));
    throw Error(msg);
  }
  NoGradGuard no_grad;
  for (const auto& [name, dst] : mine) {
    const Tensor& src = given.at(name);
    copy_(dst, src.dtype() == dst.dtype() ? src : src.to(dst.dtype()));
  }
}

void Module::summary_lines(const std::string& name, int depth, std::string& out) const {
  out += std::string(2 * depth, ' ') + (name.empty() ? "" : name + ": ") + describe();
  const int64_t n = parameter_count();
  if (n > 0) out += str_cat("  [", n, " parameters]");
  out += "\n";
  for (const auto& [child_name, child] : children_) child->summary_lines(child_name, depth + 1, out);
}

std::string Module::summary() const {
  std::string out;
  summary_lines("", 0, out);
  return out;
}

}  // namespace minidl
