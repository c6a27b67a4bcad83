// examples/mnist/main.cpp — `mnist`: train, evaluate and use a CNN on MNIST.
//
//   mnist train [--data DIR|FILE.csv] [--device auto|cpu|cuda] [--epochs N] [--batch N] [--lr X] [--limit N]
//               [--val-split F] [--schedule onecycle|cosine|step|none] [--seed N] [--metrics FILE] [--weight-decay W]
//               [--save FILE] [--save-every N] [--resume FILE [--resume-other-data]] [--stop-after-epochs N]
//               [--stop-after-steps N]
//               [--kernel OP=NAME]... [--deterministic] [--distributed] [--host-data]
//               [--target-accuracy A] [--recipe default|fast] [--model mnist_cnn|mnist_cnn_bn]
//               [--cuda-graph|--no-cuda-graph] [--precision fp32|tf32|bf16]
//   mnist eval --model FILE [--data DIR] [--deterministic]
//   mnist predict --model FILE IMAGE...
//   mnist predict --model FILE --csv test.csv --out submission.csv
//   mnist bench [--device auto|cpu|cuda] [--batch N] [--warmup N] [--steps N] [--json FILE] [--cuda-graph]
//               [--model mnist_cnn|mnist_cnn_bn] [--precision fp32|tf32|bf16]
//               (training-step timing on a synthetic batch: examples/mnist/bench.cpp)
//
// Defaults: 3 epochs, batch 64, Adam whose lr follows a one-cycle schedule peaking at --lr 2e-3 (a short
// warm-up, then cosine decay to almost zero over the whole run: the decay is what lifts a 3-epoch run
// from about 98.9% to 99%+ test accuracy), seed 1, every training image. --schedule cosine decays from
// --lr per batch, step multiplies it by 0.7 each epoch (PyTorch's MNIST example), none keeps it.
// Data: the four IDX files, evaluated on their test set after every epoch; or, --data FILE, Kaggle's
// "Digit Recognizer" train.csv (label,pixel0,...,pixel783: nn/image_csv.h), which has no labelled test
// set: --val-split (default 0.1 for a CSV file) holds out that fraction of each class (nn/split.h, chosen
// by --seed) and evaluates on it instead; --val-split 0 trains on every row and evaluates nothing.
// `predict --csv test.csv --out submission.csv` writes Kaggle's submission file (ImageId,Label).
// --metrics writes per epoch: epoch, step (optimizer steps so far), images (training images this epoch),
// train_loss, train_accuracy, test_loss and test_accuracy (val_loss and val_accuracy with --val-split),
// seconds (the epoch's wall time, evaluation included), train_seconds, images_per_second (this
// invocation's images / train_seconds), device, batch_size, lr.
// The loop is the usual one (examples/mnist/train_step.h): forward, cross-entropy, zero_grad, backward,
// step; evaluation runs in eval() mode under NoGradGuard.
// Nothing outside the step: on a GPU the training and test images are copied there once and every batch
// is assembled there (nn/data.h, "Data resident on the GPU"); the loss and the predictions stay on the
// GPU until a progress line or the epoch's end reads them (RunningStats). --host-data keeps the images in
// host memory and copies each batch instead (the path before; for comparison). On one GPU, forward, loss,
// backward and Adam are captured as a CUDA graph after two eager steps and replayed (nn/graphed_step.h);
// --no-cuda-graph runs every step eagerly.
// Time to accuracy: the time from the model's creation to each evaluation goes into --metrics
// ("seconds_since_start") and the last line; --target-accuracy A stops after the first evaluation whose
// accuracy reaches A (a fraction, e.g. 0.99), and exits with 4 if no epoch reached it.
// --recipe fast: a short run tuned for time to 99% (docs/results/README.md, "The fast MNIST recipe"); its
// settings (--model mnist_cnn_bn, --epochs, --batch, --lr) apply where the flag is not given. The time to
// accuracy counts from the model's creation; the device is initialised before it (CUDA context, cuBLAS).
// --model picks the CNN: mnist_cnn (the default) or mnist_cnn_bn (examples/mnist/model.h).
// Stopping and going on (examples/run_state.h): --save writes the model with Adam's state, the position
// (epoch, step within it, step of the run), the random stream's position and the run's settings after
// every epoch, and every --save-every N steps; --resume FILE continues where FILE stopped, mid-epoch
// included, bit for bit as the uninterrupted run on the CPU (tests/mnist_resume_test.sh). Ctrl-C or
// SIGTERM finishes the current step, saves, says how to resume and exits with 130 (143 for SIGTERM).
// Reliability (README.md, "Reliability: what is guaranteed"): every numeric flag is checked (finite, in
// range: examples/flags.h), and MINIDL_* variables, the data and the --save path too, before training
// starts; no output (--save, --metrics, predict's --out) may be an input (--data, --resume, --model,
// --csv) or lie inside the --data folder (nn/files.h), and --metrics refuses a file that is not a metrics
// log (nn/metrics.h). A NaN, infinite or runaway loss (10,000 times the first) stops the run at once,
// naming the step and learning rate, and the --save file keeps the last good state: no save holds a
// non-finite weight or optimizer state, or a weight above 1e6 (examples/train_guard.h); saves are atomic
// (nn/checkpoint.h). --resume refuses data whose fingerprint differs from the file's (naming --data;
// --resume-other-data goes on, saying so: examples/run_state.h). eval and predict refuse a model whose
// outputs are NaN or infinite. The same seed and thread count give the same bits on the CPU;
// --deterministic does the same on a GPU (core/determinism.h).
// --distributed: this process is one rank of a data-parallel job started by `mpirun -np N mnist train
// --distributed ...` (docs/distributed.md): --batch stays the global batch, each rank trains on its part of
// every batch (a sharded loader) and evaluates its part of the test set; gradients and metrics are summed
// over the ranks (dist/data_parallel.h); only rank 0 prints, writes --metrics, checks the --save path and
// saves. A NaN or infinite loss on any rank stops every rank together (examples/train_guard.h), and so
// does Ctrl-C on any rank.
// Errors print "mnist: <message>" and exit with status 1 (2 for bad flags and for an output that names an
// input, 3 when training diverged, 4 when --target-accuracy was not reached).
#include <CLI/CLI.hpp>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/backend.h"
#include "core/determinism.h"
#include "core/dispatch.h"
#include "core/numerics.h"
#include "core/random.h"
#include "dist/data_parallel.h"
#include "dist/launch.h"
#include "dist/process.h"
#include "examples/flags.h"
#include "examples/mnist/bench.h"
#include "examples/mnist/model.h"
#include "examples/mnist/train_step.h"
#include "examples/run_state.h"
#include "examples/train_guard.h"
#include "nn/checkpoint.h"
#include "nn/lr_schedule.h"
#include "nn/data.h"
#include "nn/image.h"
#include "nn/image_csv.h"
#include "nn/files.h"
#include "nn/metrics.h"
#include "nn/mnist.h"
#include "nn/optim.h"
#include "nn/progress.h"
#include "nn/split.h"
#include "ops/ops.h"

