// nn/module.h — Module: the base class of layers and models.
//
// A module owns named parameters (trainable tensors), named buffers (state that is saved but not trained,
// e.g. BatchNorm's running statistics) and named child modules. Names compose with dots, so a
// Sequential `features` holding a Conv2d at position 0 has the parameter "features.0.weight":
//
//   class Net : public Module {
//    public:
//     Net() {
//       fc1 = register_module("fc1", std::make_shared<Linear>(784, 128));
//       fc2 = register_module("fc2", std::make_shared<Linear>(128, 10));
//     }
//     Tensor forward(const Tensor& x) override { return fc2->forward(relu(fc1->forward(x))); }
//     std::shared_ptr<Linear> fc1, fc2;
//   };
//
// Tensors are handles (core/tensor.h): a layer keeps its parameters in ordinary `Tensor` members and the
// module keeps the same handles under their names. to(Device) and load_state_dict() change the tensors
// *in place* (same TensorImpl, new storage or new values), so every handle, the layer's and the
// module's, sees the change.
//
// Order of setup: build the model, move it with to(device), then build the optimizer. An optimizer keeps
// per-parameter buffers (momentum, Adam moments) on the device the parameters were on when it first
// stepped; moving the model afterwards would leave them behind.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace minidl {

// Named tensors in a stable order: a module's state_dict, an optimizer's state, a checkpoint's contents.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  // Copying would silently share parameters between two modules; moving is fine (the handles move).
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Module(Module&&) = default;
  Module& operator=(Module&&) = default;

  // The computation. The default throws: containers without a single-input forward need not define it.
  virtual Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x) { return forward(x); }

  // A short type name ("Linear") and a one-line description of the configuration ("Linear(784 -> 128)").
  virtual std::string type_name() const { return "Module"; }
  virtual std::string describe() const { return type_name(); }
  // A tree of the module and its children with parameter counts, for printing a model summary.
  std::string summary() const;

  // ---- parameters, buffers and children, recursively, in registration order
  std::vector<Tensor> parameters() const;
  NamedTensors named_parameters() const;
  NamedTensors named_buffers() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const { return children_; }
  int64_t parameter_count() const;

  // ---- modes: training (Dropout drops, BatchNorm uses batch statistics) and evaluation
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Moves every parameter and buffer to `device` in place (requires_grad is kept; a gradient, if any,
  // moves too). Build optimizers after this call (see the header comment).
  void to(Device device);

  // Drops the accumulated gradient of every parameter.
  void zero_grad();

  // Parameters then buffers, by full name, as detached handles sharing this module's memory.
  NamedTensors state_dict() const;
  // Copies each tensor of `state` into the tensor of the same name (converting dtype and device as
  // needed). Throws an Error listing every missing name, every unexpected name and every shape mismatch;
  // nothing is copied unless the whole state matches.
  void load_state_dict(const NamedTensors& state);

 protected:
  // Registers `t` under `name` as a parameter (sets requires_grad) and returns the same handle.
  Tensor register_parameter(const std::string& name, Tensor t);
  Tensor register_buffer(const std::string& name, Tensor t);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name) const;
  void collect(const std::string& prefix, bool want_parameters, NamedTensors& out) const;
  void summary_lines(const std::string& name, int depth, std::string& out) const;

  bool training_ = true;
  NamedTensors parameters_;
  NamedTensors buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

}  // namespace minidl
