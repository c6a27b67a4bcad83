// tests/test_captcha_graphed_step.cpp — the captcha training step replayed from a CUDA graph
// (examples/captcha/train_step.h) trains exactly like the eager step (train_step), and the pieces that
// make it capturable: ctc_loss inside a capture (ops/ctc.cpp) and the labels' checks outside it
// (ops/ctc_checks.h).
//
// On every device: GraphedTrainStep over a small captcha model (dropout, batch norm, a bidirectional GRU or
// LSTM, ctc_loss with labels of different lengths, Adam with a learning rate that changes every step) gives
// the losses and weights of train_step on different batches, bit for bit. On the CPU nothing is captured
// (GraphedStep runs eagerly); on a GPU ([cuda], skipped without one) the step is captured after two eager
// steps (the graph has nodes), with cuDNN's RNN and the CTC loss inside it.
#include <catch2/catch.hpp>

#include <memory>
#include <random>
#include <vector>

#include "core/random.h"
#include "examples/captcha/model.h"
#include "examples/captcha/train_step.h"
#include "nn/optim.h"
#include "ops/ctc_checks.h"
#include "ops/ops.h"
#include "tests/test_util.h"

#ifdef MINIDL_WITH_CUDA
#include "cuda/graph.h"
#endif

using namespace minidl;
using minidl::testing::compare;
using minidl::testing::DeterministicScope;
using minidl::testing::have_gpu;
using minidl::testing::test_devices;

namespace {

constexpr int64_t kBatch = 8, kMaxLabel = 4, kClasses = 5;

captcha::ModelConfig small_config(captcha::RnnKind rnn) {
  captcha::ModelConfig c;
  c.width = 64;
  c.height = 32;
  c.classes = kClasses;
  c.channels = {4, 8, 8};  // 16 time steps
  c.convs_per_block = 1;
  c.gru_hidden = 6;
  c.rnn = rnn;
  return c;
}

// `steps` batches on the CPU from their own generator (not the global random stream, which the dropout
// masks read): images, labels of 1 to kMaxLabel classes padded with 0, input and label lengths.
struct Batch {
  Tensor inputs, targets, input_lengths, target_lengths;
};
std::vector<Batch> make_batches(int steps, int64_t time_steps) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> pixel(0, 1);
  std::uniform_int_distribution<int> label(1, static_cast<int>(kClasses) - 1), length(1, kMaxLabel);
  const TensorOptions int64_cpu(DType::int64, Device::cpu());
  std::vector<Batch> batches;
  for (int s = 0; s < steps; ++s) {
    std::vector<double> x(kBatch * 3 * 32 * 64), y(kBatch * kMaxLabel, 0), lengths(kBatch);
    for (double& v : x) v = pixel(rng);
    for (int64_t n = 0; n < kBatch; ++n) {
      lengths[n] = length(rng);
      for (int64_t k = 0; k < lengths[n]; ++k) y[n * kMaxLabel + k] = label(rng);
    }
    batches.push_back({from_vector(x, {kBatch, 3, 32, 64}), from_vector(y, {kBatch, kMaxLabel}, int64_cpu),
                       full({kBatch}, static_cast<double>(time_steps), int64_cpu),
                       from_vector(lengths, {kBatch}, int64_cpu)});
  }
  return batches;
}

struct Trained {
  std::vector<double> losses;
  std::vector<Tensor> weights;  // on the CPU
  size_t nodes = 0;             // of the captured graphs
};

// The small model trained on the batches from seed 3 with Adam, by train_step or by GraphedTrainStep; the
// learning rate changes after every step, as a schedule changes it.
Trained train(Device device, captcha::RnnKind rnn, const std::vector<Batch>& batches, bool graphed) {
  manual_seed(3);
  captcha::CaptchaModel model(small_config(rnn));
  model.to(device);
  model.train();
  AdamOptions options;
  options.lr = 3e-3;
  Adam optimizer(model.parameters(), options);
  std::unique_ptr<captcha::GraphedTrainStep> step;
  if (graphed) step = std::make_unique<captcha::GraphedTrainStep>(model, optimizer, device);
  Trained out;
  for (const Batch& b : batches) {
    const captcha::TrainStep s =
        step ? (*step)(b.inputs, b.targets, b.input_lengths, b.target_lengths)
             : captcha::train_step(model, optimizer, b.inputs.to(device), b.targets, b.input_lengths, b.target_lengths);
    optimizer.set_lr(optimizer.lr() * 0.8);
    out.losses.push_back(s.loss.item<double>());
  }
  for (const Tensor& p : model.parameters()) out.weights.push_back(p.detach().to(Device::cpu()));
  if (step) out.nodes = step->node_count();
  return out;
}