using namespace minidl;
using examples::non_empty;
using examples::number_in;
using examples::FlagRange;

namespace {

// ------------------------------------------------------------------ devices

// "auto": the GPU when this build has CUDA and a GPU is usable, else the CPU; says which and why.
Device choose_device(const std::string& flag) { return minidl::choose_device(flag, "mnist"); }

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
  void add(const Tensor& loss, const Tensor& logits, const Tensor& targets, int64_t step = 0, double lr = 0) {
    losses_.push_back(loss.detach().reshape({1}));
    predictions_.push_back(argmax(logits.detach(), 1));
    targets_.push_back(targets.to(logits.device()));
    steps_.emplace_back(step, lr);
    if (losses_.size() >= 64) flush();
  }
  void flush() {
    if (losses_.empty()) return;
    // Three reads from the device for up to 64 batches (each read waits for the GPU to get there).
    const std::vector<double> losses = concat(losses_, 0).to_vector<double>();
    const std::vector<int64_t> predicted = concat(predictions_, 0).to_vector<int64_t>();
    const std::vector<int64_t> labels = concat(targets_, 0).to_vector<int64_t>();
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
  void sum_over_ranks(dist::DataParallel& dp) {
    const std::vector<double> total =
        dp.sum({loss_sum_, static_cast<double>(correct_), static_cast<double>(count_)});
    loss_sum_ = total[0];
    correct_ = static_cast<int64_t>(total[1]);
    count_ = static_cast<int64_t>(total[2]);
  }

 private:
  examples::DivergenceGuard* guard_;
  std::vector<Tensor> losses_, predictions_, targets_;
  std::vector<std::pair<int64_t, double>> steps_;  // (step, lr) of each loss
  double loss_sum_ = 0;
  int64_t correct_ = 0, count_ = 0;
};

// Evaluation batches: large on a GPU (fewer launches); moderate on the CPU, where convolution by im2col
// materialises [batch * 24 * 24, 32 * 3 * 3] floats for the second layer (660 MB for 1000 images).
int64_t eval_batch_size(Device device) { return device.is_cuda() ? 1000 : 200; }

struct EvalResult {
  double loss = 0, accuracy = 0;
  int64_t correct = 0, count = 0;
};

// With `dp`, each rank evaluates its part of the test set and the results are summed over the ranks.
EvalResult evaluate(Module& model, DataLoader& loader, Device device, dist::DataParallel* dp = nullptr) {
  model.eval();
  NoGradGuard no_grad;
  RunningStats stats;
  Progress progress("test", loader.num_batches());
  int64_t step = 0;
  for (Batch& batch : loader.epoch(0)) {
    const Tensor targets = batch.targets.to(device);
    const Tensor logits = model(batch.inputs.to(device));
    stats.add(cross_entropy(logits, targets), logits, targets);
    ++step;
    if (progress.live() && progress.due(step)) {
      stats.flush();
      progress.update(step, stats.count(), stats.mean_loss(), stats.accuracy());
    }
  }
  stats.flush();
  progress.clear();
  if (dp) stats.sum_over_ranks(*dp);
  return {stats.mean_loss(), stats.accuracy(), stats.correct(), stats.count()};
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * fraction);
  return buf;
}

std::string number_4(double x) {  // "%.4f"
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.4f", x);
  return buf;
}

// ------------------------------------------------------------------ mnist train

struct TrainFlags {
  std::string data, device = "auto", metrics, schedule = "onecycle";
  int epochs = 3;
  int64_t batch = 64, limit = 0;
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
  double target_accuracy = 0;   // --target-accuracy: stop once the evaluation reaches it (0: off)
  std::string recipe = "default";
  std::string model = mnist::kModelName;  // --model
  std::string recipe_gpu_conv;            // --recipe fast: the conv2d kernel on a GPU ("" none)
  examples::RunFlags run;  // --save, --resume, --save-every, --stop-after-epochs, --stop-after-steps
};

// --recipe fast: the settings of a short run tuned for time to 99% test accuracy on a GPU (measured over
// 10 seeds: docs/results/README.md, "The fast MNIST recipe"): the batch-norm CNN, two epochs, and on a GPU
// minidl's implicit-GEMM convolutions instead of cuDNN's (the same step time for this small model, and no
// cuDNN to load: a fifth of a second). The schedule (one-cycle) and the data (resident on the GPU) are the
// defaults; flags given on the command line win over the recipe.
struct Recipe {
  int epochs;
  int64_t batch;
  double lr;
  const char* model;
  const char* gpu_conv_kernel;  // selected for conv2d on a GPU unless a --kernel conv2d=... is given
};
constexpr Recipe kFastRecipe = {2, 256, 8e-3, mnist::kFastModelName, "implicit_gemm"};

void apply_recipe(TrainFlags& f, const CLI::App& train_cmd) {
  if (f.recipe != "fast") return;
  std::string applied;
  if (train_cmd.count("--epochs") == 0) {
    f.epochs = kFastRecipe.epochs;
    applied += str_cat(" --epochs ", f.epochs);
  }
  if (train_cmd.count("--batch") == 0) {
    f.batch = kFastRecipe.batch;
    applied += str_cat(" --batch ", f.batch);
  }
  if (train_cmd.count("--lr") == 0) {
    f.lr = kFastRecipe.lr;
    applied += str_cat(" --lr ", f.lr);
  }
  if (train_cmd.count("--model") == 0) {
    f.model = kFastRecipe.model;
    applied += str_cat(" --model ", f.model);
  }
  const bool conv_selected = std::any_of(f.kernels.begin(), f.kernels.end(),
                                         [](const std::string& k) { return k.rfind("conv2d", 0) == 0; });
  if (!conv_selected) {
    f.recipe_gpu_conv = kFastRecipe.gpu_conv_kernel;
    applied += str_cat(" (on a GPU: --kernel conv2d=", f.recipe_gpu_conv, ")");
  }
  std::printf("mnist: --recipe fast:%s\n", applied.empty() ? " nothing (every setting given as a flag)" : applied.c_str());
}

// The data of a run: what it trains on and what it evaluates after every epoch.
struct TrainingData {
  std::shared_ptr<Dataset> train;
  std::shared_ptr<Dataset> eval;  // the test set, or the held-out validation set; null: none
  std::string eval_name;          // "test" or "validation"
  std::string description;        // where it came from, for the first line
  std::string identity;           // what --resume compares (no paths: a moved folder resumes)
  std::vector<examples::DataFingerprint> fingerprints;  // of the training and evaluation sets (run_state.h)
};

