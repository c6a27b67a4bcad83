// tests/test_graphed_step.cpp — CUDA graphs (cuda/graph.h, nn/graphed_step.h): a step captured once and
// replayed trains exactly like the same steps run eagerly.
//
// On every device: GraphedStep over the MNIST CNN (dropout and Adam's update included, with a learning
// rate that changes every step) gives the losses and weights of plain eager steps; on the CPU bit for bit
// (nothing is captured there), on a GPU within float tolerance, with deterministic algorithms. On a GPU only ([cuda], skipped without one): the allocator's private pools,
// the dropout masks of replays (each replay draws what the next eager call would), a capture that reads
// back to the host fails with a message and leaves the device usable, and mnist's GraphedTrainStep.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "core/random.h"
#include "examples/mnist/model.h"
#include "examples/mnist/train_step.h"
#include "nn/graphed_step.h"
#include "nn/optim.h"
#include "ops/ops.h"
#include "tests/test_util.h"

#ifdef MINIDL_WITH_CUDA
#include "cuda/allocator.h"
#include "cuda/graph.h"
#endif

using namespace minidl;
using minidl::testing::compare;
using minidl::testing::DeterministicScope;
using minidl::testing::have_gpu;
using minidl::testing::test_devices;

namespace {

constexpr int64_t kBatch = 8;

// `steps` batches of MNIST-shaped inputs and labels, on the CPU, from their own generator (not the global
// random stream, whose position the dropout masks depend on).
struct Batches {
  std::vector<Tensor> inputs, targets;
};
Batches make_batches(int steps) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> pixel(-1, 2);
  std::uniform_int_distribution<int> digit(0, 9);
  Batches b;
  for (int s = 0; s < steps; ++s) {
    std::vector<double> x(kBatch * 28 * 28), y(kBatch);
    for (double& v : x) v = pixel(rng);
    for (double& v : y) v = digit(rng);
    b.inputs.push_back(from_vector(x, {kBatch, 1, 28, 28}));
    b.targets.push_back(from_vector(y, {kBatch}, TensorOptions(DType::int64, Device::cpu())));
  }
  return b;
}

struct Trained {
  std::vector<double> losses;
  std::vector<Tensor> weights;  // on the CPU
  bool captured = false;
};

// The MNIST CNN trained for the batches' steps from seed 3 with Adam: eagerly, or through a GraphedStep.
Trained train(Device device, const Batches& batches, bool graphed) {
  manual_seed(3);
  std::shared_ptr<Sequential> model = mnist::make_model();
  model->to(device);
  model->train();
  AdamOptions options;
  options.lr = 2e-3;
  Adam optimizer(model->parameters(), options);
  const Tensor x = empty({kBatch, 1, 28, 28}, TensorOptions(DType::float32, device));
  const Tensor y = empty({kBatch}, TensorOptions(DType::int64, device));
  GraphedStep step(
      device, model->parameters(),
      [&] {
        const Tensor loss = cross_entropy((*model)(x), y);
        loss.backward();
        return std::vector<Tensor>{loss};
      },
      2, &optimizer);
  Trained out;
  for (size_t s = 0; s < batches.inputs.size(); ++s) {
    copy_(x, batches.inputs[s]);
    copy_(y, batches.targets[s]);
    Tensor loss;
    if (graphed) {
      loss = step.run()[0];  // the optimizer's step included
    } else {
      optimizer.zero_grad();
      loss = cross_entropy((*model)(x), y);
      loss.backward();
      optimizer.step();
    }
    // A schedule: the replays must pick up each step's learning rate (the optimizer's device scalars).
    optimizer.set_lr(optimizer.lr() * 0.8);
    out.losses.push_back(loss.item<double>());
  }
  for (const Tensor& p : model->parameters()) out.weights.push_back(p.detach().to(Device::cpu()));
  out.captured = step.captured();
  return out;
}

}  // namespace

