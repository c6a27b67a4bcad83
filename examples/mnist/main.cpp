// examples/mnist/main.cpp — `mnist`: train, evaluate and use a CNN on MNIST.
//
//   mnist train [--data DIR] [--device auto|cpu|cuda] [--epochs N] [--batch N] [--lr X] [--limit N]
//               [--schedule onecycle|cosine|step|none] [--seed N] [--metrics FILE] [--save FILE]
//               [--kernel OP=NAME]... [--deterministic] [--distributed]
//   mnist eval --model FILE [--data DIR] [--deterministic]
//   mnist predict --model FILE IMAGE...
//   mnist bench [--device auto|cpu|cuda] [--batch N] [--warmup N] [--steps N] [--json FILE]
//               (training-step timing on a synthetic batch: examples/mnist/bench.cpp)
//
// Defaults: 3 epochs, batch 64, Adam whose lr follows a one-cycle schedule peaking at --lr 2e-3 (a short
// warm-up, then cosine decay to almost zero over the whole run: the decay is what lifts a 3-epoch run
// from about 98.9% to 99%+ test accuracy), seed 1, every training image. --schedule cosine decays from
// --lr per batch, step multiplies it by 0.7 each epoch (PyTorch's MNIST example), none keeps it.
// --metrics writes per epoch: epoch, step (optimizer steps so far), images (training images this epoch),
// train_loss, train_accuracy, test_loss, test_accuracy, seconds (the epoch's wall time, test included),
// train_seconds, images_per_second (images / train_seconds), device, batch_size, lr.
// The loop is the usual one (examples/mnist/train_step.h): forward, cross-entropy, zero_grad, backward,
// step; evaluation runs in eval() mode under NoGradGuard.
// Reliability: flags, MINIDL_* variables, the data and the --save path are checked before training starts;
// a NaN or infinite loss stops the run at once, naming the step and learning rate, and the --save file
// keeps the last good epoch (examples/train_guard.h); saves are atomic (nn/checkpoint.h). The same seed
// and thread count give the same bits on the CPU; --deterministic does the same on a GPU
// (core/determinism.h).
// --distributed: this process is one rank of a data-parallel job started by `mpirun -np N mnist train
// --distributed ...` (docs/distributed.md): --batch stays the global batch, each rank trains on its part of
// every batch (a sharded loader) and evaluates its part of the test set; gradients and metrics are summed
// over the ranks (dist/data_parallel.h); only rank 0 prints, writes --metrics, checks the --save path and
// saves. A NaN or infinite loss on any rank stops every rank together (examples/train_guard.h).
// Errors print "mnist: <message>" and exit with status 1 (2 for bad flags, 3 when training diverged).
#include <CLI/CLI.hpp>
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
#include "examples/train_guard.h"
#include "nn/checkpoint.h"
#include "nn/lr_schedule.h"
#include "nn/data.h"
#include "nn/image.h"
#include "nn/metrics.h"
#include "nn/mnist.h"
#include "nn/optim.h"
#include "nn/progress.h"
#include "ops/ops.h"