// Pixels 0..255 [N * 784] and labels -> the model's inputs [N, 1, 28, 28] (normalised) and targets [N].
std::shared_ptr<TensorDataset> dataset_of(const uint8_t* pixels, const int64_t* labels, int64_t n) {
  Tensor x = empty({n, 1, 28, 28}, TensorOptions(DType::float32, Device::cpu()));
  Tensor y = empty({n}, TensorOptions(DType::int64, Device::cpu()));
  float* px = x.data<float>();
  for (int64_t i = 0; i < n * 28 * 28; ++i) px[i] = mnist_normalize(pixels[i]);
  std::copy(labels, labels + n, y.data<int64_t>());
  return std::make_shared<TensorDataset>(x, y);
}

// Samples `indices` of a dataset, as a dataset of their own.
std::shared_ptr<TensorDataset> subset(const TensorDataset& all, const std::vector<int64_t>& indices) {
  const Batch b = all.get_batch(indices);
  return std::make_shared<TensorDataset>(b.inputs, b.targets);
}

// --val-split F > 0: a stratified fraction F of `all` becomes the validation set (nn/split.h).
void hold_out(TrainingData& d, const TensorDataset& all, double fraction, uint64_t seed, const std::string& source) {
  const Split split = stratified_split(all.targets().to_vector<int64_t>(), fraction, seed);
  MINIDL_CHECK(!split.validation.empty(), "--val-split ", fraction, " of the ", all.size(), " images of ", source,
               " holds out none of them: use a larger fraction or more data");
  MINIDL_CHECK(!split.train.empty(), "--val-split ", fraction, " leaves no training images of ", source);
  d.train = subset(all, split.train);
  d.eval = subset(all, split.validation);
  d.eval_name = "validation";
}

// The fingerprints --resume compares (examples/run_state.h): the training set, and the set evaluated
// after every epoch (the test set, or the held-out part), both chosen by --data.
void add_fingerprints(TrainingData& d) {
  for (const auto& [key, set] : {std::make_pair("data.train", d.train), std::make_pair("data.val", d.eval)}) {
    const auto* tensors = dynamic_cast<const TensorDataset*>(set.get());
    if (tensors) d.fingerprints.push_back({key, "--data", examples::data_fingerprint(tensors->inputs(), tensors->targets())});
  }
}

// --data: a folder of the four IDX files (or none: searched), or a CSV file in Kaggle's format
// (nn/image_csv.h). The CSV file has no test set: --val-split (0.1 unless given) holds out a validation
// set instead; the IDX files are evaluated on their test set unless --val-split is given.
TrainingData load_training_data(const TrainFlags& f) {
  TrainingData d;
  struct stat st;
  const bool exists = !f.data.empty() && ::stat(f.data.c_str(), &st) == 0;
  const bool csv = exists && !S_ISDIR(st.st_mode);
  MINIDL_CHECK(exists || f.data.size() < 4 || f.data.compare(f.data.size() - 4, 4, ".csv") != 0, "--data '", f.data,
               "': no such file");
  const double fraction = f.val_split >= 0 ? f.val_split : csv ? 0.1 : 0;
  const std::string split_note =
      str_cat(" (--val-split ", fraction, ", stratified, seed ", f.seed, ")");
  if (csv) {
    ImageCsvOptions options;
    options.limit = f.limit;
    const ImageCsv file = read_image_csv(f.data, options);
    MINIDL_CHECK(file.rows > 0, f.data, ": no rows after the header");
    const auto all = dataset_of(file.images.data(), file.labels.data(), file.rows);
    d.train = all;
    if (fraction > 0) hold_out(d, *all, fraction, f.seed, f.data);
    d.description = str_cat(f.data, ": ", d.train->size(), " training images",
                            f.limit > 0 ? " (--limit)" : "",
                            d.eval ? str_cat(", ", d.eval->size(), " held out for validation", split_note)
                                   : std::string(", no validation (--val-split 0)"));
    const size_t slash = f.data.rfind('/');
    d.identity = str_cat("csv ", slash == std::string::npos ? f.data : f.data.substr(slash + 1), ": ",
                         d.train->size(), " training images, ", d.eval ? d.eval->size() : 0, " validation");
    add_fingerprints(d);
    return d;
  }
  const std::string dir = find_mnist_dir(f.data);
  auto all = std::make_shared<TensorDataset>(load_mnist(dir, /*train=*/true, f.limit));
  MINIDL_CHECK(all->size() > 0, "the training set in ", dir, " (train-images-idx3-ubyte) has no images");
  d.train = all;
  if (fraction > 0) {
    hold_out(d, *all, fraction, f.seed, dir);
  } else {
    d.eval = std::make_shared<TensorDataset>(load_mnist(dir, /*train=*/false));
    MINIDL_CHECK(d.eval->size() > 0, "the test set in ", dir, " (t10k-images-idx3-ubyte) has no images");
    d.eval_name = "test";
  }
  d.description = str_cat(dir, ": ", d.train->size(), " training images", f.limit > 0 ? " (--limit)" : "", ", ",
                          d.eval->size(), " ", d.eval_name, " images", fraction > 0 ? split_note : std::string());
  d.identity = str_cat("mnist idx: ", d.train->size(), " training images, ", d.eval->size(), " ", d.eval_name);
  add_fingerprints(d);
  return d;
}

// The number of optimizer steps is known once the data is loaded; a schedule that cannot work with it is
// refused before training, naming the flags that decide it.
void check_step_count(const TrainFlags& f, int64_t batches_per_epoch, int64_t train_images) {
  const int64_t total = static_cast<int64_t>(f.epochs) * batches_per_epoch;
  const int64_t needed = OneCycleLR::min_total_steps();
  MINIDL_CHECK(f.schedule != "onecycle" || total >= needed, "--schedule onecycle needs at least ", needed,
               " training steps (a warm-up, then the decay), but --epochs ", f.epochs, " x ", batches_per_epoch,
               " batch(es) of --batch ", f.batch, " (", train_images, " training images",
               f.limit > 0 ? str_cat(", --limit ", f.limit) : std::string(), ") gives ", total,
               ": train on more images, run more epochs, use a smaller --batch, or --schedule none");
}

// The settings that make a run what it is ("run.*" metadata, and the model), saved with every checkpoint
// and compared by --resume: a resumed run must be the same run (examples/run_state.h).
examples::Metadata run_settings(const TrainFlags& f, const TrainingData& d, int64_t batches_per_epoch,
                                int64_t total_steps) {
  return {{"model", f.model},
          {"run.data", d.identity},
          {"run.batch", std::to_string(f.batch)},
          {"run.batches_per_epoch", std::to_string(batches_per_epoch)},
          {"run.epochs", std::to_string(f.epochs)},
          {"run.total_steps", std::to_string(total_steps)},
          {"run.lr", examples::exact_number(f.lr)},
          {"run.schedule", f.schedule},
          {"run.seed", std::to_string(f.seed)}};
}
// With --weight-decay, also run.weight_decay (absent without it, so older files resume as before).
examples::Metadata with_weight_decay(examples::Metadata settings, double weight_decay) {
  if (weight_decay > 0) settings["run.weight_decay"] = examples::exact_number(weight_decay);
  return settings;
}

