// examples/bench_steps.h — timing whole training steps, for `captcha bench` and `mnist bench`.
//
// The method, the same as scripts/torch_captcha_bench.py and scripts/torch_mnist_bench.py use, so the two
// sides can be put next to each other:
//   1. `warmup` steps (kernel selection, cuDNN algorithm search and the caching allocator settle), then
//      wait for the device.
//   2. Throughput: `steps` steps back to back and one wait for the device at the end; mean = elapsed /
//      steps. The host queues work while the GPU runs, as in training.
//   3. Latency: `steps` more steps, each followed by a wait for the device; the median of those times.
//      A wait per step lets the GPU idle while the host queues the next step, so this is >= the mean.
// Time is host wall-clock time (std::chrono::steady_clock) around device synchronisations.
// --distributed (with mpirun, or alone for one rank): each step is one rank's step of data-parallel training
// (dist/data_parallel.h) on its part of the --batch; with one rank this measures what the gradient buckets
// and the all-reduce cost (docs/distributed.md, "Overhead").
// --overhead-rounds N (with --distributed, one rank): afterwards, in the same process, N rounds of `steps`
// plain steps (DataParallel left out of the step) then `steps` data-parallel steps, each block timed like
// the throughput pass; the report gives the medians of the block means and their ratio. Separate processes
// differ by more than the 3% the issue allows (the host's speed from one minute to the next, and cuDNN's
// timed algorithm choice, made afresh in every process); blocks alternating inside one process share both.
#pragma once
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/determinism.h"
#include "core/dispatch.h"
#include "core/precision.h"
#include "examples/flags.h"
#include "examples/run_environment.h"
#include "nn/metrics.h"

// The caching allocator's statistics and the BF16 path choices exist only in CUDA builds; the
// conditional stays in this header.
#ifdef MINIDL_WITH_CUDA
#include "cuda/allocator.h"
#include "cuda/bf16_choice.h"
#endif

namespace bench_steps {

struct StepTimes {
  double mean_ms = 0;    // throughput pass: elapsed / steps, one synchronisation at the end
  double median_ms = 0;  // latency pass: median of per-step times, each step synchronised
  double min_ms = 0;     // latency pass: the fastest step
  int steps = 0;
};

inline double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

// The median of v (the mean of the two middle values for an even count); 0 for none.
inline double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

// Runs step() warmup + 2 * steps times on `device` and times it as described above.
inline StepTimes time_steps(minidl::Device device, int warmup, int steps, const std::function<void()>& step) {
  minidl::DeviceBackend& backend = minidl::backend_for(device.type);
  for (int i = 0; i < warmup; ++i) step();
  backend.synchronize(device.index);
  // MINIDL_PROFILE: the table at exit shows the timed steps only, not the warm-up's algorithm searches.
  minidl::KernelRegistry::instance().clear_profile();

  StepTimes t;
  t.steps = steps;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  backend.synchronize(device.index);
  t.mean_ms = elapsed_ms(start) / steps;

  std::vector<double> each;
  for (int i = 0; i < steps; ++i) {
    start = std::chrono::steady_clock::now();
    step();
    backend.synchronize(device.index);
    each.push_back(elapsed_ms(start));
  }
  t.median_ms = median_of(each);
  t.min_ms = *std::min_element(each.begin(), each.end());
  return t;
}

// --overhead-rounds: block means of plain and data-parallel steps, alternated in one process.
struct Alternation {
  std::vector<double> plain_ms, parallel_ms;  // one mean per block of `steps` steps
  double plain_median_ms = 0, parallel_median_ms = 0;
  double overhead() const { return parallel_median_ms / plain_median_ms - 1.0; }
};

// `rounds` rounds of: `steps` plain steps, then `steps` data-parallel steps, each block followed by one
// wait for the device and timed as a whole. A first round is run untimed (each kind's first steps after
// a switch allocate differently: gradients in their own tensors, or views of the buckets).
inline Alternation time_alternating(minidl::Device device, int steps, int rounds, const std::function<void()>& plain,
                                    const std::function<void()>& parallel) {
  minidl::DeviceBackend& backend = minidl::backend_for(device.type);
  auto block = [&](const std::function<void()>& step) {
    backend.synchronize(device.index);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) step();
    backend.synchronize(device.index);
    return elapsed_ms(start) / steps;
  };
  block(plain);
  block(parallel);
  Alternation a;
  for (int r = 0; r < rounds; ++r) {
    a.plain_ms.push_back(block(plain));
    a.parallel_ms.push_back(block(parallel));
  }
  a.plain_median_ms = median_of(a.plain_ms);
  a.parallel_median_ms = median_of(a.parallel_ms);
  return a;
}

