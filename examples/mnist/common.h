// examples/mnist/common.h — what the mnist subcommands share: their entry points and flags, train's data,
// the device choice, the running loss and accuracy of an epoch, evaluation, and loading a saved model.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "dist/data_parallel.h"
#include "examples/mnist/model.h"
#include "examples/run_state.h"
#include "examples/train_guard.h"
#include "nn/data.h"
#include "nn/layers.h"
#include "nn/lr_schedule.h"
#include "ops/ops.h"

namespace mnist {

// ------------------------------------------------------------------ the subcommands

// `mnist train`'s flags (examples/mnist/main.cpp adds them; train.cpp documents what they do).
struct TrainFlags {
  std::string data, device = "auto", metrics, schedule = "onecycle";
  int epochs = 3;
  int64_t batch = 64, limit = 0;
  int64_t metrics_every = 0;  // --metrics-every N: a per-step record every N steps (0: per epoch only)
  double lr = 2e-3;
  double weight_decay = 0;  // > 0: AdamW (decoupled weight decay)
  double val_split = -1;  // -1: not given (0.1 for a CSV file, 0 for the IDX files)
  uint64_t seed = 1;
  bool deterministic = false;
  std::vector<std::string> kernels;
  bool distributed = false;
  bool host_data = false;       // --host-data: batches copied from host memory every step
  bool cuda_graph = false;      // --cuda-graph: forward, loss, backward and Adam replayed from a CUDA graph
  bool no_cuda_graph = false;   // --no-cuda-graph: eager steps on a GPU (graphs are the default there)
  std::string precision;        // --precision: "" (MINIDL_TF32 decides), fp32, tf32 or bf16 (core/precision.h)
  std::string memory_format;    // --memory-format: "" (the device's default), nchw or nhwc (examples/flags.h)
  double target_accuracy = 0;   // --target-accuracy: stop once the evaluation reaches it (0: off)
  std::string recipe = "default";
  std::string model = mnist::kModelName;  // --model
  std::string recipe_gpu_conv;            // --recipe fast: the conv2d kernel on a GPU ("" none)
  examples::RunFlags run;  // --save, --resume, --init-from, --save-every, --stop-after-epochs, --stop-after-steps
  std::string save_best;   // --save-best FILE: the model of the best evaluation (examples/best_checkpoint.h)
  int64_t early_stop = 0;  // --early-stop N: stop after N epochs without a new best (0: off)
};

// --recipe fast: fills in the recipe's settings where their flags were not given, and says which.
void apply_recipe(TrainFlags& f, const CLI::App& train_cmd);  // examples/mnist/recipe.cpp
int train(const TrainFlags& f);                                 // examples/mnist/train.cpp
int eval(const std::string& model_path, const std::string& data, const std::string& device_flag,
         const std::vector<std::string>& kernels, bool deterministic);  // examples/mnist/eval.cpp
int predict(const std::string& model_path, const std::vector<std::string>& images, const std::string& device_flag,
            const std::vector<std::string>& kernels);  // examples/mnist/predict.cpp
int predict_csv(const std::string& model_path, const std::string& csv, const std::string& out,
                const std::string& device_flag, const std::vector<std::string>& kernels);  // predict.cpp

// ------------------------------------------------------------------ the training data (examples/mnist/data.cpp)

// The data of a run: what it trains on and what it evaluates after every epoch.
struct TrainingData {
  std::shared_ptr<minidl::Dataset> train;
  std::shared_ptr<minidl::Dataset> eval;  // the test set, or the held-out validation set; null: none
  std::string eval_name;          // "test" or "validation"
  std::string description;        // where it came from, for the first line
  std::string identity;           // what --resume compares (no paths: a moved folder resumes)
  std::vector<examples::DataFingerprint> fingerprints;  // of the training and evaluation sets (run_state.h)
};

// --data: a folder of the four IDX files (or none: searched), or a CSV file in Kaggle's format.
TrainingData load_training_data(const TrainFlags& f);
// The images and labels of a labelled CSV file in Kaggle's format (train.csv; nn/image_csv.h), its first
// `limit` rows (0: all), as the model reads them; for train --data and eval --data.
std::shared_ptr<minidl::TensorDataset> csv_dataset(const std::string& path, int64_t limit = 0);
// Whether `path` names something that exists and is not a directory (a CSV file, for --data).
bool is_file(const std::string& path);

// ------------------------------------------------------------------ a run's settings (examples/mnist/train_settings.cpp)

// Refuses a schedule that cannot work with the run's step count, naming the flags that decide it.
void check_step_count(const TrainFlags& f, int64_t batches_per_epoch, int64_t train_images);
// The settings that make a run what it is ("run.*" metadata, and the model), saved with every checkpoint
// and compared by --resume.
examples::Metadata run_settings(const TrainFlags& f, const TrainingData& d, int64_t batches_per_epoch,
                                int64_t total_steps);
// With --weight-decay, also run.weight_decay (absent without it, so older files resume as before).
examples::Metadata with_weight_decay(examples::Metadata settings, double weight_decay);
// --schedule: onecycle and cosine over `total_steps` steps (stepped per batch), step (x0.7 per epoch), or
// none (nullptr).
std::unique_ptr<minidl::LRScheduler> make_schedule(const TrainFlags& f, minidl::Optimizer& optimizer,
                                                   int64_t total_steps);

// ------------------------------------------------------------------ devices

// "auto": the GPU when this build has CUDA and a GPU is usable, else the CPU; says which and why.
minidl::Device choose_device(const std::string& flag);

// ------------------------------------------------------------------ running loss and accuracy

// Collects per-batch loss and predictions without reading them back every step (a read from a GPU
// waits for it); flush() reads what has accumulated, when a progress line or the epoch's end needs it.
// With a guard (training), flush() also hands each loss to it, which stops at the first that is not finite,
// naming its step and learning rate (in a --distributed job, at the guard's next agree()).
class RunningStats {
 public:
  explicit RunningStats(examples::DivergenceGuard* guard = nullptr) : guard_(guard) {}
  // `step` (1-based over the run) and `lr` (the learning rate of that step) are for the guard's message.
  // `targets` on the logits' device or on the CPU.
  void add(const minidl::Tensor& loss, const minidl::Tensor& logits, const minidl::Tensor& targets, int64_t step = 0,
           double lr = 0) {
    losses_.push_back(loss.detach().reshape({1}));
    predictions_.push_back(minidl::argmax(logits.detach(), 1));
    targets_.push_back(targets.to(logits.device()));
    steps_.emplace_back(step, lr);
    if (losses_.size() >= 64) flush();
  }
  void flush() {
    if (losses_.empty()) return;
    // Three reads from the device for up to 64 batches (each read waits for the GPU to get there).
    const std::vector<double> losses = minidl::concat(losses_, 0).to_vector<double>();
    const std::vector<int64_t> predicted = minidl::concat(predictions_, 0).to_vector<int64_t>();
    const std::vector<int64_t> labels = minidl::concat(targets_, 0).to_vector<int64_t>();
    size_t k = 0;
    for (size_t b = 0; b < targets_.size(); ++b) {
      if (guard_) guard_->check_loss(losses[b], steps_[b].first, steps_[b].second);
      const int64_t n = targets_[b].size(0);
      loss_sum_ += losses[b] * static_cast<double>(n);
      for (int64_t i = 0; i < n; ++i, ++k) correct_ += predicted[k] == labels[k];
      count_ += n;
    }
    losses_.clear();
    predictions_.clear();
    targets_.clear();
    steps_.clear();
  }
  double mean_loss() const { return count_ ? loss_sum_ / count_ : 0; }
  double accuracy() const { return count_ ? static_cast<double>(correct_) / count_ : 0; }
  int64_t correct() const { return correct_; }
  int64_t count() const { return count_; }
  // The running sums {loss sum, correct, count} (after flush()): saved in the middle of an epoch, and
  // restored when the run resumes there (examples/run_state.h), so the epoch's summary covers all of it.
  static constexpr size_t kSums = 3;
  std::vector<double> sums() const {
    return {loss_sum_, static_cast<double>(correct_), static_cast<double>(count_)};
  }
  void restore(const std::vector<double>& sums) {
    MINIDL_CHECK(sums.size() == kSums && losses_.empty(), "RunningStats: restore needs ", kSums, " sums, got ",
                 sums.size());
    loss_sum_ = sums[0];
    correct_ = static_cast<int64_t>(sums[1]);
    count_ = static_cast<int64_t>(sums[2]);
  }
  // Data-parallel: the totals of every rank (call on every rank, after flush()).
  void sum_over_ranks(minidl::dist::DataParallel& dp) {
    const std::vector<double> total =
        dp.sum({loss_sum_, static_cast<double>(correct_), static_cast<double>(count_)});
    loss_sum_ = total[0];
    correct_ = static_cast<int64_t>(total[1]);
    count_ = static_cast<int64_t>(total[2]);
  }

