// examples/captcha/common.h — what the captcha subcommands share: the subcommands' entry points, flag
// parsing helpers, device choice, the model's description in checkpoint metadata, and evaluation.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "examples/captcha/model.h"
#include "examples/captcha/model_config.h"
#include "examples/data/captcha_data.h"
#include "nn/data.h"
#include "nn/optim.h"

namespace captcha {

// ---- the subcommands: each adds its flags to the CLI and returns the exit status of its run.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};
Command add_gen_command(CLI::App& parent);      // examples/captcha/gen.cpp
Command add_train_command(CLI::App& parent);    // examples/captcha/train_flags.cpp (run: train.cpp)
Command add_eval_command(CLI::App& parent);     // examples/captcha/eval.cpp
Command add_predict_command(CLI::App& parent);  // examples/captcha/eval.cpp
Command add_bench_command(CLI::App& parent);    // examples/captcha/bench.cpp
Command add_export_command(CLI::App& parent);   // examples/captcha/exchange.cpp
Command add_import_command(CLI::App& parent);   // examples/captcha/exchange.cpp

// ---- flags
// The image sizes the generator draws and the model reads (examples/data/captcha_gen.h check_captcha_options).
constexpr int kMinImageSide = 16, kMaxImageSide = 4096;
// --threads: 0 (one per hardware thread) up to this many.
constexpr int kMaxThreads = 1024;
// `captcha train --seed` S: validation uses S + 1 and `captcha eval` S + 2, read back from the file as a
// 64-bit signed number.
constexpr uint64_t kMaxTrainSeed = static_cast<uint64_t>(INT64_MAX) - 2;
// "4" -> (4, 4), "4-6" -> (4, 6); throws an Error naming the flag otherwise.
std::pair<int, int> parse_length_range(const std::string& spec);
// "32,64,128" -> {32, 64, 128}, every value positive.
std::vector<int64_t> parse_channels(const std::string& spec);
// "auto": the GPU when this build has CUDA and a GPU is usable, else the CPU; prints which and why.
minidl::Device choose_device(const std::string& flag);
// 0 -> one per hardware thread.
int thread_count(int flag);

// ---- labelled folders: prints the folder's warnings (skipped files, an inferred charset or length) to
// stderr, "captcha: warning: ...", one line each.
void print_folder_warnings(const minidl::CaptchaDataset& data);

// ---- checkpoints: the model configuration, charset and label lengths travel in the metadata
// (model_metadata(), examples/captcha/model_config.h), so eval and predict rebuild the model without
// repeating the training flags.
struct LoadedModel {
  std::shared_ptr<CaptchaModel> model;  // on the device, in eval mode
  std::string charset, length;
  std::map<std::string, std::string> metadata;
};
LoadedModel load_model(const std::string& path, minidl::Device device);

// ---- training: one step, eagerly or from a CUDA graph: examples/captcha/train_step.h

// ---- evaluation: greedy decoding of every batch (inputs [B, 3, H, W], targets [B, S] padded with 0)
struct EvalResult {
  double loss = 0, sequence_accuracy = 0, character_accuracy = 0;
  int64_t correct = 0, count = 0;
  int64_t correct_characters = 0, characters = 0;  // character_accuracy = correct_characters / characters
  std::vector<std::pair<std::string, std::string>> mistakes;  // (truth, read), the first max_mistakes
};
EvalResult evaluate(CaptchaModel& model, minidl::DataLoader& loader, const std::string& charset,
                    minidl::Device device, const std::string& title, int64_t max_mistakes = 8);
// Evaluation batch size: large on a GPU, moderate on the CPU (convolution buffers grow with it).
int64_t eval_batch_size(minidl::Device device);
// The loader options of evaluation and validation on `device`: `batch` (eval_batch_size's when 0), in order,
// and on a GPU in page-locked memory (DataLoaderOptions::pin_memory).
minidl::DataLoaderOptions eval_loader_options(minidl::Device device, int64_t batch = 0);

std::string percent(double fraction);

}  // namespace captcha