using namespace minidl;
using examples::at_least;
using examples::finite_positive;
using examples::non_empty;

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
  void add(const Tensor& loss, const Tensor& logits, const Tensor& cpu_targets, int64_t step = 0, double lr = 0) {
    losses_.push_back(loss.detach().reshape({1}));
    predictions_.push_back(argmax(logits.detach(), 1));
    targets_.push_back(cpu_targets);
    steps_.emplace_back(step, lr);
    if (losses_.size() >= 64) flush();
  }
  void flush() {
    if (losses_.empty()) return;
    const std::vector<double> losses = concat(losses_, 0).to_vector<double>();
    const std::vector<int64_t> predicted = concat(predictions_, 0).to_vector<int64_t>();
    size_t k = 0;
    for (size_t b = 0; b < targets_.size(); ++b) {
      if (guard_) guard_->check_loss(losses[b], steps_[b].first, steps_[b].second);
      const std::vector<int64_t> y = targets_[b].to_vector<int64_t>();
      loss_sum_ += losses[b] * static_cast<double>(y.size());
      for (int64_t label : y) correct_ += predicted[k++] == label;
      count_ += static_cast<int64_t>(y.size());
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
    const Tensor logits = model(batch.inputs.to(device));
    stats.add(cross_entropy(logits, batch.targets.to(device)), logits, batch.targets);
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

// ------------------------------------------------------------------ mnist train

struct TrainFlags {
  std::string data, device = "auto", metrics, save, schedule = "onecycle";
  int epochs = 3;
  int64_t batch = 64, limit = 0;
  double lr = 2e-3;
  uint64_t seed = 1;
  bool deterministic = false;
  std::vector<std::string> kernels;
  bool distributed = false;
};

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

int train(const TrainFlags& f) {
  select_kernels_from_flags(f.kernels);
  set_deterministic_algorithms(f.deterministic);  // before the first GPU op (core/determinism.h)
  std::unique_ptr<dist::DistributedRun> job;  // --distributed: this rank's place in the job
  if (f.distributed)
    job = std::make_unique<dist::DistributedRun>(dist::start_distributed("mnist", f.device, f.batch));
  const bool root = !job || job->is_root();  // prints (the others' stdout is /dev/null), writes and saves
  // The --save path is checked before any work (a missing folder should not cost an epoch). In a job,
  // rank 0 alone checks it and removes stale temporary files (it alone saves; two ranks' clean-ups could
  // remove each other's files), and every rank stops if the check fails.
  if (!f.save.empty()) {
    const auto check_save_path = [&] {
      const SavePath save = prepare_checkpoint_path(f.save, "--save");
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
  const std::string dir = find_mnist_dir(f.data);
  auto train_set = std::make_shared<TensorDataset>(load_mnist(dir, /*train=*/true, f.limit));
  std::shared_ptr<Dataset> test_set = std::make_shared<TensorDataset>(load_mnist(dir, /*train=*/false));
  std::printf("mnist: data from %s: %lld training images%s, %lld test images\n", dir.c_str(),
              static_cast<long long>(train_set->size()), f.limit > 0 ? " (--limit)" : "",
              static_cast<long long>(test_set->size()));
  MINIDL_CHECK(train_set->size() > 0, "the training set in ", dir, " (train-images-idx3-ubyte) has no images");
  MINIDL_CHECK(test_set->size() > 0, "the test set in ", dir, " (t10k-images-idx3-ubyte) has no images");

  manual_seed(f.seed);
  std::shared_ptr<Sequential> model = mnist::make_model();
  model->to(device);  // before building the optimizer (nn/module.h)
  std::unique_ptr<dist::DataParallel> dp;
  if (job) {
    // Rank 0's weights go to every rank; MINIDL_DIST_BUCKET_MB and MINIDL_DIST_OVERLAP may change the buckets.
    dp = std::make_unique<dist::DataParallel>(*model, *job->communicator,
                                              dist::DataParallelOptions::from_environment());
    std::printf("mnist: gradients in %zu buckets, all-reduced during backward:\n%s", dp->bucket_count(),
                dp->describe_buckets().c_str());
    const Range part = shard_range(test_set->size(), job->rank, job->world_size);  // this rank's test images
    test_set = std::make_shared<DatasetSlice>(test_set, part.begin, part.end);
  }
  AdamOptions adam_options;
  adam_options.lr = f.lr;
  Adam optimizer(model->parameters(), adam_options);

  DataLoaderOptions train_options;
  train_options.batch_size = f.batch;
  train_options.shuffle = true;
  train_options.seed = f.seed;
  if (job) {  // this rank's part of every batch
    train_options.shard_index = job->rank;
    train_options.shard_count = job->world_size;
  }
  DataLoader train_loader(train_set, train_options);
  check_step_count(f, train_loader.num_batches(), train_set->size());
  // Per-batch schedules step after every optimizer step; StepLR after every epoch.
  const int64_t total_steps = static_cast<int64_t>(f.epochs) * train_loader.num_batches();
  std::unique_ptr<LRScheduler> scheduler;
  if (f.schedule == "onecycle")
    scheduler = std::make_unique<OneCycleLR>(optimizer, f.lr, total_steps);
  else if (f.schedule == "cosine")
    scheduler = std::make_unique<CosineAnnealingLR>(optimizer, total_steps);
  else if (f.schedule == "step")
    scheduler = std::make_unique<StepLR>(optimizer, 1, 0.7);
  const bool per_batch_schedule = f.schedule == "onecycle" || f.schedule == "cosine";

  DataLoaderOptions test_options;
  test_options.batch_size = eval_batch_size(device);
  DataLoader test_loader(test_set, test_options);
  std::unique_ptr<MetricsWriter> metrics;
  if (!f.metrics.empty() && root) metrics = std::make_unique<MetricsWriter>(f.metrics);

  std::printf("mnist: model %s, %lld parameters; Adam lr %g (schedule %s); %d epoch(s) of %lld batches of %lld\n",
              mnist::kModelName, static_cast<long long>(model->parameter_count()), f.lr, f.schedule.c_str(), f.epochs,
              static_cast<long long>(train_loader.num_batches()), static_cast<long long>(f.batch));
  std::fflush(stdout);

  EvalResult test;
  examples::DivergenceGuard guard(f.save, job.get());
  int64_t run_step = 0;
  for (int epoch = 1; epoch <= f.epochs; ++epoch) {
    model->train();
    Progress progress(str_cat("epoch ", epoch, "/", f.epochs), train_loader.num_batches());
    RunningStats stats(&guard);
    int64_t step = 0;
    for (Batch& batch : train_loader.epoch(epoch - 1)) {
      if (dp) dp->begin_step(batch.size(), batch.global_size);
      const double lr = optimizer.lr();
      const auto [logits, loss] = mnist::train_step(*model, optimizer, batch.inputs.to(device),
                                                    batch.targets.to(device), [&] {
                                                      if (dp) dp->finish_step();
                                                    });
      if (scheduler && per_batch_schedule) scheduler->step();
      stats.add(loss, logits, batch.targets, ++run_step, lr);
      ++step;
      if (progress.due(step)) {
        stats.flush();
        progress.update(step, stats.count(), stats.mean_loss(), stats.accuracy());
      }
      if (job && run_step % examples::kStepsBetweenAgreements == 0) {  // every rank stops if one diverged
        stats.flush();
        guard.agree();
      }
    }
    stats.flush();
    if (dp) dp->average_buffers();  // batch-norm statistics, if the model had any: checked, evaluated, saved
    guard.check_model(*model, epoch, run_step, optimizer.lr());
    guard.agree();
    if (dp) stats.sum_over_ranks(*dp);
    if (scheduler && !per_batch_schedule) scheduler->step();
    const double train_seconds = progress.elapsed_seconds();
    progress.clear();
    test = evaluate(*model, test_loader, device, dp.get());
    guard.check_eval_loss(test.loss, "test", epoch, run_step);
    guard.agree();
    const double seconds = progress.elapsed_seconds();
    const double images_per_second = stats.count() / train_seconds;

    char summary[256];
    std::snprintf(summary, sizeof summary,
                  "epoch %d/%d: train loss %.4f, accuracy %s | test loss %.4f, accuracy %s | %s, %.0f images/s", epoch,
                  f.epochs, stats.mean_loss(), percent(stats.accuracy()).c_str(), test.loss,
                  percent(test.accuracy).c_str(), format_duration(seconds).c_str(), images_per_second);
    progress.finish(summary);
    if (metrics)
      metrics->write({{"epoch", epoch},
                      {"step", run_step},
                      {"images", stats.count()},
                      {"train_loss", stats.mean_loss()},
                      {"train_accuracy", stats.accuracy()},
                      {"test_loss", test.loss},
                      {"test_accuracy", test.accuracy},
                      {"seconds", seconds},
                      {"train_seconds", train_seconds},
                      {"images_per_second", images_per_second},
                      {"device", device.str()},
                      {"batch_size", f.batch},
                      {"lr", optimizer.lr()}});
    if (!f.save.empty()) {
      if (root) {
        save_checkpoint(f.save, *model, &optimizer,
                        {{"model", mnist::kModelName},
                         {"epoch", std::to_string(epoch)},
                         {"test_accuracy", std::to_string(test.accuracy)},
                         {"normalization", str_cat("(x/255 - ", kMnistMean, ") / ", kMnistStd)}});
        std::printf("mnist: saved %s\n", f.save.c_str());
      }
      guard.saved(epoch);  // every rank: a later divergence message says what the file holds
    }
  }
  std::printf("final test accuracy: %s (%lld/%lld)\n", percent(test.accuracy).c_str(),
              static_cast<long long>(test.correct), static_cast<long long>(test.count));
  return 0;
}

// ------------------------------------------------------------------ mnist eval / predict

std::shared_ptr<Sequential> load_model(const std::string& path, Device device) {
  const Checkpoint file = read_checkpoint(path);
  std::shared_ptr<Sequential> model = mnist::make_model();
  mnist::load_model_from(file, path, *model);
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mnist: train a CNN on MNIST with minidl, evaluate it, and read digits from image files."};
  app.require_subcommand(1);

  TrainFlags tf;
  CLI::App* train_cmd = app.add_subcommand("train", "train the CNN; prints progress and the final test accuracy");
  train_cmd->add_option("--data", tf.data, "directory with the four MNIST files (default: the first of $MINIDL_DATA/mnist, data/mnist, ../shared/data/mnist that has them)");
  train_cmd->add_option("--device", tf.device, "auto, cpu or cuda[:N]")->capture_default_str();
  train_cmd->add_option("--epochs", tf.epochs, "passes over the training data")->capture_default_str()
      ->check(at_least(1));
  train_cmd->add_option("--batch", tf.batch, "batch size")->capture_default_str()->check(at_least(1));
  train_cmd->add_option("--lr", tf.lr, "Adam learning rate (the peak of the one-cycle schedule)")
      ->capture_default_str()
      ->check(finite_positive());
  train_cmd->add_option("--schedule", tf.schedule, "learning-rate schedule")
      ->capture_default_str()
      ->check(CLI::IsMember({"onecycle", "cosine", "step", "none"}));
  train_cmd->add_option("--limit", tf.limit, "train on the first N training images only (0: all)")
      ->capture_default_str()->check(at_least(0));
  train_cmd->add_option("--seed", tf.seed, "seed of initialisation, shuffling and dropout")->capture_default_str();
  train_cmd->add_option("--metrics", tf.metrics, "write one JSON object per epoch to FILE (JSON Lines)")
      ->check(non_empty());
  train_cmd->add_option("--save", tf.save,
                        "save model and optimizer to FILE after each epoch (atomically; a symbolic link's target "
                        "is replaced, a file keeps its permissions)")
      ->check(non_empty());
  train_cmd->add_option("--kernel", tf.kernels, "select a kernel, OP=NAME (repeatable; see `minidl kernels`)");
  train_cmd->add_flag("--deterministic", tf.deterministic,
                      "on a GPU, only deterministic algorithms, chosen without timing: the same bits every run "
                      "(the CPU always is, for a given thread count)");
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

  CLI::App* predict_cmd = app.add_subcommand("predict", "print the digit in each image file and its probability");
  predict_cmd->add_option("--model", model_path, "checkpoint saved by `mnist train --save`")->required();
  predict_cmd->add_option("IMAGE", images, "image files (PNG, JPEG or BMP)")->required();
  predict_cmd->add_option("--device", device, "auto, cpu or cuda[:N]")->capture_default_str();
  predict_cmd->add_option("--kernel", kernels, "select a kernel, OP=NAME (repeatable)");

  const mnist::BenchCommand bench_cmd = mnist::add_bench_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "mnist: %s\nRun `mnist --help` or `mnist <command> --help` for usage.\n", e.what());
    return 2;
  }

  try {
    check_environment();  // MINIDL_CUDA_MEMORY_LIMIT, MINIDL_CHECK_NUMERICS: a typo fails before any work
    if (*train_cmd) return train(tf);
    if (*eval_cmd) return eval(model_path, data, device, kernels, deterministic);
    if (*predict_cmd) return predict(model_path, images, device, kernels);
    if (*bench_cmd.app) return bench_cmd.run();
  } catch (const NonFiniteError& e) {
    // Training diverged (examples/train_guard.h; or MINIDL_CHECK_NUMERICS found a NaN): exit status 3. In
    // a job, when only this rank found it, the whole job ends with that status.
    return dist::report_error(e, "mnist", examples::kExitNonFinite);
  } catch (const std::exception& e) {
    return dist::report_error(e, "mnist");  // "mnist: <message>"; in a job, ends the job when only this rank failed
  }
  return 0;
}
