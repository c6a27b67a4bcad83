// exercises/08b-training-stack/training_stack.cpp — EXERCISE 8b (reference solution): a training stack on
// minidl's tensors and autograd: Module's parameter registry, Linear, a stable cross-entropy, Adam with
// bias correction, the training loop and the evaluation.
#include "exercises/08b-training-stack/training_stack.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/autograd.h"

namespace minidl {
namespace stack {

// ---- 8b.1 Module

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (const auto& [name, p] : params_) out.push_back(p);
  for (const auto& [name, child] : children_)
    for (const Tensor& p : child->parameters()) out.push_back(p);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

void Module::register_parameter(const std::string& name, Tensor& t) {
  t.requires_grad_(true);
  params_.emplace_back(name, t);
}

void Module::register_module(const std::string& name, std::shared_ptr<Module> m) {
  children_.emplace_back(name, std::move(m));
}

// ---- 8b.2 Linear

Linear::Linear(int64_t in_features, int64_t out_features) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  // rand is uniform in [0, 1): 2 bound u - bound is uniform in [-bound, bound).
  weight = add_scalar(mul_scalar(rand({out_features, in_features}), 2 * bound), -bound);
  bias = add_scalar(mul_scalar(rand({out_features}), 2 * bound), -bound);
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

Tensor Linear::forward(const Tensor& x) { return add(matmul(x, weight.transpose(0, 1)), bias); }

// ---- 8b.3 cross-entropy

Tensor cross_entropy_loss(const Tensor& logits, const Tensor& targets) {
  // log softmax(z)_c = z_c - m - log(sum_j exp(z_j - m)), with m the row's max: no exp overflows.
  const Tensor m = max(logits, 1, /*keepdim=*/true).detach();
  const Tensor shifted = sub(logits, m);
  const Tensor log_probs = sub(shifted, log(sum(exp(shifted), {1}, /*keepdim=*/true)));
  const Tensor picked = gather(log_probs, 1, targets.reshape({targets.numel(), 1}));  // [N, 1]
  return neg(mean(picked));
}

// ---- 8b.4 Adam

Adam::Adam(std::vector<Tensor> params, AdamConfig config) : params_(std::move(params)), config_(config) {
  for (const Tensor& p : params_) {
    m_.emplace_back(static_cast<size_t>(p.numel()), 0.0);
    v_.emplace_back(static_cast<size_t>(p.numel()), 0.0);
  }
}

void Adam::zero_grad() {
  for (const Tensor& p : params_) p.zero_grad();
}

void Adam::step() {
  ++t_;
  const double c1 = 1 - std::pow(config_.beta1, static_cast<double>(t_));
  const double c2 = 1 - std::pow(config_.beta2, static_cast<double>(t_));
  for (size_t k = 0; k < params_.size(); ++k) {
    if (!params_[k].grad().defined()) continue;
    const Tensor g_tensor = params_[k].grad().contiguous();
    const float* g = g_tensor.data<float>();
    float* p = params_[k].data<float>();
    std::vector<double>& m = m_[k];
    std::vector<double>& v = v_[k];
    for (size_t i = 0; i < m.size(); ++i) {
      m[i] = config_.beta1 * m[i] + (1 - config_.beta1) * g[i];
      v[i] = config_.beta2 * v[i] + (1 - config_.beta2) * g[i] * g[i];
      p[i] -= static_cast<float>(config_.lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + config_.eps));
    }
  }
}

// ---- 8b.5 the loop

void train(Module& model, const Tensor& x, const Tensor& y, const TrainConfig& config,
           const std::function<void(int epoch, double mean_loss)>& on_epoch) {
  Adam optimizer(model.parameters(), config.adam);
  const int64_t n = x.size(0);
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int epoch = 1; epoch <= config.epochs; ++epoch) {
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(config.seed + static_cast<uint64_t>(epoch));
    std::shuffle(order.begin(), order.end(), rng);
    optimizer.set_lr(config.adam.lr * std::pow(config.lr_decay, epoch - 1));
    double loss_sum = 0;
    int64_t batches = 0;
    for (int64_t start = 0; start < n; start += config.batch_size) {
      const int64_t end = std::min(n, start + config.batch_size);
      const std::vector<double> picked(order.begin() + start, order.begin() + end);
      const Tensor index = from_vector(picked, {end - start}, DType::int64);
      const Tensor loss = cross_entropy_loss(model(index_select(x, 0, index)), index_select(y, 0, index));
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      loss_sum += loss.item<float>();
      ++batches;
    }
    on_epoch(epoch, loss_sum / static_cast<double>(batches));
  }
}

double evaluate(Module& model, const Tensor& x, const Tensor& y, int64_t batch_size) {
  NoGradGuard no_grad;
  const int64_t n = x.size(0);
  const std::vector<int64_t> labels = y.to_vector<int64_t>();
  int64_t correct = 0;
  for (int64_t start = 0; start < n; start += batch_size) {
    const int64_t end = std::min(n, start + batch_size);
    const std::vector<int64_t> predicted = argmax(model(x.slice(0, start, end)), 1).to_vector<int64_t>();
    for (int64_t i = start; i < end; ++i) correct += predicted[static_cast<size_t>(i - start)] == labels[static_cast<size_t>(i)];
  }
  return static_cast<double>(correct) / static_cast<double>(n);
}

}  // namespace stack
}  // namespace minidl