// Trains both ways and checks the graphed run against the eager one, bit for bit.
void check_same_training(Device device, captcha::RnnKind rnn) {
  const std::vector<Batch> batches = make_batches(6, small_config(rnn).time_steps());  // 2 eager, capture, 3 replays
  const Trained eager = train(device, rnn, batches, false);
  const Trained graphed = train(device, rnn, batches, true);
  CHECK((graphed.nodes > 0) == device.is_cuda());
  REQUIRE(graphed.losses.size() == eager.losses.size());
  for (size_t s = 0; s < eager.losses.size(); ++s) {
    INFO("step " << s + 1 << ": eager loss " << eager.losses[s] << ", graphed " << graphed.losses[s]);
    CHECK(graphed.losses[s] == eager.losses[s]);
  }
  CHECK(eager.losses.front() != eager.losses.back());  // it trained
  REQUIRE(graphed.weights.size() == eager.weights.size());
  for (size_t i = 0; i < eager.weights.size(); ++i) {
    INFO("parameter " << i);
    CHECK(compare(graphed.weights[i], eager.weights[i], 0, 0) == "");
  }
}

}  // namespace

TEST_CASE("captcha GraphedTrainStep on the CPU: the losses and weights of train_step, bit for bit",
          "[graph][captcha_model]") {
  for (captcha::RnnKind rnn : {captcha::RnnKind::gru, captcha::RnnKind::lstm}) {
    INFO("rnn " << captcha::rnn_kind_name(rnn));
    check_same_training(Device::cpu(), rnn);
  }
}

TEST_CASE("check_ctc_targets: the checks ctc_loss makes, on their own", "[ctc]") {
  const TensorOptions i64(DType::int64, Device::cpu());
  const Tensor targets = from_vector({1, 2, 3, 0}, {2, 2}, i64);
  const Tensor il = full({2}, 4, i64), tl = from_vector({2, 1}, {2}, i64);
  CHECK_NOTHROW(check_ctc_targets(targets, il, tl, 4, 4));
  CHECK_THROWS_WITH(check_ctc_targets(targets, il, tl, 4, 3), Catch::Contains("targets[1, 0] = 3 is not a class"));
  CHECK_THROWS_WITH(check_ctc_targets(targets, full({2}, 5, i64), tl, 4, 4),
                    Catch::Contains("input_lengths[0] = 5 is outside"));
  CHECK_THROWS_WITH(check_ctc_targets(targets, il, from_vector({3, 1}, {2}, i64), 4, 4),
                    Catch::Contains("target_lengths[0] = 3 is outside"));
  CHECK_THROWS_WITH(check_ctc_targets(from_vector({1, 0, 3, 0}, {2, 2}, i64), il, full({2}, 2, i64), 4, 4),
                    Catch::Contains("is the blank"));
  CHECK_THROWS_WITH(check_ctc_targets(targets, full({3}, 4, i64), tl, 4, 4), Catch::Contains("must both be [2]"));
}

#ifdef MINIDL_WITH_CUDA

TEST_CASE("captcha GraphedTrainStep on a GPU: captured with cuDNN's RNN and the CTC loss inside, the losses and "
          "weights of train_step",
          "[cuda][graph]") {
  if (!have_gpu()) return;
  const DeterministicScope deterministic(true);
  for (captcha::RnnKind rnn : {captcha::RnnKind::gru, captcha::RnnKind::lstm}) {
    INFO("rnn " << captcha::rnn_kind_name(rnn));
    check_same_training(Device::cuda(0), rnn);
  }
}

TEST_CASE("cuda graph: ctc_loss in a capture takes labels on the device, and refuses them from the host",
          "[cuda][graph][ctc]") {
  if (!have_gpu()) return;
  const Device gpu = Device::cuda(0);
  const Tensor log_probs = log_softmax(rand({6, 2, 4}, TensorOptions(DType::float32, gpu)), -1);
  const TensorOptions i64(DType::int64, Device::cpu());
  const Tensor targets = from_vector({1, 2, 3, 0}, {2, 2}, i64), il = full({2}, 6, i64);
  const Tensor tl = from_vector({2, 1}, {2}, i64);
  const double eager = ctc_loss(log_probs, targets, il, tl).item<double>();
  CHECK_THROWS_WITH(cuda::CapturedGraph(0, [&] { ctc_loss(log_probs, targets, il, tl); }),
                    Catch::Contains("must be on cuda:0 already"));
  const Tensor t = targets.to(gpu), i = il.to(gpu), l = tl.to(gpu);
  Tensor loss;
  cuda::CapturedGraph graph(0, [&] { loss = ctc_loss(log_probs, t, i, l); });
  CHECK(graph.node_count() > 0);
  graph.replay();
  CHECK(loss.item<double>() == eager);
}

#endif  // MINIDL_WITH_CUDA
