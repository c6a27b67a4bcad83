// nn/optim.h — optimizers: SGD (momentum, dampening, Nesterov, weight decay), Adam and AdamW.
//
// The update math is in ops/kernel_signatures.h (SgdStepKernel, AdamStepKernel); each step() is one
// fused sgd_step/adam_step call (ops/optim_ops.h) over every parameter that has a gradient, whose learning
// rate and step the kernels read from small device tensors (begin_step/finish_step below). Parameters
// whose gradient is undefined (unused this step) are skipped and keep their state unchanged.
//
// Per-parameter state (momentum buffer; Adam's moments m, v and the parameter's own step count t, for the
// bias correction) is created on a parameter's first update, on the parameter's device. So: build the
// optimizer after model.to(device). Parameters are updated in groups that share a step count and device
// (normally all of them, in one call); a parameter that first gets a gradient late starts at t = 1.
//
// state_dict() names (for checkpoints; tensors on the parameters' devices):
//   "step"                    int64 [1]    number of step() calls
//   "lr"                      float64 [1]  the current learning rate
//   "param.<i>.step"          int64 [1]    updates applied to parameter i (absent before its first one)
//   "param.<i>.<buffer>"      float32, parameter i's shape: "momentum_buffer" (SGD with momentum),
//                             "exp_avg" and "exp_avg_sq" (Adam, AdamW)
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "nn/module.h"
#include "ops/kernel_signatures.h"

namespace minidl {

class Optimizer {
 public:
  Optimizer(std::vector<Tensor> params, double lr, std::vector<std::string> buffer_names);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  virtual std::string type_name() const = 0;

  // Drops the gradient of every parameter.
  void zero_grad();
  // One update of every parameter that has a gradient: begin_step() then finish_step().
  void step();
  // step() in two halves, for CUDA graphs (nn/graphed_step.h). begin_step() is the host's part: it counts
  // the step, picks the parameters to update (those with a gradient, or all of them with
  // `every_parameter`: for a step whose gradients the graph is about to make), creates missing state
  // buffers, and writes each group's learning rate and step into the group's device scalars, tensors
  // kept from step to step. finish_step() queues the updates, which read the scalars when they run. A
  // graph captures finish_step() once; each replay after a begin_step() then updates with that step's
  // learning rate and bias correction.
  void begin_step(bool every_parameter = false);
  void finish_step();
  // In place of finish_step() when a graph's replay runs the update it captured: ends the step begun by
  // begin_step() without queueing anything.
  void finish_step_replayed();
  // Whether begin_step() has begun a step that is not finished.
  bool step_pending() const { return !pending_.empty(); }

  double lr() const { return lr_; }
  void set_lr(double lr);
  int64_t step_count() const { return step_count_; }
  const std::vector<Tensor>& params() const { return params_; }

  NamedTensors state_dict() const;
  // Restores a state_dict() of an optimizer of the same type over parameters of the same shapes.
  // Throws an Error naming every missing/unexpected entry and shape mismatch; nothing changes then.
  void load_state_dict(const NamedTensors& state);

 protected:
  // The parameters of one fused call: same device, same per-parameter step t (1-based, this update's).
  struct Group {
    int64_t t = 0;
    std::vector<size_t> index;  // into params_
    std::vector<Tensor> params, grads;
    std::vector<std::vector<Tensor>> buffers;  // [buffer slot][k]
    Tensor scalars;  // float64 on the group's device: scalar_values(), written by begin_step()
  };
  // Runs the fused update for one group (its kernels read group.scalars).
  virtual void update(Group& group) = 0;
  // The values a group's update reads from its device scalars: {lr, first step (SGD) or t (Adam)}.
  virtual std::vector<double> scalar_values(const Group& group) const = 0;

  std::vector<Tensor> params_;
  double lr_;

 private:
  std::vector<std::string> buffer_names_;
  std::vector<std::vector<Tensor>> buffers_;  // [slot][param], undefined before the first update
  std::vector<int64_t> param_steps_;          // updates applied to each parameter
  int64_t step_count_ = 0;
  std::vector<Group> pending_;                // begun, not finished
  // Device scalars per (device type, device index, group's place among that device's groups): the same
  // tensors every step, so a captured update reads this step's values from them.
  std::map<std::tuple<int, int, size_t>, Tensor> scalars_;
};

struct SgdOptions {
  double lr = 0.01, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SgdOptions& options);
  std::string type_name() const override { return "SGD"; }
  SgdOptions options;

 protected:
  void update(Group& group) override;
  std::vector<double> scalar_values(const Group& group) const override;
};

struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
};

// Adam: weight decay as an L2 term added to the gradient.
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& options);
  std::string type_name() const override { return "Adam"; }
  AdamOptions options;

 protected:
  void update(Group& group) override;
  std::vector<double> scalar_values(const Group& group) const override;
  virtual bool decoupled() const { return false; }
};

// AdamW: decoupled weight decay, p -= lr * weight_decay * p before the Adam update (default 0.01).
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, const AdamOptions& options);
  static AdamOptions default_options();
  std::string type_name() const override { return "AdamW"; }

 protected:
  bool decoupled() const override { return true; }
};

}  // namespace minidl