int train(const TrainFlags& f) {
  select_kernels_from_flags(f.kernels);
  set_deterministic_algorithms(f.deterministic);  // before the first GPU op (core/determinism.h)
  examples::apply_precision_flag(f.precision);    // likewise (core/precision.h)
  f.run.check();
  // No output may replace an input (nn/files.h): checked by every process, before the job starts. The
  // data's folder is the one searched for when --data is not given.
  examples::check_run_paths(f.run, {"--metrics", f.metrics}, {},
                            {{"--data", f.data.empty() ? find_mnist_dir(f.data) : f.data}});
  std::unique_ptr<dist::DistributedRun> job;  // --distributed: this rank's place in the job
  if (f.distributed)
    job = std::make_unique<dist::DistributedRun>(dist::start_distributed("mnist", f.device, f.batch));
  const bool root = !job || job->is_root();  // prints (the others' stdout is /dev/null), writes and saves
  // The save path (--save, else --resume) is checked before any work (a missing folder should not cost an
  // epoch). In a job, rank 0 alone checks it and removes stale temporary files (it alone saves; two ranks'
  // clean-ups could remove each other's files), and every rank stops if the check fails.
  const std::string save_path = f.run.save_path();
  if (!save_path.empty()) {
    const auto check_save_path = [&] {
      const SavePath save = prepare_checkpoint_path(save_path, f.run.save.empty() ? "--resume" : "--save");
      if (save.stale_removed > 0)
        std::printf("mnist: removed %d temporary file(s) %s.tmp-* left by interrupted saves\n", save.stale_removed,
                    save.target.c_str());
    };
    if (job)
      dist::run_on_root(check_save_path);
    else
      check_save_path();
  }
  const Device device = job ? job->device : choose_device(f.device);
  MINIDL_CHECK(!f.cuda_graph || device.is_cuda(), "--cuda-graph needs a CUDA device; this run is on ", device.str());
  MINIDL_CHECK(!f.cuda_graph || !job, "--cuda-graph cannot be used with --distributed: the gradient all-reduce "
               "runs inside backward and talks to other processes, which a CUDA graph cannot hold");
  // CUDA graphs by default on one GPU: faster at every batch size measured, the same losses as eager
  // steps (docs/results/README.md, "CUDA graphs").
  const bool use_cuda_graph = device.is_cuda() && !job && !f.no_cuda_graph;
  TrainingData data = load_training_data(f);
  std::printf("mnist: data from %s\n", data.description.c_str());
  MINIDL_CHECK(f.target_accuracy == 0 || data.eval, "--target-accuracy ", f.target_accuracy,
               " needs an evaluation after each epoch, but --val-split 0 holds out nothing");

  if (device.is_cuda() && !f.recipe_gpu_conv.empty()) select_kernel("conv2d", DeviceType::cuda, f.recipe_gpu_conv);
  if (device.is_cuda()) {
    // The device and its libraries, before the clock of time to accuracy starts: CUDA's context and
    // cuBLAS's (a first matmul creates its handle and loads it: about 0.1 s on the H200). cuDNN loads at
    // its first convolution, inside the clock.
    const auto start = std::chrono::steady_clock::now();
    const Tensor one = ones({1, 1}, TensorOptions(DType::float32, device));
    matmul(one, one);
    backend_for(device.type).synchronize(device.index);
    std::printf("mnist: %s initialised in %.3f s (CUDA context, cuBLAS); precision %s\n", device.str().c_str(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), precision_name(float32_precision()));
  }
  manual_seed(f.seed);
  const auto created = std::chrono::steady_clock::now();  // time to accuracy counts from here
  const auto seconds_since_created = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - created).count();
  };
  std::shared_ptr<Sequential> model = mnist::make_model(f.model);
  model->to(device);  // before building the optimizer (nn/module.h)
  AdamOptions adam_options;
  adam_options.lr = f.lr;
  adam_options.weight_decay = f.weight_decay;
  // Adam, or AdamW when --weight-decay is positive (decoupled weight decay, nn/optim.h).
  std::unique_ptr<Adam> adam = f.weight_decay > 0 ? std::make_unique<AdamW>(model->parameters(), adam_options)
                                                  : std::make_unique<Adam>(model->parameters(), adam_options);
  Adam& optimizer = *adam;

  // The data resident on the GPU (nn/data.h) unless --host-data: no copy from the host per step.
  const Device data_device = device.is_cuda() && !f.host_data ? device : Device::cpu();
  DataLoaderOptions train_options;
  train_options.batch_size = f.batch;
  train_options.device = data_device;
  train_options.shuffle = true;
  train_options.seed = f.seed;
  if (job) {  // this rank's part of every batch
    train_options.shard_index = job->rank;
    train_options.shard_count = job->world_size;
  }
  DataLoader train_loader(data.train, train_options);
  const int64_t batches = train_loader.num_batches();
  check_step_count(f, batches, data.train->size());
  // Per-batch schedules step after every optimizer step; StepLR after every epoch.
  const int64_t total_steps = static_cast<int64_t>(f.epochs) * batches;
  std::unique_ptr<LRScheduler> scheduler;
  if (f.schedule == "onecycle")
    scheduler = std::make_unique<OneCycleLR>(optimizer, f.lr, total_steps);
  else if (f.schedule == "cosine")
    scheduler = std::make_unique<CosineAnnealingLR>(optimizer, total_steps);
  else if (f.schedule == "step")
    scheduler = std::make_unique<StepLR>(optimizer, 1, 0.7);
  const bool per_batch_schedule = f.schedule == "onecycle" || f.schedule == "cosine";

  // --resume: the model, Adam's state, the random stream and the position; the schedule follows the step.
  const examples::Metadata settings = with_weight_decay(run_settings(f, data, batches, total_steps), f.weight_decay);
  examples::RunPosition start;
  examples::Metadata resumed;  // the --resume file's metadata
  std::vector<std::string> resume_notes;  // what the log says about it: data not checked, or other data
  if (!f.run.resume.empty()) {
    const Checkpoint file = read_checkpoint(f.run.resume);
    check_checkpoint_model(file, f.run.resume, f.model, "`mnist train --save`");  // one line for another model
    resumed = load_checkpoint(file, f.run.resume, *model, &optimizer);
    start = examples::resume_position(f.run.resume, resumed, settings, RunningStats::kSums);
    const std::string data_note =
        examples::check_data_fingerprints(f.run.resume, resumed, data.fingerprints, f.run.resume_other_data);
    if (!data_note.empty()) resume_notes.push_back(data_note);
    if (scheduler) scheduler->set_step(per_batch_schedule ? start.step : start.epoch);
  }
  // After --resume, which every rank reads: the broadcast then changes nothing, but checks the ranks agree.
  std::unique_ptr<dist::DataParallel> dp;
  if (job) {
    // Rank 0's weights go to every rank; MINIDL_DIST_BUCKET_MB and MINIDL_DIST_OVERLAP may change the buckets.
    dp = std::make_unique<dist::DataParallel>(*model, *job->communicator,
                                              dist::DataParallelOptions::from_environment());
    std::printf("mnist: gradients in %zu buckets, all-reduced during backward:\n%s", dp->bucket_count(),
                dp->describe_buckets().c_str());
    if (data.eval) {  // this rank evaluates its part
      const Range part = shard_range(data.eval->size(), job->rank, job->world_size);
      data.eval = std::make_shared<DatasetSlice>(data.eval, part.begin, part.end);
    }
  }
  std::unique_ptr<DataLoader> eval_loader;
  if (data.eval) {
    DataLoaderOptions eval_options;
    eval_options.batch_size = eval_batch_size(device);
    eval_options.device = data_device;
    eval_loader = std::make_unique<DataLoader>(data.eval, eval_options);
  }
  std::unique_ptr<MetricsWriter> metrics;
  if (!f.metrics.empty() && root)
    metrics = std::make_unique<MetricsWriter>(f.metrics, /*append=*/!f.run.resume.empty(), "--metrics");

  // Ctrl-C and SIGTERM from here on stop the run after the current step (examples/run_state.h): before
  // the lines below, which tell a watcher that training starts.
  examples::RunControl control("mnist", f.run, start.step, job.get());
  std::printf("mnist: model %s, %lld parameters; %s lr %g (schedule %s)%s; %d epoch(s) of %lld batches of %lld\n",
              f.model.c_str(), static_cast<long long>(model->parameter_count()), optimizer.type_name().c_str(), f.lr,
              f.schedule.c_str(), f.weight_decay > 0 ? str_cat(", weight decay ", f.weight_decay).c_str() : "",
              f.epochs,
              static_cast<long long>(batches), static_cast<long long>(f.batch));
  if (train_loader.resident())
    std::printf("mnist: images resident on %s, batches assembled there (--host-data: copied from the host)\n",
                data_device.str().c_str());
  EvalResult result;  // of the last evaluation
  examples::DivergenceGuard guard(save_path, job.get());
  if (!f.run.resume.empty()) {
    guard.saved(start.epoch, start.epoch_step);  // what the file holds already
    const std::string bound_note = guard.resumed(resumed, f.run.resume);
    if (!bound_note.empty()) resume_notes.push_back(bound_note);
    std::printf("mnist: resuming %s %s; saving to %s\n", f.run.resume.c_str(),
                examples::describe_position(start, batches).c_str(), save_path.c_str());
    for (const std::string& note : resume_notes) std::printf("mnist: %s\n", note.c_str());
  }
  std::fflush(stdout);
  if (start.epoch >= f.epochs) {
    std::printf("mnist: %s already holds the whole run (%s): nothing to do\n", f.run.resume.c_str(),
                examples::describe_position(start, batches).c_str());
    return 0;
  }

  // --cuda-graph: the step replayed from a CUDA graph (examples/mnist/train_step.h).
  std::unique_ptr<mnist::GraphedTrainStep> graphed;
  if (use_cuda_graph) graphed = std::make_unique<mnist::GraphedTrainStep>(*model, optimizer, device);

  // What every save holds: the model, Adam, and what --resume needs (examples/run_state.h). Every rank
  // calls it (rank 0 writes), after the guard has checked what is saved.
  const auto save = [&](const examples::RunPosition& at, const examples::Metadata& extra) {
    if (root) {
      examples::Metadata meta = examples::resumable_metadata(settings, f.seed, at);
      meta["normalization"] = str_cat("(x/255 - ", kMnistMean, ") / ", kMnistStd);
      for (const auto& [key, value] : examples::fingerprint_metadata(data.fingerprints)) meta[key] = value;
      for (const auto& [key, value] : guard.metadata()) meta[key] = value;
      for (const auto& [key, value] : extra) meta[key] = value;
      save_checkpoint(save_path, *model, &optimizer, meta);
      if (at.mid_epoch())
        std::printf("mnist: saved %s (%s)\n", save_path.c_str(), examples::describe_position(at, batches).c_str());
      else
        std::printf("mnist: saved %s\n", save_path.c_str());
    }
    guard.saved(at.epoch, at.epoch_step);  // a later divergence message says what the file holds
  };
  int64_t run_step = start.step;
  for (int epoch = static_cast<int>(start.epoch) + 1; epoch <= f.epochs; ++epoch) {
    model->train();
    Progress progress(str_cat("epoch ", epoch, "/", f.epochs), batches);
    RunningStats stats(&guard);
    // A run resumed in the middle of this epoch: its first epoch_step batches are done, and their sums
    // (over every rank) are in the file: rank 0 starts from them.
    const bool resumed_mid_epoch = epoch == start.epoch + 1 && start.mid_epoch();
    int64_t epoch_step = resumed_mid_epoch ? start.epoch_step : 0;
    int64_t samples_before = 0;  // of this epoch, trained before this invocation
    if (resumed_mid_epoch) {
      if (root) stats.restore(start.epoch_sums);
      samples_before = static_cast<int64_t>(start.epoch_sums.at(2));
      progress.resumed_at(epoch_step, samples_before);
    }
    for (Batch& batch : train_loader.epoch(epoch - 1, epoch_step)) {
      if (dp) dp->begin_step(batch.size(), batch.global_size);
      const double lr = optimizer.lr();
      const Tensor targets = batch.targets.to(device);  // already there when the data is resident
      const auto [logits, loss] = graphed ? (*graphed)(batch.inputs.to(device), targets)
                                          : mnist::train_step(*model, optimizer, batch.inputs.to(device), targets, [&] {
                                              if (dp) dp->finish_step();
                                            });
      if (scheduler && per_batch_schedule) scheduler->step();
      stats.add(loss, logits, targets, ++run_step, lr);
      ++epoch_step;
      if (progress.due(epoch_step)) {
        stats.flush();
        progress.update(epoch_step, stats.count(), stats.mean_loss(), stats.accuracy());
      }
      if (job && run_step % examples::kStepsBetweenAgreements == 0) {  // every rank stops if one diverged
        stats.flush();
        guard.agree();
      }
      // --save-every, --stop-after-steps, Ctrl-C: a save in the middle of the epoch, after the same checks
      // as an epoch's end (every loss so far, every parameter), and perhaps the end of this invocation.
      const examples::RunControl::Decision decision = control.after_step(run_step, epoch_step == batches);
      if (decision.save || decision.stop) {
        progress.clear();  // a live progress line is drawn again at the next update
        stats.flush();
        const examples::RunPosition at{epoch - 1, epoch_step, run_step, dp ? dp->sum(stats.sums()) : stats.sums()};
        examples::with_averaged_buffers(*model, dp.get(), [&] {  // batch-norm statistics, if it had any
          guard.check_state(*model, &optimizer, epoch, run_step, optimizer.lr());
          guard.agree();
          if (decision.save) save(at, {});
        });
        if (decision.stop) {
          std::printf("%s\n", control.stop_message(at, batches, decision.save).c_str());
          return control.exit_status();
        }
      }
    }
    stats.flush();
    if (dp) dp->average_buffers();  // batch-norm statistics, if the model had any: checked, evaluated, saved
    guard.check_state(*model, &optimizer, epoch, run_step, optimizer.lr());
    guard.agree();
    if (dp) stats.sum_over_ranks(*dp);
    if (scheduler && !per_batch_schedule) scheduler->step();
    const double train_seconds = progress.elapsed_seconds();
    progress.clear();
    if (eval_loader) {
      result = evaluate(*model, *eval_loader, device, dp.get());
      guard.check_eval_loss(result.loss, data.eval_name.c_str(), epoch, run_step);
      guard.agree();
    }
    const double seconds = progress.elapsed_seconds();
    const double since_start = seconds_since_created();
    // This invocation's images: a resumed epoch's first steps ran in another one.
    const double images_per_second = static_cast<double>(stats.count() - samples_before) / train_seconds;

    char summary[320];
    std::snprintf(summary, sizeof summary, "epoch %d/%d: train loss %.4f, accuracy %s%s | %s, %.0f images/s", epoch,
                  f.epochs, stats.mean_loss(), percent(stats.accuracy()).c_str(),
                  eval_loader ? str_cat(" | ", data.eval_name, " loss ", number_4(result.loss), ", accuracy ",
                                        percent(result.accuracy)).c_str()
                              : "",
                  format_duration(seconds).c_str(), images_per_second);
    progress.finish(summary);
    if (graphed && epoch == start.epoch + 1) std::printf("mnist: CUDA graphs: %s\n", graphed->describe().c_str());
    const std::string eval_key = data.eval_name == "test" ? "test" : "val";
    if (metrics) {
      nlohmann::json record = {{"epoch", epoch},
                               {"step", run_step},
                               {"images", stats.count()},
                               {"train_loss", stats.mean_loss()},
                               {"train_accuracy", stats.accuracy()}};
      if (eval_loader) {
        record[eval_key + "_loss"] = result.loss;
        record[eval_key + "_accuracy"] = result.accuracy;
      }
      record["seconds"] = seconds;
      record["seconds_since_start"] = since_start;
      record["train_seconds"] = train_seconds;
      record["images_per_second"] = images_per_second;
      record["device"] = device.str();
      record["batch_size"] = f.batch;
      record["lr"] = optimizer.lr();
      metrics->write(record);
    }
    const examples::RunPosition at{epoch, 0, run_step, {}};
    if (!save_path.empty())
      save(at, eval_loader ? examples::Metadata{{eval_key + "_accuracy", std::to_string(result.accuracy)}}
                           : examples::Metadata{});
    std::fflush(stdout);
    if (f.target_accuracy > 0 && result.accuracy >= f.target_accuracy) {
      std::printf("mnist: %s accuracy %s reached --target-accuracy %g after epoch %d (step %lld), %.3f s after "
                  "the model was created\n",
                  data.eval_name.c_str(), percent(result.accuracy).c_str(), f.target_accuracy, epoch,
                  static_cast<long long>(run_step), since_start);
      return 0;
    }
    if (control.after_epoch(run_step, epoch == f.epochs)) {
      std::printf("%s\n", control.stop_message(at, batches, !save_path.empty()).c_str());
      return control.exit_status();
    }
  }
  if (eval_loader) {
    std::printf("final %s accuracy: %s (%lld/%lld)\n", data.eval_name.c_str(), percent(result.accuracy).c_str(),
                static_cast<long long>(result.correct), static_cast<long long>(result.count));
    std::printf("mnist: %.3f s from the model's creation to the last evaluation\n", seconds_since_created());
  }
  if (f.target_accuracy > 0) {
    std::printf("mnist: --target-accuracy %g not reached in %d epoch(s) (last %s accuracy %s)\n", f.target_accuracy,
                f.epochs, data.eval_name.c_str(), percent(result.accuracy).c_str());
    return 4;
  }
  return 0;
}

