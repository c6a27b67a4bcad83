// exercises/08b-training-stack/training_stack.h — what exercise 8b's file (training_stack.cpp) defines, for the
// checker (check.cpp): a training stack of its own (a Module with a parameter registry, Linear, the
// cross-entropy loss, Adam, the training loop and the evaluation) on minidl's tensors, ops and autograd.
// Chapter: docs/course/08-training-mnist.md. The names live in namespace minidl::stack, apart from minidl's
// own Module, Linear and Adam (nn/), which the checker uses as references.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "ops/ops.h"

namespace minidl {
namespace stack {

// 8b.1. A layer, or a model made of layers: it owns parameters and child modules, registered by name.
class Module {
 public:
  virtual ~Module() = default;
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }

  // Every parameter of this module, then of each child (recursively), in registration order, each once.
  std::vector<Tensor> parameters() const;
  // The number of parameter elements (the sum of numel over parameters()).
  int64_t num_parameters() const;

 protected:
  // Records t as a parameter called `name` and makes it require gradients. t is a handle: the module keeps
  // a copy of it that shares its storage, so a later update of one is an update of the other.
  void register_parameter(const std::string& name, Tensor& t);
  // Records m as a child module called `name`.
  void register_module(const std::string& name, std::shared_ptr<Module> m);

 private:
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

// 8b.2. y = x W^T + b for x [N, in]: weight W [out, in], bias b [out], float32, each element drawn uniformly
// from [-1/sqrt(in), 1/sqrt(in)] (PyTorch's default), registered as "weight" and "bias".
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
};

// Given: the model the checker trains, in -> hidden -> out with a ReLU between ("fc1", "fc2").
class Mlp : public Module {
 public:
  Mlp(int64_t in, int64_t hidden, int64_t out)
      : fc1(std::make_shared<Linear>(in, hidden)), fc2(std::make_shared<Linear>(hidden, out)) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override { return (*fc2)(relu((*fc1)(x))); }
  std::shared_ptr<Linear> fc1, fc2;
};

// 8b.3. The mean over the batch of -log softmax(logits)[target]: logits [N, C] float, targets [N] int64 in
// 0..C-1; a scalar that autograd can differentiate, finite for any finite logits (even 1000 apart).
Tensor cross_entropy_loss(const Tensor& logits, const Tensor& targets);

// 8b.4. Adam (Kingma and Ba), as torch.optim.Adam without weight decay. For each element, at step t = 1, 2...:
//   m = beta1 m + (1 - beta1) g,  v = beta2 v + (1 - beta2) g^2   (m and v start at 0)
//   p -= lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
struct AdamConfig {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

class Adam {
 public:
  Adam(std::vector<Tensor> params, AdamConfig config);
  void zero_grad();  // clears every parameter's gradient (the next backward starts from nothing)
  void step();       // one update of every parameter that has a gradient; parameters are float32, contiguous
  void set_lr(double lr) { config_.lr = lr; }  // given: for the loop's schedule

 private:
  std::vector<Tensor> params_;
  AdamConfig config_;
  std::vector<std::vector<double>> m_, v_;  // the moments, one vector per parameter
  int64_t t_ = 0;                           // steps taken
};

// 8b.5. The training loop. For each epoch 1..epochs: a fresh random order of the training samples
// (std::mt19937_64 seeded with seed + epoch, std::shuffle) and the learning rate adam.lr * lr_decay^(epoch - 1),
// then batches of batch_size in that order (the last may be smaller): forward, cross_entropy_loss, zero_grad,
// backward, step. After each epoch, calls on_epoch(epoch, the mean of the batches' losses). One Adam for the
// whole run. x [N, features] float32, y [N] int64.
struct TrainConfig {
  int epochs = 3;
  int64_t batch_size = 64;
  uint64_t seed = 1;
  double lr_decay = 0.5;  // each epoch's learning rate is the previous one's times this
  AdamConfig adam;
};
void train(Module& model, const Tensor& x, const Tensor& y, const TrainConfig& config,
           const std::function<void(int epoch, double mean_loss)>& on_epoch);

// The fraction of samples whose highest logit is their label, in batches of batch_size, recording no graph.
double evaluate(Module& model, const Tensor& x, const Tensor& y, int64_t batch_size);

}  // namespace stack
}  // namespace minidl
