// examples/captcha/train.cpp — `captcha train`: train the CNN + bidirectional GRU + CTC recognizer.
//
//   captcha train [--device auto|cpu|cuda] [--steps N | --epochs N] [--epoch-size N] [--batch N] [--lr X]
//                 [--schedule cosine|constant] [--data DIR] [--val-data DIR] [--val-count N] [--charset S]
//                 [--length N|A-B] [--width W --height H] [--seed N] [--metrics FILE] [--save FILE]
//                 [--kernel OP=NAME]... [--threads N] [--rnn gru|lstm] [--gru auto|fused|composed|sequence]
//                 [--channels A,B,...]
//                 [--convs-per-block N] [--hidden N] [--dropout P] [--save-every N] [--resume FILE]
//                 [--resume-other-data]
//                 [--stop-after-epochs N] [--stop-after-steps N] [--deterministic] [--precision fp32|tf32|bf16]
//                 [--distributed]
//                 [--augment LIST | --no-augment] [--augment-strength X] [--weight-decay W]
//                 [--save-best FILE] [--early-stop N]
//
// Training data: without --data, captchas rendered on the fly (examples/data/captcha_data.h GeneratedCaptchaDataset:
// the prefetch thread of the DataLoader renders each batch on --threads threads while the model trains on
// the previous one); an epoch is --epoch-size fresh captchas (captcha i of seed S, never repeated). With
// --data DIR, the labelled images of DIR (examples/data/captcha_data.h), shuffled each epoch and augmented on the fly
// (nn/augment.h: small affine warps, scale, translation, blur, contrast, colour, inversion, noise; sample i
// of epoch e gets the variant (seed, e, i), so runs and --resume stay exact): --augment LIST chooses the
// transforms, --augment-strength scales them, --no-augment turns them off. Validation images never are.
// Validation after every epoch: --val-data DIR, with --data or with generated training data (how well a
// model trained on generated captchas reads a site's real ones); else, for generated training data,
// --val-count captchas of seed S + 1 (fixed for the run, disjoint from training); else every k-th image
// of --data, held out.
// Loss: ctc_loss over all T time steps (zero_infinity: a label no alignment fits adds nothing rather
// than inf). Adam, by default with a cosine decay of the learning rate to 1% over the whole run; with
// --weight-decay W > 0, AdamW (decoupled weight decay, nn/optim.h). Default W: 0.01 with --data (a small
// folder is learnt by heart; 0.01 is AdamW's usual default), 0 for generated captchas (endless data does
// not overfit, and Adam keeps their runs and files as they were).
// --save-best FILE also saves the model of the epoch with the best validation whole-captcha accuracy
// (ties: the lower validation loss; examples/best_checkpoint.h); --early-stop N ends the run after N
// epochs in a row without a new best. --save keeps saving the last epoch.
// --save writes the model after every epoch (and every --save-every N steps) with its configuration,
// charset and label length in the metadata; `captcha eval` tests on seed S + 2 by default. The file also
// holds what a resumed run needs (examples/run_state.h): the Adam state, the position (epoch, step within
// it, step of the run), the position of the global random stream and the run's settings. --resume FILE
// continues such a run where it stopped, mid-epoch included, with the same flags; the result is bit for
// bit the uninterrupted run's on the same machine and kernels (tests/captcha_resume_test.sh). The run
// keeps saving to FILE unless --save says otherwise, and appends to --metrics. --stop-after-epochs N and
// --stop-after-steps N end this invocation (to continue later): long CPU runs, or time-limited GPU
// slots. Ctrl-C or SIGTERM finishes the current step, saves, prints how to resume and exits with 130
// (143 for SIGTERM).
// Reliability, as in `mnist train` (README.md, "Reliability: what is guaranteed"): flags (examples/flags.h),
// MINIDL_* variables and the save path are checked before any work; no output (--save, --save-best,
// --metrics) may be an input (--data, --val-data, --resume) or lie inside an input folder (nn/files.h);
// a NaN, infinite or runaway loss stops the run naming the step and learning rate, exit status 3, and
// the save file keeps the last good state (examples/train_guard.h); --resume refuses images whose
// fingerprint differs from the file's, naming --data or --val-data (--resume-other-data goes on, saying
// so: examples/run_state.h). --deterministic: the same bits on a GPU
// for the same flags (core/determinism.h); the CPU always gives them for the same --threads and
// OMP_NUM_THREADS.
// --distributed: one rank of a data-parallel job, `mpirun -np N captcha train --distributed ...`
// (docs/distributed.md): --batch stays the global batch; each rank trains on its part of every batch and
// validates on its part of the validation set; gradients, losses and accuracies are summed over the ranks
// and batch-norm statistics averaged before each validation; only rank 0 prints, writes, checks the save
// path and saves. Batch norm normalises over each rank's part (no synchronised batch norm). A file saved
// by a job of any size resumes in a job of any size that divides --batch (--resume FILE must be readable
// on every rank). A NaN or infinite loss on any rank stops every rank together, exit status 3
// (examples/train_guard.h), and so does Ctrl-C on any rank (examples/run_state.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/determinism.h"
#include "core/dispatch.h"
#include "core/random.h"
#include "dist/data_parallel.h"
#include "dist/launch.h"
#include "examples/best_checkpoint.h"
#include "examples/flags.h"
#include "examples/captcha/common.h"
#include "examples/run_state.h"
#include "examples/train_guard.h"
#include "examples/training_loop.h"
#include "nn/augment.h"
#include "examples/data/captcha_data.h"
#include "nn/checkpoint.h"
#include "nn/ctc_decode.h"
#include "nn/lr_schedule.h"
#include "nn/metrics.h"
#include "nn/optim.h"
#include "nn/progress.h"

