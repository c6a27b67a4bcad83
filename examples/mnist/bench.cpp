// examples/mnist/bench.cpp — `mnist bench`: time whole training steps of the MNIST CNN on one synthetic
// batch, for the side-by-side comparison with PyTorch (scripts/torch_mnist_bench.py,
// scripts/compare-torch.sh, docs/results/README.md "PyTorch side by side").
//
//   mnist bench [--device auto|cpu|cuda] [--batch 64] [--warmup 20] [--steps 100] [--kernel OP=NAME]...
//               [--seed N] [--json FILE] [--distributed] [--cuda-graph] [--model mnist_cnn|mnist_cnn_bn]
//
// The model is examples/mnist/model.h; the optimizer Adam at `mnist train`'s default (peak) lr 2e-3, held
// constant (no schedule). The batch is made once, on the device: pixels uniform in [0, 1) [N, 1, 28, 28]
// and labels uniform in 0..9. Each step is train_step (examples/mnist/train_step.h), the step `mnist train`
// runs: forward, cross_entropy, zero_grad, backward, Adam step; with --cuda-graph, all of it replayed
// from a CUDA graph (examples/mnist/train_step.h). Timing: examples/bench_steps.h.
// --json FILE writes one JSON object (one line) with the settings and the times. --distributed: each rank
// times its step on batch / world samples, with DataParallel's buckets and all-reduce (bench_steps.h).
// In the report: "batch" the global batch, and "world_size".
#include "examples/mnist/bench.h"

#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/dispatch.h"
#include "core/random.h"
#include "dist/data_parallel.h"
#include "dist/launch.h"
#include "examples/bench_steps.h"
#include "examples/mnist/model.h"
#include "examples/mnist/train_step.h"
#include "examples/run_environment.h"

using namespace minidl;

