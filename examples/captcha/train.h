// examples/captcha/train.h — what the files of `captcha train` share: its flags (TrainArgs, added to the
// command line by examples/captcha/train_flags.cpp; --recipe: recipe.cpp), its data (examples/captcha/train_data.cpp) and the
// run itself (run_train, examples/captcha/train.cpp, which says what each flag does).
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "examples/data/captcha_gen.h"
#include "examples/run_state.h"
#include "nn/data.h"

namespace captcha {

// `captcha train`'s flags and their defaults.
struct TrainArgs {
  std::string device = "auto", data, val_data, metrics;
  std::string charset = minidl::CaptchaOptions().charset, length = "4", rnn = "gru", gru = "auto", schedule = "cosine";
  std::string channels = "32,64,128,256,256";
  std::string augment = "all", save_best;
  std::string recipe = "default";  // --recipe cpu: a short run for a CPU (examples/captcha/recipe.cpp)
  bool no_augment = false;
  double augment_strength = 1.0;
  double weight_decay = -1;  // < 0: not given (0.01 with --data, else 0)
  int64_t early_stop = 0;
  int64_t metrics_every = 0;  // --metrics-every N: a per-step record every N steps (0: per epoch only)
  CLI::Option* augment_flag = nullptr;
  CLI::Option* augment_strength_flag = nullptr;
  int64_t steps = 0, epochs = 12, epoch_size = 64000, batch = 128, val_count = 1000, hidden = 128;
  examples::RunFlags run;  // --save, --resume, --save-every, --stop-after-epochs, --stop-after-steps
  int width = 192, height = 64, threads = 0, convs_per_block = 2, gru_layers = 2;
  double lr = 2e-3, dropout = 0.1;
  uint64_t seed = 1;
  bool deterministic = false;
  // --precision (core/precision.h): TF32 by default here, as PyTorch does for cuDNN's convolutions: it
  // reaches the same accuracy in fewer and faster epochs than strict FP32 (the figures: docs/results/README.md,
  // "Captcha time to accuracy"); --precision fp32 --epochs 20 is the earlier default.
  std::string precision = "tf32";
  std::string memory_format;  // --memory-format: "" (the device's default), nchw or nhwc (examples/flags.h)
  std::string activations;    // --activations: "" (the default), fp32 or bf16 (examples/flags.h)
  std::vector<std::string> kernels;
  bool distributed = false;
  bool cuda_graph = false, no_cuda_graph = false;  // the step from a CUDA graph (the default on one GPU), or not
  CLI::Option* charset_flag = nullptr;  // was --charset given?
  CLI::Option* length_flag = nullptr;
};

// This rank's part of every batch in a --distributed job (DataLoaderOptions::shard_index/shard_count).
struct Shard {
  int index = 0, count = 1;
};

// Where batches come from (a fresh generated range per epoch, or one loader over a folder), and what the
// run validates on after every epoch.
struct TrainingData {
  std::string charset, length, description;
  std::string augment = "none";  // the transforms applied to training batches (AugmentOptions::describe)
  int max_length = 0;
  int64_t batches_per_epoch = 0;
  std::shared_ptr<minidl::Dataset> validation;
  std::function<minidl::DataLoader(int64_t epoch)> loader;
  std::vector<examples::DataFingerprint> fingerprints;  // what --resume compares (examples/run_state.h)
};

// Without --data: captchas rendered on the fly; validation on captchas of seed + 1, or on --val-data.
// `pin_memory`: training batches in page-locked memory, for a GPU (DataLoaderOptions::pin_memory).
TrainingData generated_data(const TrainArgs& a, int threads, Shard shard, bool pin_memory);
// --data DIR: its labelled images, augmented each epoch; validation on --val-data, or on images held out.
TrainingData folder_data(const TrainArgs& a, int threads, Shard shard, bool pin_memory);

// The settings that make a run what it is, saved with every epoch ("run.*" metadata) and compared by
// --resume (examples/captcha/train_settings.cpp); `weight_decay`: the one in use.
std::map<std::string, std::string> run_settings(const TrainArgs& a, const TrainingData& data, int64_t epochs,
                                                int64_t total_steps, double weight_decay);
// The model settings an --init-from file must share with this run: those that decide its tensors (the label
// length, the dropout and everything about the run may differ: fine-tuning on other captchas).
const std::vector<std::string>& init_from_keys();

// --recipe cpu: fills in the recipe's settings where their flags were not given on `cmd`, and says which.
void apply_recipe(TrainArgs& a, const CLI::App& cmd);  // examples/captcha/recipe.cpp

// Trains as the flags say, printing progress and validation accuracy; returns the exit status.
int run_train(const TrainArgs& a);

}  // namespace captcha
