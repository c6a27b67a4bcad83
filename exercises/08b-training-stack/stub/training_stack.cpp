// exercises/08b-training-stack/training_stack.cpp — EXERCISE 8b: build the training stack. A Module with its
// parameter registry (8b.1), Linear (8b.2), the cross-entropy loss (8b.3), Adam (8b.4), the training loop and the
// evaluation (8b.5), on minidl's tensors, ops and autograd; the checker then trains an MLP on MNIST with them.
// Read first: docs/course/08-training-mnist.md. Check your work: `make exercise N=8b`.
//
// training_stack.h declares each part and says what it must do. Build the math from ops (ops/ops.h: matmul,
// add, sub, exp, log, sum, max, gather, mean, neg, index_select, argmax...), so that autograd records it;
// only Adam's update works on the raw numbers (data<float>()), as minidl's optimizers do.
#include "exercises/08b-training-stack/training_stack.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/autograd.h"

namespace minidl {
namespace stack {

// ---- 8b.1 Module

// EXERCISE 8b.1: the module's own parameters (params_), then each child's parameters() (children_), in
// the order they were registered.
std::vector<Tensor> Module::parameters() const { return {}; }

// EXERCISE 8b.1: the sum of numel() over parameters().
int64_t Module::num_parameters() const { return 0; }

// EXERCISE 8b.1: make t require gradients (t.requires_grad_()), then keep (name, t) in params_.
void Module::register_parameter(const std::string& name, Tensor& t) {
  (void)name;
  (void)t;
}

// EXERCISE 8b.1: keep (name, m) in children_.
void Module::register_module(const std::string& name, std::shared_ptr<Module> m) {
  (void)name;
  (void)m;
}

// ---- 8b.2 Linear

// EXERCISE 8b.2: weight [out, in] and bias [out], each element uniform in [-1/sqrt(in), 1/sqrt(in)]:
// rand(shape) is uniform in [0, 1) (from the global seed), so scale and shift it. Then register both.
// Why not zeros: every hidden unit would compute the same thing and receive the same gradient forever.
Linear::Linear(int64_t in_features, int64_t out_features) {
  (void)in_features;
  (void)out_features;
}

// EXERCISE 8b.2: x [N, in] -> x W^T + b [N, out] (weight.transpose(0, 1) is W^T; add broadcasts b over rows).
Tensor Linear::forward(const Tensor& x) { return x; }

// ---- 8b.3 cross-entropy

// EXERCISE 8b.3: with m = each row's max (max(logits, 1, true), detached: a constant shift),
//   log softmax(z)_c = (z_c - m) - log(sum_j exp(z_j - m))      (no exp of a large number: stable)
// then pick each row's target column (gather along dim 1, with targets reshaped to [N, 1]) and return
// minus their mean.
Tensor cross_entropy_loss(const Tensor& logits, const Tensor& targets) {
  (void)targets;
  return zeros({}, logits.options());
}

// ---- 8b.4 Adam

// EXERCISE 8b.4: keep the parameters and the config; one zero moment vector m and v per parameter, each
// of the parameter's numel().
Adam::Adam(std::vector<Tensor> params, AdamConfig config) : params_(std::move(params)), config_(config) {}

// EXERCISE 8b.4: clear each parameter's gradient (Tensor::zero_grad()).
void Adam::zero_grad() {}

// EXERCISE 8b.4: t_ += 1; for each parameter with a gradient (grad().defined()), element by element:
//   m = beta1 m + (1 - beta1) g;   v = beta2 v + (1 - beta2) g^2
//   p -= lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
// The two divisions are the bias correction: m and v start at 0, so early on they underestimate.
// p: params_[k].data<float>(); g: params_[k].grad().contiguous().data<float>() (keep that tensor alive).
void Adam::step() {}

// ---- 8b.5 the loop

// EXERCISE 8b.5: an Adam over model.parameters(); then for each epoch: the indices 0..N-1 shuffled
// (std::iota, std::mt19937_64 rng(config.seed + epoch), std::shuffle), the epoch's learning rate
// (optimizer.set_lr: adam.lr times lr_decay once per epoch after the first); for each batch of them, an int64
// index tensor (from_vector(..., DType::int64)), the batch's rows (index_select(x, 0, index), same for y),
// then forward, loss, zero_grad, backward, step; sum the losses (loss.item<float>()). After the epoch,
// on_epoch(epoch, loss sum / number of batches).
void train(Module& model, const Tensor& x, const Tensor& y, const TrainConfig& config,
           const std::function<void(int epoch, double mean_loss)>& on_epoch) {
  (void)model;
  (void)x;
  (void)y;
  (void)config;
  (void)on_epoch;
}

// EXERCISE 8b.5: under a NoGradGuard (no graph: nothing calls backward), for each batch of rows
// (x.slice(0, start, end)), the predicted class is argmax(logits, 1); count those equal to y's labels
// (y.to_vector<int64_t>()) and return the fraction.
double evaluate(Module& model, const Tensor& x, const Tensor& y, int64_t batch_size) {
  (void)model;
  (void)x;
  (void)y;
  (void)batch_size;
  return 0;
}

}  // namespace stack
}  // namespace minidl