TEST_CASE("graphed step: the MNIST CNN trains as with eager steps (bit for bit on the CPU)", "[graph][nn]") {
  const DeterministicScope deterministic(true);
  const Batches batches = make_batches(6);  // 2 eager warm-up steps, the capture, 3 more replays
  for (Device d : test_devices()) {
    INFO("device " << d.str());
    const Trained eager = train(d, batches, false);
    const Trained graphed = train(d, batches, true);
    CHECK(graphed.captured == d.is_cuda());
    REQUIRE(graphed.losses.size() == eager.losses.size());
    for (size_t s = 0; s < eager.losses.size(); ++s) {
      INFO("step " << s + 1 << ": eager loss " << eager.losses[s] << ", graphed " << graphed.losses[s]);
      if (d.is_cuda())
        CHECK(graphed.losses[s] == Approx(eager.losses[s]).epsilon(1e-4));
      else
        CHECK(graphed.losses[s] == eager.losses[s]);
    }
    // The weights moved (the loss changed) and ended where the eager run's did.
    CHECK(eager.losses.front() != eager.losses.back());
    for (size_t i = 0; i < eager.weights.size(); ++i) {
      INFO("parameter " << i);
      if (d.is_cuda())
        CHECK(compare(graphed.weights[i], eager.weights[i], 1e-3, 1e-5) == "");
      else
        CHECK(compare(graphed.weights[i], eager.weights[i], 0, 0) == "");
    }
  }
}

TEST_CASE("graphed step: bad arguments are refused", "[graph][nn]") {
  const Tensor w = zeros({2}, TensorOptions(DType::float32, Device::cpu()).with_requires_grad());
  CHECK_THROWS_WITH(GraphedStep(Device::cpu(), {w}, [] { return std::vector<Tensor>{}; }, -1),
                    Catch::Contains("warmup must be >= 0"));
  CHECK_THROWS_WITH(GraphedStep(Device::cpu(), {w}, nullptr), Catch::Contains("no step function"));
  Linear layer(2, 2);
  Adam optimizer(layer.parameters(), AdamOptions{});
  CHECK_THROWS_WITH(mnist::GraphedTrainStep(layer, optimizer, Device::cpu()),
                    Catch::Contains("--cuda-graph needs a CUDA device"));
}

#ifdef MINIDL_WITH_CUDA

namespace {

const Device kGpu = Device::cuda(0);

// float32 elements of a size no other test allocates (11 MiB + 1 KiB, rounded to a 12 MiB block), so that
// after cuda_empty_cache() the only cached blocks of that size are the ones a test made.
constexpr int64_t kOddElements = (11 << 20) / 4 + 256;

}  // namespace

TEST_CASE("cuda allocator: a private pool keeps its blocks, including ones freed while it is active, until "
          "released",
          "[cuda][graph]") {
  if (!have_gpu()) return;
  cuda_empty_cache();
  Tensor before = empty({kOddElements}, kGpu);
  void* const allocated_before = before.raw_data();
  const int pool = cuda_begin_private_pool(0);
  CHECK_THROWS_WITH(cuda_begin_private_pool(0), Catch::Contains("already active"));
  void* in_pool = nullptr;
  {
    Tensor t = empty({kOddElements}, kGpu);  // a new block, the pool's
    in_pool = t.raw_data();
  }
  before = Tensor();  // allocated before the pool, freed while it is active: joins the pool
  cuda_end_private_pool(0);
  {
    // Outside the pool: neither block is handed out, although both are free and of the right size.
    const CudaMemoryStats s0 = cuda_memory_stats(0);
    Tensor u = empty({kOddElements}, kGpu);
    CHECK(u.raw_data() != in_pool);
    CHECK(u.raw_data() != allocated_before);
    CHECK(cuda_memory_stats(0).malloc_calls == s0.malloc_calls + 1);
  }
  cuda_release_private_pool(0, pool);
  // Released: the two blocks are in the shared cache, with the one just freed.
  const CudaMemoryStats s1 = cuda_memory_stats(0);
  std::vector<Tensor> three;
  std::vector<void*> got;
  for (int i = 0; i < 3; ++i) {
    three.push_back(empty({kOddElements}, kGpu));
    got.push_back(three.back().raw_data());
  }
  CHECK(cuda_memory_stats(0).malloc_calls == s1.malloc_calls);
  CHECK(std::count(got.begin(), got.end(), in_pool) == 1);
  CHECK(std::count(got.begin(), got.end(), allocated_before) == 1);
}