namespace mnist {

namespace {

struct BenchArgs : bench_steps::BenchFlags {
  BenchArgs() { batch = 64; }
  bool cuda_graph = false;  // --cuda-graph: time the step replayed from a CUDA graph (nn/graphed_step.h)
  std::string model = kModelName;  // --model (examples/mnist/model.h)
};

constexpr double kLearningRate = 2e-3;  // `mnist train --lr` default

// The kernel keys the report names: the model's dense work, its loss and its optimizer.
const std::vector<std::string> kReportedKeys = {"conv2d",       "conv2d.backward_input", "conv2d.backward_weight",
                                                "max_pool2d",   "matmul",                "dropout_mask",
                                                "cross_entropy", "cross_entropy.backward", "adam_step"};

int run_bench(const BenchArgs& a) {
  select_kernels_from_flags(a.kernels);
  set_deterministic_algorithms(a.deterministic);  // before the first GPU op (core/determinism.h)
  examples::apply_precision_flag(a.precision);  // likewise (core/precision.h)
  std::unique_ptr<dist::DistributedRun> job;
  if (a.distributed) job = std::make_unique<dist::DistributedRun>(dist::start_distributed("mnist", a.device, a.batch));
  bench_steps::check_bench_flags(a, job ? job->world_size : 1);
  const Device device = job ? job->device : choose_device(a.device, "mnist");
  MINIDL_CHECK(!a.cuda_graph || device.is_cuda(), "--cuda-graph needs a CUDA device; this run is on ", device.str());
  MINIDL_CHECK(!a.cuda_graph || !job, "--cuda-graph cannot be used with --distributed (DataParallel's all-reduce "
               "runs inside backward)");
  if (!job || job->is_root()) examples::print_run_environment("mnist bench", device, a.kernels);
  manual_seed(a.seed);
  std::shared_ptr<Sequential> model = make_model(a.model);
  model->to(device);  // before building the optimizer (nn/module.h)
  model->train();
  std::unique_ptr<dist::DataParallel> dp;
  if (job)
    dp = std::make_unique<dist::DataParallel>(*model, *job->communicator,
                                              dist::DataParallelOptions::from_environment());
  AdamOptions adam_options;
  adam_options.lr = kLearningRate;
  Adam optimizer(model->parameters(), adam_options);

  // The synthetic batch (this rank's part of it), made once on the device.
  const int64_t B = job ? job->local_batch(a.batch) : a.batch;
  const MemoryFormat memory_format = examples::resolve_memory_format(a.memory_format, device, examples::kMnistGpuFormats);
  const Tensor inputs = model_input(rand({B, 1, 28, 28}, TensorOptions(DType::float32, device)), memory_format);
  std::mt19937_64 rng(a.seed);
  std::uniform_int_distribution<int> digit(0, 9);
  std::vector<double> labels(static_cast<size_t>(B));
  for (double& v : labels) v = digit(rng);
  const Tensor targets = from_vector(labels, {B}, TensorOptions(DType::int64, device));

  std::printf("mnist bench: model %s, %lld parameters; batch %lld of [1, 28, 28]; Adam lr %g; "
              "%d warm-up steps, then %d timed steps twice\n",
              a.model.c_str(), static_cast<long long>(model->parameter_count()), static_cast<long long>(a.batch),
              kLearningRate, a.warmup, a.steps);
  if (dp)
    std::printf("mnist bench: data-parallel, %d rank(s) of %lld samples; %zu gradient buckets\n", job->world_size,
                static_cast<long long>(B), dp->bucket_count());
  std::printf("mnist bench: %s\n", examples::memory_format_text(memory_format, device).c_str());
  std::fflush(stdout);

  std::unique_ptr<GraphedTrainStep> graphed;  // --cuda-graph: captured in the warm-up (its third step)
  if (a.cuda_graph) graphed = std::make_unique<GraphedTrainStep>(*model, optimizer, device);
  Tensor last_loss;
  auto step = [&] {
    if (graphed) {
      last_loss = (*graphed)(inputs, targets).loss;
      return;
    }
    if (dp) dp->begin_step(B, a.batch);
    last_loss = train_step(*model, optimizer, inputs, targets, [&] {
                  if (dp) dp->finish_step();
                }).loss;
  };
  const bench_steps::StepTimes t = bench_steps::time_steps(device, a.warmup, a.steps, step);
  bench_steps::BenchRun run{"mnist bench", "mnist", device, a.batch, a.warmup, t, last_loss.item<double>(),
                            kReportedKeys};
  run.extra = {{"world_size", job ? job->world_size : 0},  // 0: not --distributed
               {"cuda_graph", a.cuda_graph},
               {"mnist_model", a.model},
               {"memory_format", memory_format_name(memory_format)}};
  if (graphed) std::printf("mnist bench: CUDA graphs: %s\n", graphed->describe().c_str());
  if (a.overhead_rounds > 0) {  // DataParallel's hooks see no begin_step in a plain step and do nothing
    auto plain = [&] { last_loss = train_step(*model, optimizer, inputs, targets).loss; };
    const bench_steps::Alternation alt = bench_steps::time_alternating(device, a.steps, a.overhead_rounds, plain, step);
    run.extra.update(bench_steps::report_alternation("mnist bench", alt, a.steps));
  }
  bench_steps::report(run, !job || job->is_root() ? a.json : "");
  return 0;
}

}  // namespace

BenchCommand add_bench_command(CLI::App& parent) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* cmd = parent.add_subcommand(
      "bench", "time training steps of the CNN on one synthetic batch (for comparison with PyTorch)");
  bench_steps::add_bench_flags(cmd, *a, examples::kMnistGpuFormats);
  cmd->add_option("--model", a->model, "mnist_cnn or mnist_cnn_bn (examples/mnist/model.h)")
      ->capture_default_str()
      ->check(CLI::IsMember({kModelName, kFastModelName}));
  cmd->add_flag("--cuda-graph", a->cuda_graph,
                "time the step replayed from a CUDA graph (captured in the warm-up: needs --warmup 3 or more)");
  return {cmd, [a] { return run_bench(*a); }};
}

}  // namespace mnist
