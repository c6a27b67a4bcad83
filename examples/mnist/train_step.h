// examples/mnist/train_step.h — one training step of the MNIST CNN, as `mnist train` runs it and
// `mnist bench` times it.
#pragma once
#include <functional>

#include "nn/module.h"
#include "nn/optim.h"
#include "ops/ops.h"

namespace mnist {

struct TrainStep {
  minidl::Tensor logits;  // [N, 10], with history (detach before reading)
  minidl::Tensor loss;    // scalar, on the device
};

// inputs [N, 1, 28, 28] and targets [N] int64 on the model's device. Forward, cross-entropy (mean over the
// batch), zero_grad, backward, optimizer step. The learning-rate schedule is the caller's. `after_backward`
// runs between backward and the step (data-parallel training completes the gradients there).
inline TrainStep train_step(minidl::Module& model, minidl::Optimizer& optimizer, const minidl::Tensor& inputs,
                            const minidl::Tensor& targets, const std::function<void()>& after_backward = {}) {
  TrainStep s;
  // [doc:train_step] quoted by docs/course/08-training-mnist.md
  s.logits = model(inputs);
  s.loss = minidl::cross_entropy(s.logits, targets);
  optimizer.zero_grad();
  s.loss.backward();
  if (after_backward) after_backward();
  optimizer.step();
  // [/doc:train_step]
  return s;
}

}  // namespace mnist
