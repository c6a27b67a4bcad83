// tools/compare.h — `minidl compare`: the same model, trained with the same seed on the GPU and on the
// CPU, side by side.
//
//   minidl compare [--example mnist|captcha] [--data DIR] [--epochs N] [--cpu-limit N] [--seed N]
//                  [--out DIR] [-- FLAGS...]
//
// It runs the real programs (`mnist train`, `captcha train`, found next to the minidl executable) as child
// processes, one after the other, with the same flags but --device (cuda, then cpu) and --cpu-limit, each
// writing --metrics into --out; their output is shown as it comes, prefixed "[gpu] " and "[cpu] ", and
// kept in --out/gpu.log and cpu.log. Ctrl-C stops the run in progress and starts no other.
//
// The GPU goes first: its result comes in seconds, and a GPU that fails (driver, memory) fails before
// the long CPU run rather than after it. Without a usable GPU, compare says why (why_no_gpu(),
// core/backend.h) and runs the CPU side only.
//
// --cpu-limit N trains the CPU on the first N images of each epoch (mnist --limit N; captcha
// --epoch-size N, generated captchas only): the speed-up is per image, from images/s, so it stays a fair
// number, but the CPU's loss and accuracy then come from less training and the table says so.
//
// In --out: table.md (the table printed at the end), gpu.jsonl and cpu.jsonl (each run's --metrics),
// gpu.log and cpu.log (each run's output), curves.svg (both runs' loss and accuracy against the time since
// each run started, tools/plot.h).
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tools/metrics_log.h"

namespace minidl {

struct CompareOptions {
  std::string example = "mnist";
  std::string data;                 // --data for both programs ("" : each finds its own)
  int epochs = 0;                   // 0: the program's default (mnist 3, captcha 20)
  int64_t cpu_limit = 0;            // 0: the CPU trains on as many images as the GPU
  uint64_t seed = 1;
  std::string out = "runs/compare";
  std::vector<std::string> extra;   // more flags for both runs (`minidl compare ... -- --batch 128`)
  std::string program_dir;          // where the programs are; "" : the folder of this executable
};

// One run, from its --metrics file.
struct RunSummary {
  std::string device;                      // "cuda:0", "cpu" (the records' "device")
  int epochs = 0;
  double images = 0;                       // training images, all epochs
  double train_seconds = 0, seconds = 0;   // all epochs: training only; with evaluation
  double images_per_second = 0;            // images / train_seconds
  double images_per_second_after_first = -1;  // the same over epochs 2..N; -1 for a run of one epoch
  // The last epoch's values, -1 when the program does not write them.
  double train_loss = -1, train_accuracy = -1, heldout_loss = -1, heldout_accuracy = -1;
  std::string heldout;                     // "test" (mnist) or "validation" (captcha)

  double images_per_epoch() const { return epochs ? images / epochs : 0; }
};
RunSummary summarize_run(const MetricsLog& log);

// What the table shows: the GPU run (absent without a GPU, with the reason) and the CPU run.
struct Comparison {
  std::string example;
  bool has_gpu = false;
  std::string no_gpu_reason;
  std::string gpu_name, cpu_name;  // column titles: "GPU cuda:0 (NVIDIA H200)", "CPU, 16 threads (...)"
  RunSummary gpu, cpu;
  std::string gpu_command, cpu_command;
  int64_t cpu_limit = 0;

  // Whether --cpu-limit made the CPU's epochs smaller than the GPU's (without a GPU run: whether it was given).
  bool cpu_limited() const {
    return cpu_limit > 0 && (!has_gpu || cpu.images_per_epoch() < gpu.images_per_epoch());
  }
};

// The side-by-side table and its notes, in Markdown (printed as is, and written to table.md).
std::string comparison_table(const Comparison& c);

// Throws an Error for options that contradict each other or the flags after `--` (a flag compare sets
// itself): usage errors, which `minidl compare` reports with exit status 2, as CLI11's own.
void check_compare_options(const CompareOptions& options);

// The whole command; progress and the table go to `out`. Returns the exit status: 0, 1 when a run
// failed, 128 + the signal when interrupted. Throws an Error for bad options (check_compare_options,
// before running anything) and when the programs or --out cannot be used.
int run_compare(const CompareOptions& options, std::FILE* out);

}  // namespace minidl