using namespace minidl;
using examples::non_empty;
using examples::number_in;
using examples::FlagRange;

namespace captcha {

namespace {

struct TrainArgs {
  std::string device = "auto", data, val_data, metrics;
  std::string charset = CaptchaOptions().charset, length = "4", rnn = "gru", gru = "auto", schedule = "cosine";
  std::string channels = "32,64,128,256,256";
  std::string augment = "all", save_best;
  bool no_augment = false;
  double augment_strength = 1.0;
  double weight_decay = -1;  // < 0: not given (0.01 with --data, else 0)
  int64_t early_stop = 0;
  CLI::Option* augment_flag = nullptr;
  CLI::Option* augment_strength_flag = nullptr;
  int64_t steps = 0, epochs = 12, epoch_size = 64000, batch = 128, val_count = 1000, hidden = 128;
  examples::RunFlags run;  // --save, --resume, --save-every, --stop-after-epochs, --stop-after-steps
  int width = 192, height = 64, threads = 0, convs_per_block = 2, gru_layers = 2;
  double lr = 1e-3, dropout = 0.25;
  uint64_t seed = 1;
  bool deterministic = false;
  // --precision (core/precision.h): TF32 by default here, as PyTorch does for cuDNN's convolutions: on the
  // H200 it reaches 99.5% on fresh captchas in 12 epochs, half the time of 20 strict-FP32 epochs
  // (docs/results/README.md, "Captcha time to accuracy"); --precision fp32 --epochs 20 is the earlier default.
  std::string precision = "tf32";
  std::vector<std::string> kernels;
  bool distributed = false;
  CLI::Option* charset_flag = nullptr;  // was --charset given?
  CLI::Option* length_flag = nullptr;
};

// Where batches come from: a fresh generated range per epoch, or one loader over a folder.
// This rank's part of every batch in a --distributed job (DataLoaderOptions::shard_index/shard_count).
struct Shard {
  int index = 0, count = 1;
};

struct TrainingData {
  std::string charset, length, description;
  std::string augment = "none";  // the transforms applied to training batches (AugmentOptions::describe)
  int max_length = 0;
  int64_t batches_per_epoch = 0;
  std::shared_ptr<Dataset> validation;
  std::function<DataLoader(int64_t epoch)> loader;
  std::vector<examples::DataFingerprint> fingerprints;  // what --resume compares (examples/run_state.h)
};

// The padded-target batch of a folder: images and their classes padded with 0 to the longest label.
std::shared_ptr<TensorDataset> folder_dataset(const CaptchaDataset& folder, const std::string& charset) {
  return std::make_shared<TensorDataset>(folder.images, encode_ctc_targets(folder.labels, charset).targets);
}

// The fingerprint of a folder's tensors, for --resume (examples/run_state.h).
examples::DataFingerprint fingerprint_of(const char* key, const char* flags, const TensorDataset& set) {
  return {key, flags, examples::data_fingerprint(set.inputs(), set.targets())};
}

// --val-data DIR: its labelled images, resized to the model's input, their labels written with the
// training charset (a character outside it is an error naming the file).
std::shared_ptr<TensorDataset> validation_folder(const TrainArgs& a, const std::string& charset, int threads) {
  CaptchaFolderOptions fo;
  fo.width = a.width;
  fo.height = a.height;
  fo.threads = threads;
  fo.charset = charset;
  CaptchaDataset val;
  try {
    val = load_captcha_folder(a.val_data, fo);
  } catch (const Error& e) {  // the folder reader's message, with the flag that named the folder
    throw Error(str_cat("--val-data: ", e.what()));
  }
  print_folder_warnings(val);
  return folder_dataset(val, charset);
}

TrainingData generated_data(const TrainArgs& a, int threads, Shard shard) {
  CaptchaOptions options;
  options.charset = a.charset;
  std::tie(options.min_length, options.max_length) = parse_length_range(a.length);
  options.width = a.width;
  options.height = a.height;
  check_captcha_options(options);
  MINIDL_CHECK(a.epoch_size >= a.batch, "--epoch-size (", a.epoch_size, ") must hold at least one batch of ",
               a.batch);
  TrainingData d;
  d.charset = options.charset;
  d.length = a.length;
  d.max_length = options.max_length;
  d.batches_per_epoch = a.epoch_size / a.batch;
  d.description = str_cat("generated captchas (seed ", a.seed, "; an epoch is ", d.batches_per_epoch * a.batch,
                          " new ones)");
  const int64_t per_epoch = d.batches_per_epoch * a.batch;
  const uint64_t seed = a.seed;
  const int64_t batch = a.batch;
  d.loader = [options, seed, per_epoch, batch, threads, shard](int64_t epoch) {
    auto data = std::make_shared<GeneratedCaptchaDataset>(options, seed, per_epoch, threads,
                                                          static_cast<uint64_t>(epoch * per_epoch));
    DataLoaderOptions lo;
    lo.batch_size = batch;
    lo.drop_last = true;
    lo.shard_index = shard.index;
    lo.shard_count = shard.count;
    return DataLoader(data, lo);
  };
  // Validation: captchas of seed + 1, or the real images of --val-data (how well a model trained on
  // generated captchas reads a site's own).
  if (a.val_data.empty()) {
    d.validation = std::make_shared<GeneratedCaptchaDataset>(options, a.seed + 1, a.val_count, threads);
    d.fingerprints.push_back({"data.val", "--val-count", str_cat("generated: seed ", a.seed + 1, ", ", a.val_count,
                                                                 " captchas")});
  } else {
    const auto val = validation_folder(a, d.charset, threads);
    d.validation = val;
    d.description += str_cat("; validation on ", val->size(), " images of ", a.val_data);
    d.fingerprints.push_back(fingerprint_of("data.val", "--val-data", *val));
  }
  return d;
}

TrainingData folder_data(const TrainArgs& a, int threads, Shard shard) {
  CaptchaFolderOptions fo;
  fo.width = a.width;
  fo.height = a.height;
  fo.threads = threads;
  if (*a.charset_flag) fo.charset = a.charset;
  if (*a.length_flag) {
    const auto [lo, hi] = parse_length_range(a.length);
    if (lo == hi) fo.length = lo;
  }
  const CaptchaDataset folder = load_captcha_folder(a.data, fo);
  print_folder_warnings(folder);
  TrainingData d;
  d.charset = folder.charset;
  size_t shortest = folder.labels[0].size(), longest = 0;
  for (const std::string& l : folder.labels) {
    shortest = std::min(shortest, l.size());
    longest = std::max(longest, l.size());
  }
  d.max_length = static_cast<int>(longest);
  d.length = shortest == longest ? std::to_string(longest) : str_cat(shortest, "-", longest);
  auto all = folder_dataset(folder, d.charset);
  const int64_t N = all->size();

  std::shared_ptr<TensorDataset> train = all;
  if (!a.val_data.empty()) {
    const auto val = validation_folder(a, d.charset, threads);  // labels in the training charset
    d.validation = val;
    d.fingerprints.push_back(fingerprint_of("data.val", "--val-data", *val));
  } else {
    // Every k-th image is held out (at most a tenth of the folder): spread over the sorted file names.
    const int64_t held = std::max<int64_t>(1, std::min<int64_t>(a.val_count, N / 10));
    MINIDL_CHECK(N >= 2, "--data has ", N, " image(s): too few to hold some out for validation (or give --val-data)");
    const int64_t k = N / held;
    std::vector<int64_t> train_idx, val_idx;
    for (int64_t i = 0; i < N; ++i) {
      const bool hold_out = i % k == k - 1 && static_cast<int64_t>(val_idx.size()) < held;
      (hold_out ? val_idx : train_idx).push_back(i);
    }
    const Batch v = all->get_batch(val_idx), t = all->get_batch(train_idx);
    const auto val = std::make_shared<TensorDataset>(v.inputs, v.targets);
    d.validation = val;
    d.fingerprints.push_back(fingerprint_of("data.val", "--data", *val));
    train = std::make_shared<TensorDataset>(t.inputs, t.targets);
  }
  d.fingerprints.insert(d.fingerprints.begin(), fingerprint_of("data.train", "--data", *train));
  const bool drop_last = train->size() > a.batch;
  d.batches_per_epoch = drop_last ? train->size() / a.batch : 1;
  d.description = str_cat(train->size(), " images of ", a.data, " (", d.validation->size(), " for validation",
                          a.val_data.empty() ? ", held out" : str_cat(" from ", a.val_data), ")");
  const uint64_t seed = a.seed;
  const int64_t batch = a.batch;
  AugmentOptions augment = AugmentOptions::parse(a.no_augment ? "none" : a.augment);
  augment.strength = a.augment_strength;
  if (augment.strength == 0) augment = AugmentOptions::parse("none");
  d.augment = augment.describe();
  if (augment.any() && augment.strength != 1) d.augment += str_cat(" at strength ", a.augment_strength);
  // Each epoch reads the folder through an AugmentedDataset of that epoch (nn/augment.h).
  d.loader = [train, seed, batch, drop_last, shard, augment, threads](int64_t epoch) {
    DataLoaderOptions lo;
    lo.batch_size = batch;
    lo.shuffle = true;
    lo.seed = seed;
    lo.drop_last = drop_last;
    lo.shard_index = shard.index;
    lo.shard_count = shard.count;
    if (!augment.any()) return DataLoader(train, lo);
    return DataLoader(std::make_shared<AugmentedDataset>(train, augment, seed, epoch, threads), lo);
  };
  return d;
}

// Losses of recent steps, kept on the device and read in one go (a read waits for the GPU). Each read
// loss is checked by the guard, which stops at the first that is not finite (in a --distributed job, at
// the guard's next agree()).
class LossLog {
 public:
  explicit LossLog(examples::DivergenceGuard& guard) : guard_(guard) {}
  // `step` (1-based over the run) and `lr` (that step's learning rate) are for the guard's message.
  void add(const Tensor& loss, int64_t samples, int64_t step, double lr) {
    pending_.push_back(loss.detach().reshape({1}));
    pending_samples_.push_back(samples);
    pending_steps_.emplace_back(step, lr);
    if (pending_.size() >= 64) flush();
  }
  void flush() {
    if (pending_.empty()) return;
    const std::vector<double> values = concat(pending_, 0).to_vector<double>();
    for (size_t i = 0; i < values.size(); ++i) {
      guard_.check_loss(values[i], pending_steps_[i].first, pending_steps_[i].second);
      sum_ += values[i] * static_cast<double>(pending_samples_[i]);
      count_ += pending_samples_[i];
    }
    pending_.clear();
    pending_samples_.clear();
    pending_steps_.clear();
  }
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0; }
  int64_t samples() const { return count_; }
  // The running sums {loss sum, samples} (after flush()): saved in the middle of an epoch and restored
  // when the run resumes there (examples/run_state.h), so the epoch's summary covers all of it.
  static constexpr size_t kSums = 2;
  std::vector<double> sums() const { return {sum_, static_cast<double>(count_)}; }
  void restore(const std::vector<double>& sums) {
    MINIDL_CHECK(sums.size() == kSums && pending_.empty(), "LossLog: restore needs ", kSums, " sums, got ",
                 sums.size());
    sum_ = sums[0];
    count_ = static_cast<int64_t>(sums[1]);
  }
  // Data-parallel: the totals of every rank (call on every rank, after flush()).
  void sum_over_ranks(dist::DataParallel& dp) {
    const std::vector<double> total = dp.sum({sum_, static_cast<double>(count_)});
    sum_ = total[0];
    count_ = static_cast<int64_t>(total[1]);
  }

