// examples/mnist/train_step.h — one training step of the MNIST CNN, as `mnist train` runs it and
// `mnist bench` times it.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "core/error.h"
#include "core/memory_format.h"
#include "nn/graphed_step.h"
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
// graph and replayed (nn/graphed_step.h): one graph per batch size (an epoch's last batch may be
// smaller), each with its own input buffers, into which every call copies its batch. The returned tensors
// have no history. Not for data-parallel training: its gradient hooks talk to other processes, which a
// graph cannot hold.
class GraphedTrainStep {
 public:
  GraphedTrainStep(minidl::Module& model, minidl::Optimizer& optimizer, minidl::Device device)
      : model_(model), optimizer_(optimizer), device_(device) {
    MINIDL_CHECK(device.is_cuda(), "--cuda-graph needs a CUDA device; this run is on ", device.str());
  }

  TrainStep operator()(const minidl::Tensor& inputs, const minidl::Tensor& targets) {
    Captured& c = by_batch_[inputs.size(0)];
    if (!c.step) {
      // In the inputs' memory format (--memory-format), so that the copy below keeps it.
      c.inputs = minidl::empty_in_format(inputs.shape(), minidl::TensorOptions(inputs.dtype(), device_),
                                         minidl::suggest_memory_format(inputs));
      c.targets = minidl::empty(targets.shape(), minidl::TensorOptions(targets.dtype(), device_));
      c.step = std::make_unique<minidl::GraphedStep>(device_, model_.parameters(), [this, &c] {
        const minidl::Tensor logits = model_(c.inputs);
        const minidl::Tensor loss = minidl::cross_entropy(logits, c.targets);
        loss.backward();
        return std::vector<minidl::Tensor>{logits, loss};
      }, /*warmup=*/2, &optimizer_);
    }
    minidl::copy_(c.inputs, inputs);
    minidl::copy_(c.targets, targets);
    const std::vector<minidl::Tensor> out = c.step->run();  // the optimizer's step included
    return TrainStep{out[0], out[1]};
  }

  // "batch 256: 164 nodes; batch 96: 164 nodes" (the captured graphs so far), or "none captured yet".
  std::string describe() const {
    std::string out;
    for (const auto& [batch, c] : by_batch_)
      if (c.step && c.step->captured())
        out += minidl::str_cat(out.empty() ? "" : "; ", "batch ", batch, ": ", c.step->node_count(), " nodes");
    return out.empty() ? "none captured yet" : out;
  }

 private:
  struct Captured {
    minidl::Tensor inputs, targets;  // the graph reads these; each call copies its batch in
    std::unique_ptr<minidl::GraphedStep> step;
  };
  minidl::Module& model_;
  minidl::Optimizer& optimizer_;
  minidl::Device device_;
  std::map<int64_t, Captured> by_batch_;  // map: the step functions hold references to their entries
};

}  // namespace mnist
