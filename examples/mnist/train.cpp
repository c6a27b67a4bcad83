// examples/mnist/train.cpp — `mnist train`: train the CNN on MNIST (flags: examples/mnist/main.cpp).
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
// invocation's images / train_seconds), device, batch_size, lr; --metrics-every N adds per-step records.
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
// settings (--model mnist_cnn_bn, --epochs, --batch, --lr) apply where the flag is not given
// (examples/mnist/recipe.cpp, before `train` runs). The time to accuracy counts from the model's
// creation; the device is initialised before it (CUDA context, cuBLAS).
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
// Going on: --resume with a larger --epochs extends a run, finished or not (the schedule is recomputed
// for the new length and set to the saved step; the log says so and gives the lr); --init-from FILE starts
// a new run from FILE's weights (a new optimizer, schedule and position: examples/run_start.h).
// --save-best FILE also saves the epoch with the best evaluation accuracy, --early-stop N ends the run after
// N epochs without one (examples/best_checkpoint.h). The progress line and each epoch's summary give the
// whole run's time left; on a CPU, a run projected past an hour says so after 5 steps
// (examples/run_estimate.h). `eval --data FILE.csv` scores a labelled CSV file.
// --distributed: this process is one rank of a data-parallel job started by `mpirun -np N mnist train
// --distributed ...` (docs/distributed.md): --batch stays the global batch, each rank trains on its part of
// every batch (a sharded loader) and evaluates its part of the test set; gradients and metrics are summed
// over the ranks (dist/data_parallel.h); only rank 0 prints, writes --metrics, checks the --save path and
// saves. A NaN or infinite loss on any rank stops every rank together (examples/train_guard.h), and so
// does Ctrl-C on any rank.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/determinism.h"
#include "core/dispatch.h"
#include "core/random.h"
#include "dist/data_parallel.h"
#include "dist/launch.h"
#include "dist/process.h"
#include "examples/best_checkpoint.h"
#include "examples/flags.h"
#include "examples/mnist/common.h"
#include "examples/mnist/train_step.h"
#include "examples/run_environment.h"
#include "examples/run_start.h"
#include "examples/run_state.h"
#include "examples/train_guard.h"
#include "examples/training_loop.h"
#include "nn/checkpoint.h"
#include "nn/files.h"
#include "nn/lr_schedule.h"
#include "nn/metrics.h"
#include "examples/data/mnist_data.h"
#include "nn/optim.h"
#include "nn/progress.h"

using namespace minidl;