// ------------------------------------------------------------------ mnist eval / predict

std::shared_ptr<Sequential> load_model(const std::string& path, Device device) {
  const Checkpoint file = read_checkpoint(path);
  std::shared_ptr<Sequential> model = mnist::load_model_from(file, path);
  // A model holding NaN or infinity answers nonsense with confidence ("probability nan"): refuse it.
  for (const auto& [name, tensor] : model->state_dict()) {
    const NonFinite bad = first_non_finite(tensor);
    MINIDL_CHECK(!bad.found(), "'", path, "' holds ", number_str(bad.value), " in '", name, "' at ",
                 index_str(tensor.shape(), bad.index), ": it was saved by a run that diverged; train again");
  }
  model->to(device);
  model->eval();
  return model;
}

int eval(const std::string& model_path, const std::string& data, const std::string& device_flag,
         const std::vector<std::string>& kernels, bool deterministic) {
  select_kernels_from_flags(kernels);
  set_deterministic_algorithms(deterministic);
  const Device device = choose_device(device_flag);
  std::shared_ptr<Sequential> model = load_model(model_path, device);
  const std::string dir = find_mnist_dir(data);
  auto test_set = std::make_shared<TensorDataset>(load_mnist(dir, /*train=*/false));
  MINIDL_CHECK(test_set->size() > 0, "the test set in ", dir, " (t10k-images-idx3-ubyte) has no images");
  DataLoaderOptions options;
  options.batch_size = eval_batch_size(device);
  DataLoader loader(test_set, options);
  const EvalResult r = evaluate(*model, loader, device);
  // Finite weights can still be absurd (1e30, saved by a run that diverged): then the outputs are not
  // numbers, and neither is the loss.
  MINIDL_CHECK(std::isfinite(r.loss), "'", model_path, "' gives a test loss of ", number_str(r.loss),
               ": its outputs are NaN or infinite (weights of a run that diverged); train again");
  std::printf("test loss: %.4f\ntest accuracy: %s (%lld/%lld)\n", r.loss, percent(r.accuracy).c_str(),
              static_cast<long long>(r.correct), static_cast<long long>(r.count));
  return 0;
}

