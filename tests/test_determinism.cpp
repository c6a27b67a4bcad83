// tests/test_determinism.cpp — the same seed gives the same bits: on the CPU always (for a given thread
// count), on a GPU with deterministic algorithms (core/determinism.h, `--deterministic`). A few training
// steps of a small model with every layer kind of the examples (conv, batch norm, max-pool, dropout, GRU,
// linear, log_softmax, ctc_loss, cross-entropy, Adam) run twice and must leave identical parameters.
// The GPU cases are tagged [cuda] and skip without a GPU. The programs are checked end to end, across two
// processes (where cuDNN's algorithm choice starts afresh), by tests/train_reliability_test.sh.
#include <catch2/catch.hpp>
#include <cstring>

#include "core/autograd.h"
#include "core/determinism.h"
#include "core/random.h"
#include "examples/captcha/model.h"
#include "nn/optim.h"
#include "tests/test_util.h"

using namespace minidl;
using minidl::testing::DeterministicScope;

namespace {

captcha::ModelConfig small_config() {
  captcha::ModelConfig c;
  c.width = 32;
  c.height = 16;
  c.classes = 5;
  c.channels = {8, 8};
  c.convs_per_block = 2;
  c.gru_hidden = 16;
  c.gru_layers = 2;
  c.dropout = 0.2;
  return c;
}

// Three Adam steps from seed 11 on `device`; returns every parameter and buffer, as raw bytes.
std::vector<std::vector<uint8_t>> train_a_little(Device device) {
  manual_seed(11);
  captcha::CaptchaModel model(small_config());
  model.to(device);
  Adam adam(model.parameters(), AdamOptions());
  const Tensor x = rand({6, 3, 16, 32}).to(device);
  const Tensor targets = from_vector({1, 2, 3, 4, 1, 1, 2, 0, 0, 3, 3, 3, 4, 0, 0, 2, 1, 0}, {6, 3}, DType::int64);
  const Tensor input_lengths = full({6}, 16, DType::int64);
  const Tensor target_lengths = from_vector({3, 3, 1, 3, 1, 2}, {6}, DType::int64);
  for (int step = 0; step < 3; ++step) {
    const Tensor log_probs = model(x);
    // ctc_loss, plus a classification loss through nll_loss (gather and its scatter-add backward).
    const Tensor frame_targets = from_vector({0, 1, 2, 3, 4, 0}, {6}, DType::int64).to(device);
    const Tensor loss = ctc_loss(log_probs, targets, input_lengths, target_lengths, 0, true) +
                        nll_loss(log_probs.select(0, 0), frame_targets);
    adam.zero_grad();
    loss.backward();
    adam.step();
  }
  std::vector<std::vector<uint8_t>> out;
  for (const auto& [name, t] : model.state_dict()) {
    const Tensor host = t.to(Device::cpu()).contiguous();
    const uint8_t* p = static_cast<const uint8_t*>(host.raw_data());
    out.emplace_back(p, p + host.numel() * dtype_size(host.dtype()));
  }
  return out;
}

}  // namespace

TEST_CASE("determinism: the same seed gives bit-identical training on the CPU", "[determinism]") {
  CHECK(train_a_little(Device::cpu()) == train_a_little(Device::cpu()));
}

TEST_CASE("determinism: --deterministic gives bit-identical training on the GPU", "[cuda]") {
  if (!minidl::testing::have_gpu()) return;
  DeterministicScope on(true);
  const auto first = train_a_little(Device::cuda(0));
  const auto second = train_a_little(Device::cuda(0));
  REQUIRE(first.size() == second.size());
  for (size_t i = 0; i < first.size(); ++i) {
    INFO("state tensor " << i);
    CHECK(first[i] == second[i]);
  }
  // The scatter-add of nll_loss's backward ran without atomics.
  CHECK(last_kernel("gather.backward", DeviceType::cuda) == "ordered");
}

TEST_CASE("determinism: the atomic scatter-add declines in deterministic mode, and only then", "[cuda]") {
  if (!minidl::testing::have_gpu()) return;
  const Device gpu = Device::cuda(0);
  const Tensor log_probs_cpu = from_vector({-1, -2, -0.5, -3, -0.1, -2.5}, {3, 2});
  const Tensor target_cpu = from_vector({1, 1, 0}, {3}, DType::int64);
  Tensor reference = log_probs_cpu.clone().requires_grad_();
  nll_loss(reference, target_cpu).backward();
  for (bool deterministic : {false, true}) {
    INFO("deterministic " << deterministic);
    DeterministicScope scope(deterministic);
    Tensor lp = log_probs_cpu.to(gpu).requires_grad_();
    nll_loss(lp, target_cpu.to(gpu)).backward();
    CHECK(last_kernel("gather.backward", DeviceType::cuda) == (deterministic ? "ordered" : "direct"));
    CHECK(lp.grad().to_vector<float>() == reference.grad().to_vector<float>());
  }
}
