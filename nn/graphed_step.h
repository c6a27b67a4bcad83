// nn/graphed_step.h — a training step captured once as a CUDA graph and replayed every step after
// (`mnist train` on one GPU, `mnist bench --cuda-graph`).
//
//   GraphedStep step(device, model.parameters(), [&] {       // reads x and y, which the caller refills
//     Tensor loss = cross_entropy(model(x), y);
//     loss.backward();
//     return std::vector<Tensor>{loss};
//   }, 2, &optimizer);
//   for (each batch) { copy_(x, batch.inputs); copy_(y, batch.targets); loss = step.run()[0]; }
//
// run() is one step each time it is called: the first `warmup` calls run the function eagerly, then the
// optimizer's step (cuDNN's algorithm search, cuBLAS's workspace, the optimizer's state and the
// allocator's first blocks happen there, not in the graph); the next call captures the function and the
// optimizer's update (cuda/graph.h) and replays them, and every later call only replays them. The
// gradients are dropped before each eager run and before the capture, so the captured backward writes
// fresh gradient tensors; after each replay every parameter's .grad is set to those tensors again. Before
// each replay the optimizer's begin_step() writes this step's learning rate and step count into the
// device scalars the captured update reads (nn/optim.h), so a schedule's rate changes apply. Without an
// optimizer, only the function is captured, and the caller runs its own update after run().
//
// The function must read its inputs from tensors that live as long as the GraphedStep (the graph reads
// their addresses), and give results that are rewritten by each replay: run() returns copies of them.
// With an optimizer, every parameter must get a gradient in every step. Nothing the graph reads may be
// replaced while it lives: not the parameters (Module::to), not the optimizer's state (load_state_dict);
// build the GraphedStep after those. On a CPU device there is nothing to capture: run() always runs eagerly.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "core/tensor.h"

namespace minidl {

namespace cuda {
class CapturedGraph;
}
class Optimizer;

class GraphedStep {
 public:
  using StepFunction = std::function<std::vector<Tensor>()>;
  GraphedStep(Device device, std::vector<Tensor> params, StepFunction forward_backward, int warmup = 2,
              Optimizer* optimizer = nullptr);
  ~GraphedStep();
  GraphedStep(const GraphedStep&) = delete;
  GraphedStep& operator=(const GraphedStep&) = delete;

  // One step (see above); the function's results, as tensors of their own.
  std::vector<Tensor> run();
  // Whether the step has been captured (runs from now on are replays).
  bool captured() const { return graph_ != nullptr; }
  // Nodes of the captured graph (0 before the capture).
  size_t node_count() const;

 private:
  Device device_;
  std::vector<Tensor> params_;
  StepFunction forward_backward_;
  int warmup_left_;
  Optimizer* optimizer_;  // or null: the caller updates
  std::unique_ptr<cuda::CapturedGraph> graph_;
  std::vector<Tensor> grads_;    // the captured backward's gradients, one per parameter (undefined: none)
  std::vector<Tensor> results_;  // the captured function's results, rewritten by each replay
};

}  // namespace minidl