// An image file as the model expects it: gray, 28x28, a white digit on black (MNIST's polarity; an
// image whose border is bright is a dark digit on a light background and is inverted), normalised.
Tensor image_as_input(const std::string& path, bool& inverted) {
  Image img = resize_image(load_image(path, 1), 28, 28);
  double border = 0;
  int n = 0;
  for (int i = 0; i < 28; ++i) {
    border += img.at(0, i) + img.at(27, i) + img.at(i, 0) + img.at(i, 27);
    n += 4;
  }
  inverted = border / n > 127;
  std::vector<float> pixels(28 * 28);
  for (int i = 0; i < 28 * 28; ++i) {
    const uint8_t p = img.pixels[i];
    pixels[i] = mnist_normalize(inverted ? static_cast<uint8_t>(255 - p) : p);
  }
  return from_data(pixels.data(), {1, 1, 28, 28}, Device::cpu());
}

int predict(const std::string& model_path, const std::vector<std::string>& images, const std::string& device_flag,
            const std::vector<std::string>& kernels) {
  select_kernels_from_flags(kernels);
  const Device device = choose_device(device_flag);
  std::shared_ptr<Sequential> model = load_model(model_path, device);
  NoGradGuard no_grad;
  int failures = 0;
  for (const std::string& path : images) {
    try {
      bool inverted = false;
      const Tensor x = image_as_input(path, inverted);
      const std::vector<float> p = softmax((*model)(x.to(device)), 1).to_vector<float>();
      for (float v : p)
        MINIDL_CHECK(std::isfinite(v), path, ": the model's probabilities are ", number_str(v), ": '", model_path,
                     "' holds weights of a run that diverged; train again");
      int best = 0;
      for (int d = 1; d < 10; ++d)
        if (p[d] > p[best]) best = d;
      std::printf("%s: %d (probability %.4f)%s\n", path.c_str(), best, p[best],
                  inverted ? "  [inverted: dark digit on a light background]" : "");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mnist: %s\n", e.what());
      ++failures;
    }
  }
  return failures ? 1 : 0;
}

