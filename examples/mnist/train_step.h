// examples/mnist/train_step.h — one training step of the MNIST CNN, as `mnist train` runs it and
// `mnist bench` times it.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "examples/graphed_train_step.h"
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

// The same step with forward, cross-entropy, backward and the optimizer's update captured as a CUDA
// graph and replayed (examples/graphed_train_step.h): one graph per batch size, into whose input tensors
// every call copies its batch. The returned tensors have no history.
class GraphedTrainStep {
 public:
  GraphedTrainStep(minidl::Module& model, minidl::Optimizer& optimizer, minidl::Device device)
      : step_(model, optimizer, device, [&model](const std::vector<minidl::Tensor>& in) {
          const minidl::Tensor logits = model(in[0]);
          const minidl::Tensor loss = minidl::cross_entropy(logits, in[1]);
          loss.backward();
          return std::vector<minidl::Tensor>{logits, loss};
        }) {
    MINIDL_CHECK(device.is_cuda(), "--cuda-graph needs a CUDA device; this run is on ", device.str());
  }

  TrainStep operator()(const minidl::Tensor& inputs, const minidl::Tensor& targets) {
    const std::vector<minidl::Tensor> out = step_({inputs, targets});
    return TrainStep{out[0], out[1]};
  }

  // "batch 256: 164 nodes; batch 96: 164 nodes" (the captured graphs so far), or "none captured yet".
  std::string describe() const { return step_.describe(); }

 private:
  examples::GraphedTrainStep step_;
};

}  // namespace mnist