 private:
  examples::DivergenceGuard* guard_;
  std::vector<minidl::Tensor> losses_, predictions_, targets_;
  std::vector<std::pair<int64_t, double>> steps_;  // (step, lr) of each loss
  double loss_sum_ = 0;
  int64_t correct_ = 0, count_ = 0;
};

// ------------------------------------------------------------------ evaluation (examples/mnist/common.cpp)

// Evaluation batches: large on a GPU (fewer launches); moderate on the CPU, where convolution by im2col
// materialises [batch * 24 * 24, 32 * 3 * 3] floats for the second layer (660 MB for 1000 images).
int64_t eval_batch_size(minidl::Device device);

struct EvalResult {
  double loss = 0, accuracy = 0;
  int64_t correct = 0, count = 0;
};

// With `dp`, each rank evaluates its part of the test set and the results are summed over the ranks.
EvalResult evaluate(minidl::Module& model, minidl::DataLoader& loader, minidl::Device device,
                    minidl::dist::DataParallel* dp = nullptr);

// A model saved by `mnist train --save`, on `device`, in eval mode; one holding NaN or infinity is refused.
std::shared_ptr<minidl::Sequential> load_model(const std::string& path, minidl::Device device);

std::string percent(double fraction);  // "98.76%"
std::string number_4(double x);        // "%.4f"

}  // namespace mnist
