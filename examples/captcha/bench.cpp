// examples/captcha/bench.cpp — `captcha bench`: time whole training steps of the default captcha model on
// one synthetic batch, for the side-by-side comparison with PyTorch (scripts/torch_captcha_bench.py,
// scripts/compare-torch.sh, docs/results/README.md "PyTorch side by side").
//
//   captcha bench [--device auto|cpu|cuda] [--batch 128] [--warmup 20] [--steps 100] [--rnn gru|lstm]
//                 [--gru auto|fused|composed|sequence] [--kernel OP=NAME]... [--seed N] [--json FILE]
//                 [--deterministic] [--distributed] [--cuda-graph]
//
// The model is examples/captcha/model.h with its default configuration (192x64 input, 36 characters + the
// blank), with a GRU or (--rnn lstm) an LSTM. The batch is made once, on the device: pixels uniform in [0, 1) [N, 3, 64, 192], 4 random
// characters per image (classes 1..36), input lengths 12 (every time step), target lengths 4; the labels and
// lengths stay on the CPU, as `captcha train` passes them (on the device, ctc_loss would read them back
// to check them: a wait for the forward in every step). Each step is train_step (common.h), the step
// `captcha train` runs: forward, ctc_loss, zero_grad, backward, Adam (lr 1e-3) step; with --cuda-graph,
// all of it replayed from a CUDA graph (examples/captcha/train_step.h). No data loading, no learning-rate
// schedule. Timing: examples/bench_steps.h.
// --json FILE writes one JSON object (one line) with the settings and the times. --distributed: each rank
// times its step on batch / world samples, with DataParallel's buckets and all-reduce (bench_steps.h).
// In the report: "batch" the global batch, and "world_size".
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/random.h"
#include "dist/data_parallel.h"
#include "dist/launch.h"
#include "examples/bench_steps.h"
#include "examples/captcha/common.h"
#include "examples/captcha/train_step.h"
#include "examples/run_environment.h"

using namespace minidl;