// Prints the alternation and returns its JSON fields (for BenchRun::extra).
inline nlohmann::json report_alternation(const char* program, const Alternation& a, int steps) {
  std::printf("%s: plain and data-parallel steps alternated in this process, %zu rounds of %d steps each: "
              "plain %.4f ms/step, data-parallel %.4f ms/step (medians of the block means): overhead %+.2f%%\n",
              program, a.plain_ms.size(), steps, a.plain_median_ms, a.parallel_median_ms, 100.0 * a.overhead());
  return {{"overhead_rounds", a.plain_ms.size()},
          {"plain_block_ms", a.plain_ms},
          {"parallel_block_ms", a.parallel_ms},
          {"plain_median_ms", a.plain_median_ms},
          {"parallel_median_ms", a.parallel_median_ms},
          {"overhead", a.overhead()}};
}

// The kernel that served the last call of each key on the device: {"conv2d": "cudnn", ...}; keys that
// never ran there are left out.
inline nlohmann::json kernels_used(minidl::DeviceType device, const std::vector<std::string>& keys) {
  nlohmann::json out = nlohmann::json::object();
  for (const std::string& key : keys) {
    const std::string name = minidl::last_kernel(key, device);
    if (!name.empty()) out[key] = name;
  }
  return out;
}

// "conv2d=cudnn matmul=cublas ..." for the printed report.
inline std::string kernels_line(const nlohmann::json& kernels) {
  std::string line;
  for (auto it = kernels.begin(); it != kernels.end(); ++it)
    line += (line.empty() ? "" : " ") + it.key() + "=" + it.value().get<std::string>();
  return line;
}

// Whether TF32 tensor cores may serve float32 products (core/precision.h: --precision tf32 or
// MINIDL_TF32=1; the CPU kernels are always exact FP32).
inline bool tf32_requested() { return minidl::float32_precision() == minidl::Precision::tf32; }

// The caching allocator's peak bytes in use on a GPU since the program started; -1 when there is none
// (the CPU, or a build without CUDA).
inline double peak_memory_bytes(minidl::Device device) {
#ifdef MINIDL_WITH_CUDA
  if (device.is_cuda()) return static_cast<double>(minidl::cuda_memory_stats(device.index).peak_in_use);
#endif
  (void)device;
  return -1;
}

// The flags `captcha bench` and `mnist bench` share; only the batch size's default differs.
struct BenchFlags {
  std::string device = "auto", json;
  int64_t batch = 0;
  int warmup = 20, steps = 100;
  uint64_t seed = 1;
  bool deterministic = false;
  std::vector<std::string> kernels;
  bool distributed = false;
  int overhead_rounds = 0;
  std::string precision;  // --precision: "" (the environment decides), fp32 or tf32
  std::string memory_format;  // --memory-format: "" (the device's default), nchw or nhwc (examples/flags.h)
};

// Adds --device, --batch, --warmup, --steps, --kernel, --seed, --json, --deterministic, --distributed,
// --overhead-rounds, --precision and --memory-format to `cmd`, bound to `f`.
// `formats`: the program's --memory-format default on a GPU (examples/flags.h).
inline void add_bench_flags(CLI::App* cmd, BenchFlags& f, examples::GpuFormatDefault formats) {
  using examples::number_in;
  using examples::FlagRange;
  cmd->add_option("--device", f.device, "auto, cpu or cuda[:N]")->capture_default_str();
  cmd->add_option("--batch", f.batch, "batch size")->capture_default_str()->check(number_in(FlagRange::whole<int>(1)));
  cmd->add_option("--warmup", f.warmup, "untimed steps first")->capture_default_str()
      ->check(number_in(FlagRange::whole<int>(0)));
  cmd->add_option("--steps", f.steps, "timed steps (per pass; there are two)")
      ->capture_default_str()
      ->check(number_in(FlagRange::whole<int>(1)));
  cmd->add_option("--kernel", f.kernels, "select a kernel, OP=NAME (repeatable; see `minidl kernels`)");
  cmd->add_option("--seed", f.seed, "seed of initialisation, dropout and the batch")->capture_default_str()
      ->check(number_in(FlagRange::whole<uint64_t>(0)));
  cmd->add_option("--json", f.json,
                  "write the settings and times as one JSON object to FILE (replacing a file of such lines; any "
                  "other file is refused)")
      ->check(examples::non_empty());
  cmd->add_flag("--deterministic", f.deterministic,
                "only deterministic algorithms on a GPU, as `train --deterministic` (to measure what it costs)");
  cmd->add_flag("--distributed", f.distributed,
                "time one rank's data-parallel step (mpirun -np N ...; --batch is the global batch)");
  cmd->add_option("--overhead-rounds", f.overhead_rounds,
                  "with --distributed on one rank: then alternate N blocks of plain and data-parallel steps in this "
                  "process and report the overhead")
      ->check(number_in(FlagRange::whole<int>(1, 1000)));
  examples::add_precision_flag(cmd, f.precision);
  examples::add_memory_format_flag(cmd, f.memory_format, formats);
}