 private:
  examples::DivergenceGuard& guard_;
  std::vector<Tensor> pending_;
  std::vector<int64_t> pending_samples_;
  std::vector<std::pair<int64_t, double>> pending_steps_;  // (step, lr) of each loss
  double sum_ = 0;
  int64_t count_ = 0;
};

// The settings that make a run what it is, saved with every epoch ("run.*" metadata) and compared by
// --resume: a resumed run must be the same run, or its result would be neither run's.
std::map<std::string, std::string> run_settings(const TrainArgs& a, const TrainingData& data, int64_t epochs,
                                                int64_t total_steps, double weight_decay) {
  std::map<std::string, std::string> m = {{"run.data", data.description},
          {"run.batch", std::to_string(a.batch)},
          {"run.batches_per_epoch", std::to_string(data.batches_per_epoch)},
          {"run.epochs", std::to_string(epochs)},
          {"run.total_steps", std::to_string(total_steps)},
          {"run.lr", examples::exact_number(a.lr)},
          {"run.schedule", a.schedule},
          {"run.seed", std::to_string(a.seed)}};
  // Only when on, so that files of runs without them (and of older builds) resume as before.
  if (data.augment != "none") m["run.augment"] = data.augment;
  if (weight_decay > 0) m["run.weight_decay"] = examples::exact_number(weight_decay);
  return m;
}

// A validation result of every rank's part, summed over the ranks.
EvalResult sum_over_ranks(EvalResult r, dist::DataParallel& dp) {
  const std::vector<double> t = dp.sum({r.loss * static_cast<double>(r.count), static_cast<double>(r.correct),
                                        static_cast<double>(r.count), static_cast<double>(r.correct_characters),
                                        static_cast<double>(r.characters)});
  r.correct = static_cast<int64_t>(t[1]);
  r.count = static_cast<int64_t>(t[2]);
  r.correct_characters = static_cast<int64_t>(t[3]);
  r.characters = static_cast<int64_t>(t[4]);
  r.loss = r.count ? t[0] / static_cast<double>(r.count) : 0;
  r.sequence_accuracy = r.count ? static_cast<double>(r.correct) / static_cast<double>(r.count) : 0;
  r.character_accuracy =
      r.characters ? static_cast<double>(r.correct_characters) / static_cast<double>(r.characters) : 1;
  return r;
}

int run_train(const TrainArgs& a) {
  select_kernels_from_flags(a.kernels);
  set_deterministic_algorithms(a.deterministic);  // before the first GPU op (core/determinism.h)
  examples::apply_precision_flag(a.precision);    // likewise (core/precision.h)
  const std::string save_path = a.run.save_path();
  a.run.check();
  MINIDL_CHECK(!a.data.empty() || (!*a.augment_flag && !*a.augment_strength_flag && !a.no_augment),
               "--augment, --augment-strength and --no-augment are for --data (generated captchas are new every "
               "epoch)");
  // No output may replace an input, or another output (nn/files.h): checked by every process, before the
  // job starts.
  examples::check_run_paths(a.run, {"--metrics", a.metrics}, {{"--save-best", a.save_best}},
                            {{"--data", a.data}, {"--val-data", a.val_data}});
  std::unique_ptr<dist::DistributedRun> job;  // --distributed: this rank's place in the job
  if (a.distributed)
    job = std::make_unique<dist::DistributedRun>(dist::start_distributed("captcha", a.device, a.batch));
  const bool root = !job || job->is_root();  // prints (the others' stdout is /dev/null), writes and saves
  const Shard shard = job ? Shard{job->rank, job->world_size} : Shard{};
  // The save paths, checked before any work (examples/training_loop.h).
  if (!save_path.empty())
    examples::prepare_save_path("captcha", save_path, a.run.save.empty() ? "--resume" : "--save", job.get());
  if (!a.save_best.empty())
    examples::prepare_save_path("captcha", a.save_best, "--save-best", job.get(), /*say_removed=*/false);
  const Device device = job ? job->device : choose_device(a.device);
  const int threads = thread_count(a.threads);
  TrainingData data = a.data.empty() ? generated_data(a, threads, shard) : folder_data(a, threads, shard);
  if (job) {  // this rank validates its part of the validation set
    const Range part = shard_range(data.validation->size(), job->rank, job->world_size);
    data.validation = std::make_shared<DatasetSlice>(data.validation, part.begin, part.end);
  }

  ModelConfig config;
  config.width = a.width;
  config.height = a.height;
  config.classes = static_cast<int64_t>(data.charset.size()) + 1;
  config.channels = parse_channels(a.channels);
  config.convs_per_block = a.convs_per_block;
  config.gru_hidden = a.hidden;
  config.gru_layers = a.gru_layers;
  config.dropout = a.dropout;
  config.rnn = parse_rnn_kind(a.rnn);
  config.gru_path = parse_gru_path(a.gru);  // the path of either layer (--gru predates --rnn)
  manual_seed(a.seed);
  auto model = std::make_shared<CaptchaModel>(config);
  const int64_t T = config.time_steps();
  MINIDL_CHECK(T >= data.max_length, "the model reads ", T, " time steps (columns) of a ", a.width,
               "-pixel-wide image, fewer than the ", data.max_length, " characters of the longest label");
  if (T < 2 * data.max_length - 1)
    std::printf("captcha: warning: %lld time steps cannot read %d characters when neighbours repeat (needs %d)\n",
                static_cast<long long>(T), data.max_length, 2 * data.max_length - 1);
  model->to(device);  // before building the optimizer (nn/module.h)

  // Adam, or AdamW (decoupled weight decay) when the decay is positive (nn/optim.h).
  AdamOptions adam_options;
  adam_options.lr = a.lr;
  adam_options.weight_decay = a.weight_decay >= 0 ? a.weight_decay : a.data.empty() ? 0.0 : 0.01;
  std::unique_ptr<Adam> adam = examples::make_adam(model->parameters(), adam_options);
  Adam& optimizer = *adam;
  const int64_t epochs = a.steps > 0 ? (a.steps + data.batches_per_epoch - 1) / data.batches_per_epoch : a.epochs;
  const int64_t total_steps = a.steps > 0 ? a.steps : epochs * data.batches_per_epoch;
  std::unique_ptr<LRScheduler> schedule;
  if (a.schedule == "cosine")
    schedule = std::make_unique<CosineAnnealingLR>(optimizer, total_steps, a.lr * 0.01);
  else
    MINIDL_CHECK(a.schedule == "constant", "--schedule must be cosine or constant, got '", a.schedule, "'");

  const std::map<std::string, std::string> settings = [&] {
    std::map<std::string, std::string> m = model_metadata(config, data.charset, data.length);
    for (const auto& kv : run_settings(a, data, epochs, total_steps, adam_options.weight_decay)) m.insert(kv);
    return m;
  }();
  // --resume: the model, Adam's state, the random stream and the position (examples/run_state.h); the
  // schedule follows the step.
  examples::RunPosition start;
  examples::BestTracker best;  // the best epoch so far (--save-best, --early-stop; examples/best_checkpoint.h)
  examples::Metadata resumed;  // the --resume file's metadata
  std::vector<std::string> resume_notes;  // what the log says about it: data not checked, or other data
  if (!a.run.resume.empty()) {
    resumed = with_metadata_defaults(load_checkpoint(a.run.resume, *model, &optimizer));
    start = examples::resume_position(a.run.resume, resumed, settings, LossLog::kSums);
    const std::string data_note =
        examples::check_data_fingerprints(a.run.resume, resumed, data.fingerprints, a.run.resume_other_data);
    if (!data_note.empty()) resume_notes.push_back(data_note);
    best.restore(resumed);
    if (schedule) schedule->set_step(start.step);
  }
  // After --resume, which every rank reads: the broadcast then changes nothing, but checks the ranks agree.
  std::unique_ptr<dist::DataParallel> dp;
  if (job) {
    dp = std::make_unique<dist::DataParallel>(*model, *job->communicator,
                                              dist::DataParallelOptions::from_environment());
    std::printf("captcha: gradients in %zu buckets, all-reduced during backward:\n%s", dp->bucket_count(),
                dp->describe_buckets().c_str());
  }
  DataLoaderOptions val_options;
  val_options.batch_size = eval_batch_size(device);
  DataLoader val_loader(data.validation, val_options);
  std::unique_ptr<MetricsWriter> metrics;
  if (!a.metrics.empty() && root)
    metrics = std::make_unique<MetricsWriter>(a.metrics, /*append=*/!a.run.resume.empty(), "--metrics");

  // Ctrl-C and SIGTERM from here on stop the run after the current step (examples/run_state.h): before
  // the lines below, which tell a watcher that training starts.
  examples::RunControl control("captcha", a.run, start.step, job.get());
  std::printf("captcha: training on %s; charset \"%s\" (%zu classes + blank), length %s, %dx%d\n",
              data.description.c_str(), data.charset.c_str(), data.charset.size(), data.length.c_str(), a.width,
              a.height);
  const std::string gru_shown = rnn_path_shown(config, device);
  const std::string decay =
      adam_options.weight_decay > 0 ? str_cat(", weight decay ", adam_options.weight_decay) : std::string();
  std::printf("captcha: model %s, %lld parameters, %lld time steps, %s %s; %s lr %g (%s)%s; "
              "%lld epoch(s) of %lld batches of %lld, %lld steps%s\n",
              kModelName, static_cast<long long>(model->parameter_count()), static_cast<long long>(T),
              model->rnn->type_name().c_str(), gru_shown.c_str(), optimizer.type_name().c_str(),
              a.lr, a.schedule.c_str(), decay.c_str(), static_cast<long long>(epochs),
              static_cast<long long>(data.batches_per_epoch), static_cast<long long>(a.batch),
              static_cast<long long>(total_steps),
              device.is_cuda() ? str_cat("; precision ", precision_name(float32_precision())).c_str() : "");
  if (!a.data.empty())
    std::printf("captcha: augmentation of training images: %s%s\n", data.augment.c_str(),
                data.augment == "none" ? "" : " (nn/augment.h)");
  if (!a.save_best.empty() || a.early_stop > 0)
    std::printf("captcha: best epoch by validation whole-captcha accuracy%s%s%s\n",
                a.save_best.empty() ? "" : " saved to ", a.save_best.c_str(),
                a.early_stop > 0 ? str_cat("; early stop after ", a.early_stop, " epoch(s) without a new best").c_str()
                                 : "");
  EvalResult val;
  examples::DivergenceGuard guard(save_path, job.get());
  // What every save holds: the model, Adam, and what --resume needs (examples/run_state.h), with the best
  // epoch so far; and the checks after each step and epoch (examples/training_loop.h). The best epoch's
  // file (--save-best) is a checkpoint like the others: it evaluates, and resumes.
  examples::TrainingLoop::Parts parts;
  parts.program = "captcha";
  parts.model = model.get();
  parts.optimizer = &optimizer;
  parts.guard = &guard;
  parts.control = &control;
  parts.dp = dp.get();
  parts.root = root;
  parts.save_path = save_path;
  parts.batches_per_epoch = data.batches_per_epoch;
  parts.settings = settings;
  parts.seed = a.seed;
  parts.fingerprints = &data.fingerprints;
  parts.program_metadata = [&best] { return best.metadata(); };
  examples::TrainingLoop loop(std::move(parts));
  if (!a.run.resume.empty()) loop.announce_resume(a.run.resume, start, resumed, resume_notes);
  std::fflush(stdout);
  if (best.should_stop(start.epoch, a.early_stop)) {
    std::printf("captcha: %s stopped early already (best epoch %lld, %s; %lld epochs without a new best): "
                "nothing to do\n", a.run.resume.c_str(), static_cast<long long>(best.best_epoch()),
                percent(best.best_accuracy()).c_str(), static_cast<long long>(start.epoch - best.best_epoch()));
    return 0;
  }
  if (start.epoch >= epochs || start.step >= total_steps) {
    std::printf("captcha: %s already holds the whole run (%s): nothing to do\n", a.run.resume.c_str(),
                examples::describe_position(start, data.batches_per_epoch).c_str());
    return 0;
  }

  int64_t step = start.step;
  for (int64_t epoch = start.epoch + 1; epoch <= epochs && step < total_steps; ++epoch) {
    model->train();
    // A run resumed in the middle of this epoch: its first epoch_step batches are done, and their sums
    // (over every rank) are in the file: rank 0 starts from them.
    const bool resumed_mid_epoch = epoch == start.epoch + 1 && start.mid_epoch();
    int64_t epoch_step = resumed_mid_epoch ? start.epoch_step : 0;
    const int64_t epoch_steps = std::min(data.batches_per_epoch, total_steps - (step - epoch_step));
    Progress progress(str_cat("epoch ", epoch, "/", epochs), epoch_steps);
    LossLog losses(guard);
    const examples::EpochSums sums{[&] { losses.flush(); }, [&] { return losses.sums(); }};
    int64_t samples_before = 0;  // of this epoch, trained before this invocation
    if (resumed_mid_epoch) {
      if (root) losses.restore(start.epoch_sums);
      samples_before = static_cast<int64_t>(start.epoch_sums.at(1));
      progress.resumed_at(epoch_step, samples_before);
    }
    DataLoader loader = data.loader(epoch - 1);
    for (Batch& batch : loader.epoch(epoch - 1, epoch_step)) {
      const int64_t B = batch.size();
      const Tensor input_lengths = full({B}, static_cast<double>(T), TensorOptions(DType::int64, Device::cpu()));
      if (dp) dp->begin_step(B, batch.global_size);
      const double lr = optimizer.lr();
      const auto [log_probs, loss] = train_step(*model, optimizer, batch.inputs.to(device), batch.targets,
                                                input_lengths, ctc_target_lengths(batch.targets), [&] {
                                                  if (dp) dp->finish_step();
                                                });
      if (schedule) schedule->step();
      losses.add(loss, B, ++step, lr);
      ++epoch_step;
      if (progress.due(epoch_step)) {
        losses.flush();
        const double batch_accuracy = sequence_accuracy(ctc_greedy_decode_text(log_probs.detach(), data.charset),
                                                        ctc_targets_to_text(batch.targets, data.charset));
        progress.update(epoch_step, losses.samples(), losses.mean(), batch_accuracy);
      }
      // Agreement, --save-every, --stop-after-steps, Ctrl-C: perhaps a save, perhaps the end of this run.
      if (auto status = loop.after_step(epoch, epoch_step, step, epoch_step == epoch_steps, progress, sums))
        return *status;
      if (epoch_step == epoch_steps) break;
    }
    loop.end_of_epoch_steps(epoch, step, sums);
    if (dp) losses.sum_over_ranks(*dp);
    const double train_seconds = progress.elapsed_seconds();
    progress.clear();
    val = evaluate(*model, val_loader, data.charset, device, "validation");
    if (dp) val = sum_over_ranks(val, *dp);
    loop.check_eval_loss(val.loss, "validation", epoch, step);
    const double seconds = progress.elapsed_seconds();
    // This invocation's images: a resumed epoch's first steps ran in another one.
    const double images_per_second = static_cast<double>(losses.samples() - samples_before) / train_seconds;

    const bool new_best = best.update(epoch, val.sequence_accuracy, val.loss);
    const std::string best_shown =
        new_best ? std::string(" (best)")
                 : str_cat(" (best ", percent(best.best_accuracy()), " at epoch ", best.best_epoch(), ")");
    char summary[400];
    std::snprintf(summary, sizeof summary,
                  "epoch %lld/%lld (step %lld): train loss %.4f | validation loss %.4f, whole-captcha accuracy %s%s, "
                  "per-character %s | %s, %.0f images/s",
                  static_cast<long long>(epoch), static_cast<long long>(epochs), static_cast<long long>(step),
                  losses.mean(), val.loss, percent(val.sequence_accuracy).c_str(), best_shown.c_str(),
                  percent(val.character_accuracy).c_str(), format_duration(seconds).c_str(), images_per_second);
    progress.finish(summary);
    if (metrics)
      metrics->write({{"epoch", epoch},
                      {"step", step},
                      {"images", losses.samples()},
                      {"loss", losses.mean()},
                      {"val_loss", val.loss},
                      {"val_accuracy", val.sequence_accuracy},
                      {"val_char_accuracy", val.character_accuracy},
                      {"seconds", seconds},
                      {"train_seconds", train_seconds},
                      {"images_per_second", images_per_second},
                      {"lr", optimizer.lr()},
                      {"device", device.str()},
                      {"batch_size", a.batch},
                      {"rnn", rnn_kind_name(config.rnn)},
                      {"gru", gru_shown}});
    const examples::RunPosition at{epoch, 0, step, {}};
    const examples::Metadata accuracy{{"val_accuracy", std::to_string(val.sequence_accuracy)}};
    if (!save_path.empty()) loop.save(at, accuracy, save_path);
    if (new_best && !a.save_best.empty()) loop.save(at, accuracy, a.save_best);
    std::fflush(stdout);
    const bool run_done = epoch == epochs || step >= total_steps;
    const bool stop_early = !run_done && best.should_stop(epoch, a.early_stop);
    if (auto status = loop.after_epoch(at, run_done || stop_early)) return *status;
    if (stop_early) {
      std::printf("captcha: early stop: %lld epochs without a new best (--early-stop %lld)\n",
                  static_cast<long long>(best.epochs_without_improvement(epoch)),
                  static_cast<long long>(a.early_stop));
      break;
    }
  }
  std::printf("final validation: whole-captcha accuracy %s (%lld/%lld), per-character %s\n",
              percent(val.sequence_accuracy).c_str(), static_cast<long long>(val.correct),
              static_cast<long long>(val.count), percent(val.character_accuracy).c_str());
  if (best.best_epoch() > 0 && (!a.save_best.empty() || a.early_stop > 0))
    std::printf("best validation: whole-captcha accuracy %s at epoch %lld (validation loss %.4f)%s%s\n",
                percent(best.best_accuracy()).c_str(), static_cast<long long>(best.best_epoch()), best.best_loss(),
                a.save_best.empty() ? "" : ", saved in ", a.save_best.c_str());
  return 0;
}

}  // namespace