namespace captcha {

namespace {

struct BenchArgs : bench_steps::BenchFlags {
  BenchArgs() { batch = 128; }
  std::string rnn = "gru", gru = "auto";
  bool cuda_graph = false;  // --cuda-graph: time the step replayed from a CUDA graph (train_step.h)
  std::string activations;  // --activations: "" (the default), fp32 or bf16 (examples/flags.h)
};

constexpr int kLabelLength = 4;

// The kernel keys the report names: the dense work of the model, its loss and its optimizer.
const std::vector<std::string> kReportedKeys = {
    "conv2d", "conv2d.backward_input", "conv2d.backward_weight", "batch_norm", "batch_norm.backward",
    "max_pool2d", "matmul", "gru_cell", "gru_cell.backward", "gru_sequence", "gru_sequence.backward",
    "lstm_cell", "lstm_cell.backward", "lstm_sequence", "lstm_sequence.backward", "ctc_loss", "ctc_loss.backward", "adam_step"};

int run_bench(const BenchArgs& a) {
  select_kernels_from_flags(a.kernels);
  set_deterministic_algorithms(a.deterministic);  // before the first GPU op (core/determinism.h)
  examples::apply_precision_flag(a.precision);  // likewise (core/precision.h)
  std::unique_ptr<dist::DistributedRun> job;
  if (a.distributed)
    job = std::make_unique<dist::DistributedRun>(dist::start_distributed("captcha", a.device, a.batch));
  bench_steps::check_bench_flags(a, job ? job->world_size : 1);
  const Device device = job ? job->device : choose_device(a.device);
  MINIDL_CHECK(!a.cuda_graph || device.is_cuda(), "--cuda-graph needs a CUDA device; this run is on ", device.str());
  MINIDL_CHECK(!a.cuda_graph || !job, "--cuda-graph cannot be used with --distributed (DataParallel's all-reduce "
               "runs inside backward)");
  if (!job || job->is_root()) examples::print_run_environment("captcha bench", device, a.kernels);
  ModelConfig config;
  config.rnn = parse_rnn_kind(a.rnn);
  config.gru_path = parse_gru_path(a.gru);
  manual_seed(a.seed);
  auto model = std::make_shared<CaptchaModel>(config);
  model->to(device);  // before building the optimizer (nn/module.h)
  model->memory_format = examples::resolve_memory_format(a.memory_format, device, examples::kCaptchaGpuFormats);
  model->activation_dtype = examples::resolve_activations(a.activations);
  model->train();
  std::unique_ptr<dist::DataParallel> dp;
  if (job)
    dp = std::make_unique<dist::DataParallel>(*model, *job->communicator,
                                              dist::DataParallelOptions::from_environment());
  AdamOptions adam_options;
  adam_options.lr = 1e-3;
  Adam optimizer(model->parameters(), adam_options);

  // The synthetic batch (this rank's part of it), made once on the device.
  const int64_t B = job ? job->local_batch(a.batch) : a.batch, T = config.time_steps();
  const Tensor inputs = rand({B, 3, config.height, config.width}, TensorOptions(DType::float32, device));
  std::mt19937_64 rng(a.seed);
  std::uniform_int_distribution<int> character(1, static_cast<int>(config.classes) - 1);
  std::vector<double> labels(static_cast<size_t>(B * kLabelLength));
  for (double& v : labels) v = character(rng);
  const TensorOptions on_cpu(DType::int64, Device::cpu());
  const Tensor targets = from_vector(labels, {B, kLabelLength}, on_cpu);
  const Tensor input_lengths = full({B}, static_cast<double>(T), on_cpu);
  const Tensor target_lengths = full({B}, kLabelLength, on_cpu);

  std::printf("captcha bench: model %s, %lld parameters, %s %s; batch %lld of [3, %d, %d], %lld time steps, "
              "%d characters; Adam lr 1e-3; %d warm-up steps, then %d timed steps twice\n",
              kModelName, static_cast<long long>(model->parameter_count()), model->rnn->type_name().c_str(),
              rnn_path_shown(config, device).c_str(),
              static_cast<long long>(a.batch), config.height, config.width, static_cast<long long>(T), kLabelLength,
              a.warmup, a.steps);
  if (dp)
    std::printf("captcha bench: data-parallel, %d rank(s) of %lld samples; %zu gradient buckets\n",
                job->world_size, static_cast<long long>(B), dp->bucket_count());
  std::printf("captcha bench: %s, %s\n", examples::memory_format_text(model->memory_format, device).c_str(),
              examples::activations_text(model->activation_dtype, device).c_str());
  std::fflush(stdout);

  std::unique_ptr<GraphedTrainStep> graphed;  // --cuda-graph: captured in the warm-up (its third step)
  if (a.cuda_graph) graphed = std::make_unique<GraphedTrainStep>(*model, optimizer, device);
  Tensor last_loss;
  auto step = [&] {
    if (graphed) {
      last_loss = (*graphed)(inputs, targets, input_lengths, target_lengths).loss;
      return;
    }
    if (dp) dp->begin_step(B, a.batch);
    last_loss = train_step(*model, optimizer, inputs, targets, input_lengths, target_lengths, [&] {
                  if (dp) dp->finish_step();
                }).loss;
  };
  const bench_steps::StepTimes t = bench_steps::time_steps(device, a.warmup, a.steps, step);
  bench_steps::BenchRun run{"captcha bench", "captcha", device, a.batch, a.warmup, t, last_loss.item<double>(),
                            kReportedKeys};
  run.extra = {{"rnn", rnn_kind_name(config.rnn)},
               {"gru", rnn_path_shown(config, device)},
               {"world_size", job ? job->world_size : 0},
               {"cuda_graph", a.cuda_graph},
               {"memory_format", memory_format_name(model->memory_format)},
               {"activations", model->activation_dtype == DType::bfloat16 ? "bf16" : "fp32"}};
  if (graphed) std::printf("captcha bench: CUDA graphs: %s\n", graphed->describe().c_str());
  if (a.overhead_rounds > 0) {  // DataParallel's hooks see no begin_step in a plain step and do nothing
    auto plain = [&] {
      last_loss = train_step(*model, optimizer, inputs, targets, input_lengths, target_lengths).loss;
    };
    const bench_steps::Alternation alt = bench_steps::time_alternating(device, a.steps, a.overhead_rounds, plain, step);
    run.extra.update(bench_steps::report_alternation("captcha bench", alt, a.steps));
  }
  bench_steps::report(run, !job || job->is_root() ? a.json : "");
  return 0;
}

}  // namespace

Command add_bench_command(CLI::App& parent) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* cmd = parent.add_subcommand(
      "bench", "time training steps of the default model on one synthetic batch (for comparison with PyTorch)");
  bench_steps::add_bench_flags(cmd, *a, examples::kCaptchaGpuFormats);
  cmd->add_option("--rnn", a->rnn, "recurrent layer: gru or lstm")
      ->capture_default_str()
      ->check(CLI::IsMember({"gru", "lstm"}));
  cmd->add_option("--gru", a->gru, "recurrent layer's implementation: fused (cell op per step), composed (elementwise ops), sequence (one sequence op) or auto (sequence on a GPU, fused on the CPU)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "fused", "composed", "sequence"}));
  cmd->add_flag("--cuda-graph", a->cuda_graph,
                "time the step replayed from a CUDA graph (captured in the warm-up: needs --warmup 3 or more)");
  examples::add_activations_flag(cmd, a->activations);
  return {cmd, [a] { return run_bench(*a); }};
}

}  // namespace captcha