// predict --csv: a digit for every row of a CSV file in Kaggle's format (nn/image_csv.h; a label column,
// if the file has one, is only used to report the accuracy), written as Kaggle's submission file:
// "ImageId,Label", then "<row number from 1>,<digit>" per row. The --out path is checked before any work,
// and the file is written at the end, atomically (nn/checkpoint.h write_file_atomically): a failure at
// any point (a malformed row, say) leaves no file, or the previous one whole.
int predict_csv(const std::string& model_path, const std::string& csv, const std::string& out,
                const std::string& device_flag, const std::vector<std::string>& kernels) {
  select_kernels_from_flags(kernels);
  check_outputs_are_not_inputs({{"--out", out}}, {{"--model", model_path}, {"--csv", csv}});
  const SavePath target = prepare_checkpoint_path(out, "--out");
  if (target.stale_removed > 0)
    std::printf("mnist: removed %d temporary file(s) %s.tmp-* left by interrupted writes\n", target.stale_removed,
                target.target.c_str());
  const Device device = choose_device(device_flag);
  std::shared_ptr<Sequential> model = load_model(model_path, device);
  ImageCsvOptions options;
  options.labels = CsvLabels::optional;
  const ImageCsv file = read_image_csv(csv, options);
  MINIDL_CHECK(file.rows > 0, csv, ": no rows after the header");

  NoGradGuard no_grad;
  const int64_t batch = eval_batch_size(device);
  std::string text = "ImageId,Label\n";
  int64_t correct = 0;
  for (int64_t first = 0; first < file.rows; first += batch) {
    const int64_t n = std::min(batch, file.rows - first);
    std::vector<float> pixels(static_cast<size_t>(n * 28 * 28));
    const uint8_t* from = file.images.data() + first * 28 * 28;
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = mnist_normalize(from[i]);
    const Tensor x = from_data(pixels.data(), {n, 1, 28, 28}, Device::cpu());
    const Tensor logits = (*model)(x.to(device));
    const NonFinite bad = first_non_finite(logits);
    MINIDL_CHECK(!bad.found(), csv, ": the model's output for row ", first + bad.index / 10 + 1, " is ",
                 number_str(bad.value), ": '", model_path, "' holds weights of a run that diverged; nothing written");
    const std::vector<int64_t> digits = argmax(logits, 1).to_vector<int64_t>();
    for (int64_t k = 0; k < n; ++k) {
      text += str_cat(first + k + 1, ",", digits[k], "\n");
      if (file.labelled) correct += digits[k] == file.labels[first + k];
    }
  }
  write_file_atomically(out, text);
  std::printf("mnist: wrote %lld predictions to %s\n", static_cast<long long>(file.rows), out.c_str());
  if (file.labelled)
    std::printf("accuracy against the labels in %s: %s (%lld/%lld)\n", csv.c_str(),
                percent(static_cast<double>(correct) / file.rows).c_str(), static_cast<long long>(correct),
                static_cast<long long>(file.rows));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mnist: train a CNN on MNIST with minidl, evaluate it, and read digits from image files."};
  app.require_subcommand(1);

  TrainFlags tf;
  CLI::App* train_cmd = app.add_subcommand("train", "train the CNN; prints progress and the final test accuracy");
  train_cmd->add_option("--data", tf.data, "directory with the four MNIST files (default: the first of $MINIDL_DATA/mnist, data/mnist, ../shared/data/mnist that has them), or a CSV file in Kaggle's format (train.csv: label,pixel0,...,pixel783)");
  train_cmd->add_option("--device", tf.device, "auto, cpu or cuda[:N]")->capture_default_str();
  train_cmd->add_option("--epochs", tf.epochs, "passes over the training data")->capture_default_str()
      ->check(number_in(FlagRange::whole<int>(1)));
  train_cmd->add_option("--batch", tf.batch, "batch size")->capture_default_str()
      ->check(number_in(FlagRange::whole<int64_t>(1)));
  train_cmd->add_option("--lr", tf.lr, "Adam learning rate (the peak of the one-cycle schedule)")
      ->capture_default_str()
      ->check(number_in(FlagRange::above(0)));
  train_cmd->add_option("--weight-decay", tf.weight_decay, "decoupled weight decay (AdamW) when > 0; 0: Adam")
      ->capture_default_str()
      ->check(number_in(FlagRange::real(0, 1)));
  train_cmd->add_option("--schedule", tf.schedule, "learning-rate schedule")
      ->capture_default_str()
      ->check(CLI::IsMember({"onecycle", "cosine", "step", "none"}));
  train_cmd->add_option("--limit", tf.limit, "train on the first N training images only (0: all)")
      ->capture_default_str()->check(number_in(FlagRange::whole<int64_t>(0)));
  train_cmd->add_option("--val-split", tf.val_split,
                        "hold out this fraction of the training images, stratified by class and chosen by --seed, "
                        "and evaluate on it after every epoch instead of the test set (default: 0.1 for a CSV "
                        "file, which has no labelled test set; 0 for the IDX files)")
      ->check(number_in(FlagRange::real(0, 1).excluding_hi()));
  train_cmd->add_option("--seed", tf.seed, "seed of initialisation, shuffling and dropout")->capture_default_str()
      ->check(number_in(FlagRange::whole<uint64_t>(0)));
  train_cmd->add_option("--metrics", tf.metrics, 
                  "write one JSON object per epoch to FILE (JSON Lines; a metrics log there is replaced, or "
                  "appended to by --resume; any other file is refused)")
      ->check(non_empty());
  examples::add_run_flags(*train_cmd, tf.run);  // --save, --resume, --save-every, --stop-after-*
  train_cmd->add_option("--kernel", tf.kernels, "select a kernel, OP=NAME (repeatable; see `minidl kernels`)");
  train_cmd->add_flag("--deterministic", tf.deterministic,
                      "on a GPU, only deterministic algorithms, chosen without timing: the same bits every run "
                      "(the CPU always is, for a given thread count)");
  examples::add_precision_flag(train_cmd, tf.precision);
  train_cmd->add_flag("--host-data", tf.host_data,
                      "on a GPU, keep the images in host memory and copy each batch (default: resident on the GPU, "
                      "batches assembled there)");
  train_cmd->add_option("--target-accuracy", tf.target_accuracy,
                        "stop after the first evaluation whose accuracy reaches A (a fraction, e.g. 0.99) and "
                        "report the time since the model was created; exit 4 if no epoch reaches it")
      ->check(number_in(FlagRange::real(0, 1).excluding_lo().with_note("a fraction, e.g. 0.99")));
  train_cmd->add_option("--model", tf.model,
                        "mnist_cnn (the classic PyTorch example's CNN) or mnist_cnn_bn (smaller, with batch norm: the "
                        "fast recipe's; examples/mnist/model.h)")
      ->capture_default_str()
      ->check(CLI::IsMember({mnist::kModelName, mnist::kFastModelName}));
  train_cmd->add_option("--recipe", tf.recipe,
                        "default, or fast: a short run tuned for time to 99% (its --model, --epochs, --batch and --lr "
                        "apply "
                        "where those flags are not given; docs/results/README.md)")
      ->capture_default_str()
      ->check(CLI::IsMember({"default", "fast"}));
  train_cmd->add_flag("--cuda-graph", tf.cuda_graph,
                      "capture forward, loss, backward and Adam as a CUDA graph after two eager steps and replay it "
                      "every step (one launch instead of hundreds; nn/graphed_step.h); the default on one GPU");
  train_cmd->add_flag("--no-cuda-graph", tf.no_cuda_graph, "on a GPU, run every step eagerly")
      ->excludes("--cuda-graph");
  train_cmd->add_flag("--distributed", tf.distributed,
                      "one rank of a data-parallel job: mpirun -np N mnist train --distributed ... (--batch is the "
                      "global batch; --device cuda: one GPU per process; docs/distributed.md)");

  std::string model_path, data, device = "auto";
  std::vector<std::string> kernels, images;
  bool deterministic = false;
  CLI::App* eval_cmd = app.add_subcommand("eval", "print the test loss and accuracy of a saved model");
  eval_cmd->add_option("--model", model_path, "checkpoint saved by `mnist train --save`")->required();
  eval_cmd->add_option("--data", data, "directory with the MNIST files (default: searched as by train)");
  eval_cmd->add_option("--device", device, "auto, cpu or cuda[:N]")->capture_default_str();
  eval_cmd->add_option("--kernel", kernels, "select a kernel, OP=NAME (repeatable)");
  eval_cmd->add_flag("--deterministic", deterministic, "on a GPU, only deterministic algorithms");

  std::string csv, out;
  CLI::App* predict_cmd = app.add_subcommand(
      "predict", "print the digit in each image file and its probability, or write a digit for every row of a CSV file");
  predict_cmd->add_option("--model", model_path, "checkpoint saved by `mnist train --save`")->required();
  CLI::Option* image_opt = predict_cmd->add_option("IMAGE", images, "image files (PNG, JPEG or BMP)");
  CLI::Option* csv_opt = predict_cmd->add_option(
      "--csv", csv, "a CSV file of images in Kaggle's format (test.csv: pixel0,...,pixel783), instead of IMAGE files")
      ->check(non_empty());
  CLI::Option* out_opt = predict_cmd->add_option(
      "--out", out, "with --csv: the submission file to write, ImageId,Label (atomically)")
      ->check(non_empty());
  csv_opt->excludes(image_opt);
  csv_opt->needs(out_opt);
  out_opt->needs(csv_opt);
  predict_cmd->add_option("--device", device, "auto, cpu or cuda[:N]")->capture_default_str();
  predict_cmd->add_option("--kernel", kernels, "select a kernel, OP=NAME (repeatable)");

  const mnist::BenchCommand bench_cmd = mnist::add_bench_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "mnist: %s\nRun `mnist --help` or `mnist <command> --help` for usage.\n",
                 examples::parse_error_message(e).c_str());
    return 2;
  }

  try {
    check_environment();  // MINIDL_CUDA_MEMORY_LIMIT, MINIDL_CHECK_NUMERICS: a typo fails before any work
    check_fusion_environment();  // MINIDL_FUSE_RELU (nn/layers.h)
    if (*train_cmd) {
      apply_recipe(tf, *train_cmd);
      return train(tf);
    }
    if (*eval_cmd) return eval(model_path, data, device, kernels, deterministic);
    if (*predict_cmd) {
      if (!csv.empty()) return predict_csv(model_path, csv, out, device, kernels);
      MINIDL_CHECK(!images.empty(), "predict: give image files, or --csv FILE --out FILE");
      return predict(model_path, images, device, kernels);
    }
    if (*bench_cmd.app) return bench_cmd.run();
  } catch (const OutputIsInputError& e) {
    return dist::report_error(e, "mnist", 2);  // an output names an input: a usage error (nn/files.h)
  } catch (const NonFiniteError& e) {
    // Training diverged (examples/train_guard.h; or MINIDL_CHECK_NUMERICS found a NaN): exit status 3. In
    // a job, when only this rank found it, the whole job ends with that status.
    return dist::report_error(e, "mnist", examples::kExitNonFinite);
  } catch (const std::exception& e) {
    return dist::report_error(e, "mnist");  // "mnist: <message>"; in a job, ends the job when only this rank failed
  }
  return 0;
}