// The checks of --json and --overhead-rounds, before any work. --json: nothing, or a file of JSON lines
// (nn/metrics.h: a checkpoint given by mistake is refused, not truncated after the timing). --overhead-
// rounds needs --distributed, and one rank (a plain step on one rank's part of the batch is nothing
// another rank could be compared with).
inline void check_bench_flags(const BenchFlags& f, int world_size) {
  if (!f.json.empty()) minidl::check_metrics_log(f.json, "--json");
  if (f.overhead_rounds == 0) return;
  MINIDL_CHECK(f.distributed, "--overhead-rounds needs --distributed (it compares plain and data-parallel steps)");
  MINIDL_CHECK(world_size == 1, "--overhead-rounds compares steps on one rank; this job has ", world_size,
               " (run it without mpirun, or with -np 1)");
}

// What one bench run measured, for report().
struct BenchRun {
  std::string program, model;            // "captcha bench", "captcha"
  minidl::Device device;
  int64_t batch = 0;
  int warmup = 0;
  StepTimes times;
  double last_loss = 0;
  std::vector<std::string> reported_keys;  // kernel keys whose serving kernel the report names
  nlohmann::json extra = nlohmann::json::object();  // model-specific settings, e.g. {"gru": "auto: sequence"}
};

// Prints the report (device, precision, kernels, peak memory, loss, times) and, when json_path is not
// empty, writes the same as one JSON line (the format scripts/compare-torch.sh reads).
inline void report(const BenchRun& r, const std::string& json_path) {
  const nlohmann::json kernels = kernels_used(r.device.type, r.reported_keys);
  const double peak = peak_memory_bytes(r.device);
  const StepTimes& t = r.times;
  const double images_per_second = 1000.0 * static_cast<double>(r.batch) / t.mean_ms;
  std::printf("device %s, batch %lld, %s%s\n", r.device.str().c_str(), static_cast<long long>(r.batch),
              examples::precision_text(r.device).c_str(),
              minidl::deterministic_algorithms() ? ", deterministic algorithms" : "");
  std::printf("kernels: %s\n", kernels_line(kernels).c_str());
#ifdef MINIDL_WITH_CUDA
  // Under --precision bf16, which calls took the BF16 path and which TF32 (cuda/bf16_choice.h).
  if (r.device.is_cuda() && minidl::float32_precision() == minidl::Precision::bf16)
    for (const std::string& line : minidl::cuda::bf16_choices()) std::printf("bf16 or tf32: %s\n", line.c_str());
#endif
  if (peak >= 0) std::printf("peak GPU memory in use: %.1f MiB\n", peak / (1024.0 * 1024.0));
  std::printf("last loss %.4f\n", r.last_loss);
  std::printf("%.3f ms/step mean over %d steps (one sync at the end), %.0f images/s; "
              "%.3f ms/step median, %.3f min (a sync after each step)\n",
              t.mean_ms, t.steps, images_per_second, t.median_ms, t.min_ms);
  if (json_path.empty()) return;
  nlohmann::json line = {{"framework", "minidl"},
                         {"model", r.model},
                         {"device", r.device.str()},
                         {"batch", r.batch},
                         {"warmup", r.warmup},
                         {"steps", t.steps},
                         {"tf32", r.device.is_cuda() && tf32_requested()},
                         {"precision", r.device.is_cuda() ? minidl::precision_name(minidl::float32_precision()) : "fp32"},
                         {"deterministic", minidl::deterministic_algorithms()},
                         {"mean_ms", t.mean_ms},
                         {"median_ms", t.median_ms},
                         {"min_ms", t.min_ms},
                         {"images_per_second", images_per_second},
                         {"peak_memory_bytes", peak >= 0 ? nlohmann::json(peak) : nlohmann::json()},
                         {"last_loss", r.last_loss},
                         {"kernels", kernels}};
  line.update(r.extra);
  minidl::MetricsWriter(json_path, /*append=*/false, "--json").write(line);
  std::printf("%s: wrote %s\n", r.program.c_str(), json_path.c_str());
}

}  // namespace bench_steps