Command add_train_command(CLI::App& parent) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* cmd = parent.add_subcommand("train", "train the recognizer; prints progress and validation accuracy");
  cmd->add_option("--device", a->device, "auto, cpu or cuda[:N]")->capture_default_str();
  CLI::Option* steps =
      cmd->add_option("--steps", a->steps, "stop after N training steps (batches)")
          ->check(number_in(FlagRange::whole<int64_t>(1)));
  CLI::Option* epochs =
      cmd->add_option("--epochs", a->epochs, "epochs to train")->capture_default_str()
          ->check(number_in(FlagRange::whole<int64_t>(1)));
  steps->excludes(epochs);
  cmd->add_option("--epoch-size", a->epoch_size, "generated captchas per epoch")
      ->capture_default_str()
      ->check(number_in(FlagRange::whole<int64_t>(1)));
  cmd->add_option("--batch", a->batch, "batch size")->capture_default_str()->check(number_in(FlagRange::whole<int64_t>(1)));
  cmd->add_option("--lr", a->lr, "Adam learning rate")->capture_default_str()->check(number_in(FlagRange::above(0)));
  cmd->add_option("--schedule", a->schedule, "learning rate: cosine (decay to 1% over the run) or constant")
      ->capture_default_str()
      ->check(CLI::IsMember({"cosine", "constant"}));
  cmd->add_option("--data", a->data, "train on the labelled images of DIR instead of generated captchas");
  CLI::Option* val_data = cmd->add_option(
      "--val-data", a->val_data,
      "validate on the labelled images of DIR (also when training on generated captchas: how well they teach "
      "to read real ones)");
  cmd->add_option("--val-count", a->val_count, "generated validation captchas (or images held out of --data)")
      ->capture_default_str()
      ->check(number_in(FlagRange::whole<int64_t>(1)))
      ->excludes(val_data);
  a->charset_flag = cmd->add_option("--charset", a->charset, "characters (with --data: inferred from the labels)")
                        ->capture_default_str();
  a->length_flag = cmd->add_option("--length", a->length, "characters per captcha: N or A-B")->capture_default_str();
  cmd->add_option("--width", a->width, "model input width")->capture_default_str()
      ->check(number_in(FlagRange::whole<int>(kMinImageSide, kMaxImageSide)));
  cmd->add_option("--height", a->height, "model input height")->capture_default_str()
      ->check(number_in(FlagRange::whole<int>(kMinImageSide, kMaxImageSide)));
  cmd->add_option("--seed", a->seed, "seed of initialisation, dropout and data (validation uses seed + 1, `captcha "
                  "eval` seed + 2)")
      ->capture_default_str()
      ->check(number_in(FlagRange::whole<uint64_t>(0, kMaxTrainSeed)));
  cmd->add_option("--metrics", a->metrics, 
                  "write one JSON object per epoch to FILE (JSON Lines; a metrics log there is replaced, or "
                  "appended to by --resume; any other file is refused)")
      ->check(non_empty());
  examples::add_run_flags(*cmd, a->run);  // --save, --resume, --save-every, --stop-after-* (examples/run_state.h)
  cmd->add_option("--kernel", a->kernels, "select a kernel, OP=NAME (repeatable; see `minidl kernels`)");
  cmd->add_option("--threads", a->threads, "threads rendering or decoding images (0: all hardware threads)")
      ->capture_default_str()
      ->check(number_in(FlagRange::whole<int>(0, kMaxThreads)));
  cmd->add_option("--rnn", a->rnn, "recurrent layer: gru, or lstm (captcha_break's PyTorch recipe)")
      ->capture_default_str()
      ->check(CLI::IsMember({"gru", "lstm"}));
  cmd->add_option("--gru", a->gru, "recurrent layer's implementation (GRU or LSTM): fused (cell op per step), composed (elementwise ops), sequence (one sequence op: cuDNN's RNN on a GPU) or auto (sequence on a GPU, fused on the CPU)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "fused", "composed", "sequence"}));
  cmd->add_option("--channels", a->channels, "channels of the convolution blocks")->capture_default_str();
  cmd->add_option("--convs-per-block", a->convs_per_block, "convolutions per block")->capture_default_str()
      ->check(number_in(FlagRange::whole<int>(1)));
  cmd->add_option("--hidden", a->hidden, "GRU/LSTM hidden size (per direction)")->capture_default_str()
      ->check(number_in(FlagRange::whole<int64_t>(1)));
  cmd->add_option("--gru-layers", a->gru_layers, "GRU/LSTM layers")->capture_default_str()
      ->check(number_in(FlagRange::whole<int>(1)));
  cmd->add_option("--dropout", a->dropout, "dropout after the CNN and after the recurrent layer")
      ->capture_default_str()
      ->check(number_in(FlagRange::real(0, 1).excluding_hi()));
  a->augment_flag =
      cmd->add_option("--augment", a->augment,
                      "with --data: the augmentations of training images, all, none, or a list of affine,scale,"
                      "translate,blur,contrast,colour,invert,noise (nn/augment.h)")
          ->capture_default_str();
  CLI::Option* no_augment =
      cmd->add_flag("--no-augment", a->no_augment, "with --data: train on the images as they are (= --augment none)");
  no_augment->excludes(a->augment_flag);
  a->augment_strength_flag =
      cmd->add_option("--augment-strength", a->augment_strength,
                      "with --data: scales every augmentation range and probability (0: none)")
          ->capture_default_str()
          ->check(number_in(FlagRange::real(0, 10)));
  cmd->add_option("--weight-decay", a->weight_decay,
                  "decoupled weight decay (AdamW) when > 0; default 0.01 with --data, 0 (Adam) for generated data")
      ->check(number_in(FlagRange::real(0, 1)));
  cmd->add_option("--save-best", a->save_best,
                  "also save the model of the epoch with the best validation whole-captcha accuracy to FILE")
      ->check(non_empty());
  cmd->add_option("--early-stop", a->early_stop, "stop after N epochs in a row without a new best validation accuracy")
      ->check(number_in(FlagRange::whole<int64_t>(1)));
  cmd->add_flag("--deterministic", a->deterministic,
                "on a GPU, only deterministic algorithms, chosen without timing: the same bits every run "
                "(the CPU always is, for the same threads)");
  examples::add_precision_flag(cmd, a->precision);
  cmd->add_flag("--distributed", a->distributed,
                "one rank of a data-parallel job: mpirun -np N captcha train --distributed ... (--batch is the "
                "global batch; --device cuda: one GPU per process; docs/distributed.md)");
  return {cmd, [a] { return run_train(*a); }};
}

}  // namespace captcha
