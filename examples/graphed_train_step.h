// examples/graphed_train_step.h — a program's training step replayed from CUDA graphs (nn/graphed_step.h):
// the plumbing `mnist train` and `captcha train` share (examples/mnist/train_step.h,
// examples/captcha/train_step.h), and the rule for when they use it.
//
// One graph per set of input shapes (an epoch's last batch may be smaller), each with its own fixed input
// tensors on the device. Every call copies its inputs (from any device) into those tensors, then runs the
// GraphedStep: two eager warm-up steps, then the capture, then replays. The step function reads only the
// fixed tensors it is given, and returns the tensors the caller wants back (the loss among them), which come
// back without history. The optimizer's update is part of the graph; the learning-rate schedule stays the
// caller's (each replay reads the optimizer's current rate). Not for data-parallel training: its gradient
// hooks talk to other processes, which a graph cannot hold.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/memory_format.h"
#include "nn/graphed_step.h"
#include "nn/module.h"
#include "nn/optim.h"

namespace examples {

// Whether `train` replays its steps from CUDA graphs: by default on one GPU; --no-cuda-graph runs every step
// eagerly; --cuda-graph asks for graphs and is refused, with the reason, where they cannot be used (on the
// CPU, or with --distributed).
inline bool use_cuda_graph(const minidl::Device& device, bool cuda_graph, bool no_cuda_graph, bool distributed) {
  MINIDL_CHECK(!cuda_graph || device.is_cuda(), "--cuda-graph needs a CUDA device; this run is on ", device.str());
  MINIDL_CHECK(!cuda_graph || !distributed, "--cuda-graph cannot be used with --distributed: the gradient all-reduce "
               "runs inside backward and talks to other processes, which a CUDA graph cannot hold");
  return device.is_cuda() && !distributed && !no_cuda_graph;
}

class GraphedTrainStep {
 public:
  // Forward, loss and backward on the fixed input tensors (the optimizer's update is added by the graph).
  using Step = std::function<std::vector<minidl::Tensor>(const std::vector<minidl::Tensor>& inputs)>;

  // On a CPU device nothing is captured (GraphedStep runs every step eagerly): the same plumbing, which the
  // tests compare with the eager step; the programs refuse --cuda-graph there (use_cuda_graph).
  GraphedTrainStep(minidl::Module& model, minidl::Optimizer& optimizer, minidl::Device device, Step step)
      : model_(model), optimizer_(optimizer), device_(device), step_(std::move(step)) {}

  // One training step on `inputs` (the first one's first dimension is the batch size): the step function's
  // results, without history.
  std::vector<minidl::Tensor> operator()(const std::vector<minidl::Tensor>& inputs) {
    MINIDL_CHECK(!inputs.empty() && inputs[0].dim() >= 1, "GraphedTrainStep: the first input must be a batch");
    std::vector<minidl::Shape> shapes;
    for (const minidl::Tensor& t : inputs) shapes.push_back(t.shape());
    Captured& c = by_shapes_[shapes];
    if (!c.step) {
      for (const minidl::Tensor& t : inputs)
        // In the input's memory format (--memory-format), so that the copy below keeps it.
        c.inputs.push_back(minidl::empty_in_format(t.shape(), minidl::TensorOptions(t.dtype(), device_),
                                                   minidl::suggest_memory_format(t)));
      c.step = std::make_unique<minidl::GraphedStep>(
          device_, model_.parameters(), [this, &c] { return step_(c.inputs); }, kWarmup, &optimizer_);
    }
    for (size_t i = 0; i < inputs.size(); ++i) minidl::copy_(c.inputs[i], inputs[i]);
    const bool captures_now = device_.is_cuda() && c.calls++ == kWarmup;
    if (!captures_now) return c.step->run();  // the optimizer's step included
    try {
      return c.step->run();
    } catch (const minidl::Error& e) {  // the capture failed (the message says why): say how to do without
      throw minidl::Error(minidl::str_cat(e.what(), " (--no-cuda-graph runs every step eagerly)"));
    }
  }

  // "batch 256: 164 nodes; batch 96: 164 nodes" (the captured graphs so far), or "none captured yet".
  std::string describe() const {
    std::string out;
    for (const auto& [shapes, c] : by_shapes_)
      if (c.step && c.step->captured())
        out += minidl::str_cat(out.empty() ? "" : "; ", "batch ", shapes.at(0).at(0), ": ", c.step->node_count(),
                               " nodes");
    return out.empty() ? "none captured yet" : out;
  }

  // Nodes of every graph captured so far (0 before the first capture).
  size_t node_count() const {
    size_t n = 0;
    for (const auto& [shapes, c] : by_shapes_) n += c.step ? c.step->node_count() : 0;
    return n;
  }

 private:
  static constexpr int kWarmup = 2;  // eager steps before the capture (nn/graphed_step.h)
  struct Captured {
    std::vector<minidl::Tensor> inputs;  // the graph reads these; each call copies its inputs in
    std::unique_ptr<minidl::GraphedStep> step;
    int calls = 0;  // steps run so far; the call after kWarmup eager ones captures
  };
  minidl::Module& model_;
  minidl::Optimizer& optimizer_;
  minidl::Device device_;
  Step step_;
  std::map<std::vector<minidl::Shape>, Captured> by_shapes_;  // map: the step functions hold references to entries
};

}  // namespace examples
