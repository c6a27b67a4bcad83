// examples/captcha/train_step.h — one training step of the captcha model, as `captcha train` runs it and
// `captcha bench` times it: eagerly (train_step), or replayed from a CUDA graph (GraphedTrainStep: what
// `captcha train` runs on one GPU and `captcha bench --cuda-graph` times).
//
// What the graph holds: the CNN (cuDNN's convolutions, batch norm, pooling, the dropout masks, which each
// replay draws afresh: cuda/graph.h), the recurrent layer (cuDNN's RNN: its sequence lengths are filled on the
// device, cuda/rnn_cudnn.cu), the classifier, ctc_loss and its gradient, backward, and Adam's update. What
// stays outside, on the host, because a graph cannot hold it:
//   - the labels' checks: ctc_loss checks labels and lengths on the host, which inside a capture would need
//     the device to run; each call checks its batch with check_ctc_targets (ops/ctc_checks.h) before copying
//     it in (free for the CPU tensors `captcha train` passes; a device tensor would be read back);
//   - the copies of the batch (images, padded labels, input and label lengths) into the graph's tensors;
//   - the learning-rate schedule (each replay reads the optimizer's rate: nn/optim.h), and reading the loss
//     for the log and the divergence guard (examples/captcha/loss_log.h reads 64 losses at a time).
// Labels are padded to the longest label of the data (examples/data/captcha_data.h), so every batch of one
// size has the same shapes and one graph serves the run (two when the last batch is smaller).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "examples/captcha/model.h"
#include "examples/graphed_train_step.h"
#include "nn/optim.h"
#include "ops/ctc_checks.h"
#include "ops/ops.h"

namespace captcha {

struct TrainStep {
  minidl::Tensor log_probs;  // [T, B, classes], with history (detach before decoding)
  minidl::Tensor loss;       // scalar, on the device
};

// inputs [B, 3, H, W] on the model's device; targets [B, S] padded with 0; input_lengths and target_lengths
// [B] int64 (targets and lengths on any device: ctc_loss moves them to the log-probabilities' device).
// Forward, ctc_loss over the input lengths (zero_infinity: a label no alignment fits adds nothing rather
// than inf), zero_grad, backward, optimizer step. The learning-rate schedule is the caller's.
// `after_backward` runs between backward and the step (data-parallel training completes the gradients there).
inline TrainStep train_step(CaptchaModel& model, minidl::Optimizer& optimizer, const minidl::Tensor& inputs,
                            const minidl::Tensor& targets, const minidl::Tensor& input_lengths,
                            const minidl::Tensor& target_lengths, const std::function<void()>& after_backward = {}) {
  TrainStep s;
  s.log_probs = model(inputs);
  s.loss = minidl::ctc_loss(s.log_probs, targets, input_lengths, target_lengths, 0, /*zero_infinity=*/true);
  optimizer.zero_grad();
  s.loss.backward();
  if (after_backward) after_backward();
  optimizer.step();
  return s;
}

class GraphedTrainStep {
 public:
  GraphedTrainStep(CaptchaModel& model, minidl::Optimizer& optimizer, minidl::Device device)
      : model_(model), step_(model, optimizer, device, [&model](const std::vector<minidl::Tensor>& in) {
          const minidl::Tensor log_probs = model(in[0]);
          const minidl::Tensor loss = minidl::ctc_loss(log_probs, in[1], in[2], in[3], 0, /*zero_infinity=*/true);
          loss.backward();
          return std::vector<minidl::Tensor>{log_probs, loss};
        }) {}

  // As train_step, with the optimizer's update: inputs [B, 3, H, W], targets [B, S] padded with 0,
  // input_lengths and target_lengths [B] int64, on any device (the labels best on the CPU, see above). On a
  // CPU device nothing is captured: every step runs eagerly (the programs refuse --cuda-graph there).
  TrainStep operator()(const minidl::Tensor& inputs, const minidl::Tensor& targets,
                       const minidl::Tensor& input_lengths, const minidl::Tensor& target_lengths) {
    minidl::check_ctc_targets(targets, input_lengths, target_lengths, model_.config.time_steps(),
                              model_.config.classes);
    const std::vector<minidl::Tensor> out = step_({inputs, targets, input_lengths, target_lengths});
    return TrainStep{out[0], out[1]};
  }

  // "batch 128: N nodes" (the captured graphs so far), or "none captured yet".
  std::string describe() const { return step_.describe(); }
  // Nodes of every graph captured so far (0 before the first capture).
  size_t node_count() const { return step_.node_count(); }

 private:
  CaptchaModel& model_;
  examples::GraphedTrainStep step_;
};

}  // namespace captcha