TEST_CASE("cuda graph: each replay draws the dropout mask the next eager call would", "[cuda][graph]") {
  if (!have_gpu()) return;
  const Tensor x = ones({5000}, TensorOptions(DType::float32, kGpu));
  manual_seed(9);
  std::vector<std::vector<float>> eager;
  for (int k = 0; k < 3; ++k) eager.push_back(dropout(x, 0.5, true).to_vector<float>());
  const uint64_t offset_after_eager = current_random_offset();

  manual_seed(9);
  Tensor out;
  cuda::CapturedGraph graph(0, [&] { out = dropout(x, 0.5, true); });
  CHECK(graph.random_draws() == 5000);
  CHECK(current_random_offset() == 0);  // nothing ran: the host's stream is where it was
  CHECK(graph.node_count() >= 2);       // the mask kernel and the multiplication
  for (int k = 0; k < 3; ++k) {
    graph.replay();
    INFO("replay " << k);
    CHECK(out.to_vector<float>() == eager[static_cast<size_t>(k)]);
  }
  CHECK(current_random_offset() == offset_after_eager);
  // An eager call after the replays draws what the fourth eager call would have.
  const std::vector<float> fourth = dropout(x, 0.5, true).to_vector<float>();
  manual_seed(9);
  for (int k = 0; k < 3; ++k) dropout(x, 0.5, true);
  CHECK(dropout(x, 0.5, true).to_vector<float>() == fourth);
}

TEST_CASE("cuda graph: a capture that reads back to the host fails with a message; the device carries on",
          "[cuda][graph]") {
  if (!have_gpu()) return;
  const Tensor x = ones({100}, TensorOptions(DType::float32, kGpu));
  manual_seed(4);
  const uint64_t offset = current_random_offset();
  CHECK_THROWS_WITH(cuda::CapturedGraph(0,
                                        [&] {
                                          dropout(x, 0.5, true);
                                          (void)sum(x).item<double>();
                                        }),
                    Catch::Contains("CUDA graph capture failed") && Catch::Contains("read results back"));
  CHECK(current_random_offset() == offset);  // the failed capture drew nothing
  CHECK(sum(x).item<double>() == 100);
  // And a capture works again afterwards (the private pool of the failed one was released).
  Tensor y;
  cuda::CapturedGraph graph(0, [&] { y = mul_scalar(x, 3.0); });
  graph.replay();
  CHECK(sum(y).item<double>() == 300);
}

TEST_CASE("mnist GraphedTrainStep: one graph per batch size, the same losses as train_step", "[cuda][graph]") {
  if (!have_gpu()) return;
  const DeterministicScope deterministic(true);
  const Batches batches = make_batches(5);
  auto run = [&](bool graphed) {
    manual_seed(5);
    std::shared_ptr<Sequential> model = mnist::make_model();
    model->to(kGpu);
    model->train();
    Adam optimizer(model->parameters(), AdamOptions{});
    std::unique_ptr<mnist::GraphedTrainStep> step;
    if (graphed) step = std::make_unique<mnist::GraphedTrainStep>(*model, optimizer, kGpu);
    std::vector<double> losses;
    // Batches of 8, then the same batches cut to 5 samples: two shapes, two graphs.
    for (int64_t n : {kBatch, int64_t(5)})
      for (size_t s = 0; s < batches.inputs.size(); ++s) {
        const Tensor x = batches.inputs[s].slice(0, 0, n).contiguous().to(kGpu);
        const Tensor y = batches.targets[s].slice(0, 0, n).contiguous().to(kGpu);
        losses.push_back((step ? (*step)(x, y) : mnist::train_step(*model, optimizer, x, y)).loss.item<double>());
      }
    if (step) CHECK(step->describe().find("batch 5: ") != std::string::npos);
    if (step) CHECK(step->describe().find("batch 8: ") != std::string::npos);
    return losses;
  };
  const std::vector<double> eager = run(false), graphed = run(true);
  REQUIRE(eager.size() == graphed.size());
  for (size_t s = 0; s < eager.size(); ++s) {
    INFO("step " << s + 1);
    CHECK(graphed[s] == Approx(eager[s]).epsilon(1e-4));
  }
}

#endif  // MINIDL_WITH_CUDA