namespace mnist {
int train(const TrainFlags& f) {
  select_kernels_from_flags(f.kernels);
  set_deterministic_algorithms(f.deterministic);  // before the first GPU op (core/determinism.h)
  examples::apply_precision_flag(f.precision);    // likewise (core/precision.h)
  f.run.check();
  // No output may replace an input (nn/files.h): checked by every process, before the job starts. The
  // data's folder is the one searched for when --data is not given.
  examples::check_run_paths(f.run, {"--metrics", f.metrics}, {{"--save-best", f.save_best}},
                            {{"--data", f.data.empty() ? find_mnist_dir(f.data) : f.data}});
  std::unique_ptr<dist::DistributedRun> job;  // --distributed: this rank's place in the job
  if (f.distributed)
    job = std::make_unique<dist::DistributedRun>(dist::start_distributed("mnist", f.device, f.batch));
  const bool root = !job || job->is_root();  // prints (the others' stdout is /dev/null), writes and saves
  // The save path (--save, else --resume), checked before any work (examples/training_loop.h).
  const std::string save_path = f.run.save_path();
  if (!save_path.empty())
    examples::prepare_save_path("mnist", save_path, f.run.save.empty() ? "--resume" : "--save", job.get());
  if (!f.save_best.empty())
    examples::prepare_save_path("mnist", f.save_best, "--save-best", job.get(), /*say_removed=*/false);
  const Device device = job ? job->device : choose_device(f.device);
  if (root) examples::print_run_environment("mnist train", device, f.kernels);  // examples/run_environment.h
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
  MINIDL_CHECK((f.save_best.empty() && f.early_stop == 0) || data.eval, "--save-best and --early-stop need an "
               "evaluation after each epoch, but --val-split 0 holds out nothing");

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
  const MemoryFormat memory_format = examples::resolve_memory_format(f.memory_format, device, examples::kMnistGpuFormats);
  if (!job || job->is_root()) std::printf("mnist: %s\n", examples::memory_format_text(memory_format, device).c_str());
  AdamOptions adam_options;
  adam_options.lr = f.lr;
  adam_options.weight_decay = f.weight_decay;
  // Adam, or AdamW when --weight-decay is positive (decoupled weight decay, nn/optim.h).
  std::unique_ptr<Adam> adam = examples::make_adam(model->parameters(), adam_options);
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
  std::unique_ptr<LRScheduler> scheduler = make_schedule(f, optimizer, total_steps);
  const bool per_batch_schedule = f.schedule == "onecycle" || f.schedule == "cosine";

  // --resume: the model, Adam's state, the random stream and the position; the schedule follows the step.
  const examples::Metadata settings = with_weight_decay(run_settings(f, data, batches, total_steps), f.weight_decay);
  examples::RunPosition start;
  examples::BestTracker best;  // the best epoch so far (--save-best, --early-stop; examples/best_checkpoint.h)
  examples::Metadata resumed;  // the --resume file's metadata
  std::vector<std::string> resume_notes;  // what the log says about it: data not checked, or other data
  if (!f.run.resume.empty()) {
    examples::ResumedRun r = examples::resume_run(f.run.resume, *model, optimizer, settings, RunningStats::kSums,
                                                  data.fingerprints, f.run.resume_other_data, /*saved_by=*/"");
    start = r.start;
    resumed = std::move(r.metadata);
    resume_notes = std::move(r.notes);
    best.restore(resumed);
    if (scheduler) scheduler->set_step(per_batch_schedule ? start.step : start.epoch);
    if (!r.length_note.empty()) resume_notes.push_back(str_cat(r.length_note, "; lr now ", optimizer.lr()));
  } else if (!f.run.init_from.empty()) {  // the weights only: the optimizer and the schedule stay new
    const examples::Metadata file =
        examples::init_from(f.run.init_from, *model, settings, {"model"}, /*saved_by=*/"");
    std::printf("%s\n", examples::init_from_note("mnist", f.run.init_from, file).c_str());
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
  // What every save holds: the model, Adam, and what --resume needs (examples/run_state.h), and the
  // checks after each step and epoch (examples/training_loop.h).
  examples::TrainingLoop::Parts parts;
  parts.program = "mnist";
  parts.model = model.get();
  parts.optimizer = &optimizer;
  parts.guard = &guard;
  parts.control = &control;
  parts.dp = dp.get();
  parts.root = root;
  parts.save_path = save_path;
  parts.batches_per_epoch = batches;
  parts.settings = settings;
  parts.seed = f.seed;
  parts.fingerprints = &data.fingerprints;
  parts.epochs = f.epochs;
  parts.total_steps = total_steps;
  parts.eval_steps_guess = data.eval ? static_cast<double>(data.eval->size()) / static_cast<double>(f.batch) / 3 : 0;
  parts.on_cpu = !device.is_cuda();
  parts.long_run_hint = "for a shorter run: fewer --epochs, or --limit N to train on N images";
  parts.program_metadata = [&best] {
    examples::Metadata m = best.metadata();
    m["normalization"] = str_cat("(x/255 - ", kMnistMean, ") / ", kMnistStd);
    return m;
  };
  parts.metrics = metrics.get();  // --metrics-every: per-step records, timed from the model's creation
  parts.metrics_every = f.metrics_every;
  parts.started = created;
  examples::TrainingLoop loop(std::move(parts));
  if (!f.run.resume.empty()) loop.announce_resume(f.run.resume, start, resumed, resume_notes);
  std::fflush(stdout);
  if (start.epoch >= f.epochs || best.should_stop(start.epoch, f.early_stop)) {
    std::printf("mnist: %s already holds the whole run (%s%s): nothing to do\n", f.run.resume.c_str(),
                examples::describe_position(start, batches).c_str(),
                start.epoch < f.epochs ? ", stopped by --early-stop" : "");
    return 0;
  }

  // --cuda-graph: the step replayed from a CUDA graph (examples/mnist/train_step.h).
  std::unique_ptr<mnist::GraphedTrainStep> graphed;
  if (use_cuda_graph) graphed = std::make_unique<mnist::GraphedTrainStep>(*model, optimizer, device);

  int64_t run_step = start.step;
  for (int epoch = static_cast<int>(start.epoch) + 1; epoch <= f.epochs; ++epoch) {
    model->train();
    Progress progress(str_cat("epoch ", epoch, "/", f.epochs), batches);
    loop.begin_epoch(epoch, progress);  // the whole run's time left, in the progress line
    RunningStats stats(&guard);
    const examples::EpochSums sums{[&] { stats.flush(); }, [&] { return stats.sums(); },
                                   [&] { return std::pair(stats.mean_loss() * stats.count(), double(stats.count())); }};
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
      const Tensor inputs = mnist::model_input(batch.inputs.to(device), memory_format);
      const auto [logits, loss] = graphed ? (*graphed)(inputs, targets)
                                          : mnist::train_step(*model, optimizer, inputs, targets, [&] {
                                              if (dp) dp->finish_step();
                                            });
      if (scheduler && per_batch_schedule) scheduler->step();
      stats.add(loss, logits, targets, ++run_step, lr);
      ++epoch_step;
      if (progress.due(epoch_step)) {
        stats.flush();
        progress.update(epoch_step, stats.count(), stats.mean_loss(), stats.accuracy());
      }
      // Agreement, --save-every, --stop-after-steps, Ctrl-C: perhaps a save, perhaps the end of this run.
      if (auto status = loop.after_step(epoch, epoch_step, run_step, epoch_step == batches, progress, sums))
        return *status;
    }
    loop.end_of_epoch_steps(epoch, run_step, sums);
    if (dp) stats.sum_over_ranks(*dp);
    if (scheduler && !per_batch_schedule) scheduler->step();
    const double train_seconds = progress.elapsed_seconds();
    progress.clear();
    if (eval_loader) {
      result = evaluate(*model, *eval_loader, device, dp.get());
      loop.check_eval_loss(result.loss, data.eval_name.c_str(), epoch, run_step);
    }
    const double seconds = progress.elapsed_seconds();
    const bool new_best = eval_loader && best.update(epoch, result.accuracy, result.loss);
    const std::string best_shown = f.save_best.empty() && f.early_stop == 0 ? std::string()
                                   : new_best ? std::string(" (best)")
                                              : str_cat(" (best ", percent(best.best_accuracy()), " at epoch ",
                                                        best.best_epoch(), ")");
    const std::string run_left = loop.end_epoch(epoch, batches - (resumed_mid_epoch ? start.epoch_step : 0),
                                                train_seconds, seconds - train_seconds);
    const double since_start = seconds_since_created();
    // This invocation's images: a resumed epoch's first steps ran in another one.
    const double images_per_second = static_cast<double>(stats.count() - samples_before) / train_seconds;

    char summary[400];
    std::snprintf(summary, sizeof summary, "epoch %d/%d: train loss %.4f, accuracy %s%s | %s, %.0f images/s%s", epoch,
                  f.epochs, stats.mean_loss(), percent(stats.accuracy()).c_str(),
                  eval_loader ? str_cat(" | ", data.eval_name, " loss ", number_4(result.loss), ", accuracy ",
                                        percent(result.accuracy), best_shown).c_str()
                              : "",
                  format_duration(seconds).c_str(), images_per_second, run_left.c_str());
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
    examples::Metadata accuracy;  // of the evaluation, in the files saved now
    if (eval_loader) accuracy[eval_key + "_accuracy"] = std::to_string(result.accuracy);
    if (!save_path.empty()) loop.save(at, accuracy, save_path);
    if (new_best && !f.save_best.empty()) loop.save(at, accuracy, f.save_best);
    std::fflush(stdout);
    if (f.target_accuracy > 0 && result.accuracy >= f.target_accuracy) {
      std::printf("mnist: %s accuracy %s reached --target-accuracy %g after epoch %d (step %lld), %.3f s after "
                  "the model was created\n",
                  data.eval_name.c_str(), percent(result.accuracy).c_str(), f.target_accuracy, epoch,
                  static_cast<long long>(run_step), since_start);
      return 0;
    }
    const bool stop_early = epoch != f.epochs && best.should_stop(epoch, f.early_stop);
    if (auto status = loop.after_epoch(at, epoch == f.epochs || stop_early)) return *status;
    if (stop_early) {
      std::printf("mnist: early stop: %lld epochs without a new best (--early-stop %lld); best %s accuracy %s at "
                  "epoch %lld\n", static_cast<long long>(best.epochs_without_improvement(epoch)),
                  static_cast<long long>(f.early_stop), data.eval_name.c_str(), percent(best.best_accuracy()).c_str(),
                  static_cast<long long>(best.best_epoch()));
      break;
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

}  // namespace mnist
