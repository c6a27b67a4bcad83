// nn/graphed_step.cpp — GraphedStep (nn/graphed_step.h): eager warm-up, one capture, then replays.
#include "nn/graphed_step.h"

#include <utility>

#include "core/error.h"
#include "nn/optim.h"
#ifdef MINIDL_WITH_CUDA
#include "cuda/graph.h"
#else
namespace minidl::cuda {
// A build without CUDA never captures (the constructor refuses CUDA devices), but unique_ptr's deleter
// needs a complete type.
class CapturedGraph {};
}  // namespace minidl::cuda
#endif

namespace minidl {

GraphedStep::GraphedStep(Device device, std::vector<Tensor> params, StepFunction forward_backward, int warmup,
                         Optimizer* optimizer)
    : device_(device), params_(std::move(params)), forward_backward_(std::move(forward_backward)),
      warmup_left_(warmup), optimizer_(optimizer) {
  MINIDL_CHECK(warmup >= 0, "GraphedStep: warmup must be >= 0, got ", warmup);
  MINIDL_CHECK(forward_backward_ != nullptr, "GraphedStep: no step function");
#ifndef MINIDL_WITH_CUDA
  MINIDL_CHECK(!device.is_cuda(), "GraphedStep: this build of minidl has no CUDA backend");
#endif
}

GraphedStep::~GraphedStep() = default;

size_t GraphedStep::node_count() const {
#ifdef MINIDL_WITH_CUDA
  return graph_ ? graph_->node_count() : 0;
#else
  return 0;
#endif
}

std::vector<Tensor> GraphedStep::run() {
  auto drop_gradients = [&] {
    for (const Tensor& p : params_) p.zero_grad();
  };
  if (!device_.is_cuda() || warmup_left_ > 0) {  // eager
    if (warmup_left_ > 0) --warmup_left_;
    drop_gradients();
    std::vector<Tensor> results = forward_backward_();
    if (optimizer_) optimizer_->step();
    return results;
  }
#ifdef MINIDL_WITH_CUDA
  if (!graph_) {
    drop_gradients();
    // The host's half of this step's update (every parameter: the gradients are made by the capture).
    if (optimizer_) optimizer_->begin_step(/*every_parameter=*/true);
    // The results without their history: the backward graph and its saved tensors are freed inside the
    // capture, so their blocks are reused there.
    try {
      graph_ = std::make_unique<cuda::CapturedGraph>(device_.index, [&] {
        results_.clear();
        for (const Tensor& r : forward_backward_()) results_.push_back(r.defined() ? r.detach() : Tensor());
        if (optimizer_) optimizer_->finish_step();
      });
    } catch (...) {
      // The capture failed (its message says why) before finish_step() ran: close the begun step, so
      // that the optimizer is not left waiting for it.
      if (optimizer_ && optimizer_->step_pending()) optimizer_->finish_step_replayed();
      throw;
    }
    grads_.clear();
    for (const Tensor& p : params_) grads_.push_back(p.grad());
    graph_->replay();
  } else {
    if (optimizer_) optimizer_->begin_step(/*every_parameter=*/true);  // this step's lr and step, for the replay
    graph_->replay();
    if (optimizer_) optimizer_->finish_step_replayed();  // the replay ran the captured update
  }
  for (size_t i = 0; i < params_.size(); ++i) params_[i].set_grad(grads_[i]);
  std::vector<Tensor> copies;
  for (const Tensor& r : results_) copies.push_back(r.defined() ? r.clone() : Tensor());
  return copies;
#else
  return {};  // unreachable: the constructor refuses CUDA devices without the backend
#endif
}

}  // namespace minidl
