// examples/captcha/train.cpp — `captcha train`: train the CNN + bidirectional GRU + CTC recognizer.
// Its flags are in examples/captcha/train_flags.cpp; its data, generated or a folder of labelled images,
// and what is validated after every epoch in examples/captcha/train_data.cpp; the epoch's running loss in
// loss_log.h. This file is the run: model, optimizer, --resume, and the epoch loop.
//
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
// so: examples/run_state.h). --deterministic: the same bits on a GPU for the same flags
// (core/determinism.h); the CPU always gives them for the same --threads and OMP_NUM_THREADS.
// Going on: --resume with a larger --epochs extends a run (the schedule recomputed for the new total), and
// --init-from FILE starts a new run from FILE's weights, e.g. to fine-tune on a folder (examples/run_start.h);
// the run's time left and the long-CPU-run warning: examples/run_estimate.h; --recipe cpu: recipe.cpp.
// --distributed: one rank of a data-parallel job, `mpirun -np N captcha train --distributed ...`
// (docs/distributed.md): --batch stays the global batch; each rank trains on its part of every batch and
// validates on its part of the validation set; gradients, losses and accuracies are summed over the ranks
// and batch-norm statistics averaged before each validation; only rank 0 prints, writes, checks the save
// path and saves. Batch norm normalises over each rank's part (no synchronised batch norm). A file saved
// by a job of any size resumes in a job of any size that divides --batch (--resume FILE must be readable
// on every rank). A NaN or infinite loss on any rank stops every rank together, exit status 3
// (examples/train_guard.h), and so does Ctrl-C on any rank (examples/run_state.h).
// CUDA graphs: on one GPU (not --distributed), forward, ctc_loss, backward and Adam are captured as a CUDA
// graph after two eager steps and replayed every step, the same losses as eager steps at a fraction of the
// host's time; the labels' checks and the batch's copies stay on the host (examples/captcha/train_step.h
// says why). --no-cuda-graph runs every step eagerly.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/determinism.h"
#include "core/dispatch.h"
#include "core/random.h"
#include "dist/data_parallel.h"
#include "dist/launch.h"
#include "examples/best_checkpoint.h"
#include "examples/captcha/common.h"
#include "examples/captcha/loss_log.h"
#include "examples/captcha/plateau_hint.h"
#include "examples/captcha/train.h"
#include "examples/captcha/train_step.h"
#include "examples/flags.h"
#include "examples/run_environment.h"
#include "examples/run_start.h"
#include "examples/run_state.h"
#include "examples/train_guard.h"
#include "examples/training_loop.h"
#include "nn/checkpoint.h"
#include "nn/ctc_decode.h"
#include "nn/lr_schedule.h"
#include "nn/metrics.h"
#include "nn/optim.h"
#include "nn/progress.h"

using namespace minidl;

namespace captcha {

namespace {

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

}  // namespace

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
  const bool use_cuda_graph = examples::use_cuda_graph(device, a.cuda_graph, a.no_cuda_graph, a.distributed);
  if (root) examples::print_run_environment("captcha train", device, a.kernels);  // examples/run_environment.h
  const int threads = thread_count(a.threads);
  const bool pin = device.is_cuda();  // GPU batches in page-locked memory: their copy does not wait (nn/data.h)
  TrainingData data = a.data.empty() ? generated_data(a, threads, shard, pin) : folder_data(a, threads, shard, pin);
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
  model->memory_format = examples::resolve_memory_format(a.memory_format, device, examples::kCaptchaGpuFormats);
  model->activation_dtype = examples::resolve_activations(a.activations);
  if (!job || job->is_root())
    std::printf("captcha: %s, %s\n", examples::memory_format_text(model->memory_format, device).c_str(),
                examples::activations_text(model->activation_dtype, device).c_str());

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
    examples::ResumedRun r = examples::resume_run(a.run.resume, *model, optimizer, settings, LossLog::kSums,
                                                  data.fingerprints, a.run.resume_other_data,
                                                  "`captcha train --save`", with_metadata_defaults);
    start = r.start;
    resumed = std::move(r.metadata);
    resume_notes = std::move(r.notes);
    best.restore(resumed);
    if (schedule) schedule->set_step(start.step);
    if (!r.length_note.empty()) resume_notes.push_back(str_cat(r.length_note, "; lr now ", optimizer.lr()));
  } else if (!a.run.init_from.empty()) {  // the weights only: the optimizer and the schedule stay new
    const examples::Metadata file = examples::init_from(a.run.init_from, *model, settings, init_from_keys(),
                                                        "`captcha train --save`", with_metadata_defaults);
    std::printf("%s\n", examples::init_from_note("captcha", a.run.init_from, file).c_str());
  }
  // After --resume, which every rank reads: the broadcast then changes nothing, but checks the ranks agree.
  std::unique_ptr<dist::DataParallel> dp;
  if (job) {
    dp = std::make_unique<dist::DataParallel>(*model, *job->communicator,
                                              dist::DataParallelOptions::from_environment());
    std::printf("captcha: gradients in %zu buckets, all-reduced during backward:\n%s", dp->bucket_count(),
                dp->describe_buckets().c_str());
  }
  DataLoader val_loader(data.validation, eval_loader_options(device));
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
  parts.epochs = epochs;
  parts.total_steps = total_steps;
  parts.eval_steps_guess = static_cast<double>(data.validation->size()) / static_cast<double>(a.batch) / 3;
  parts.on_cpu = !device.is_cuda();
  parts.long_run_hint = "the CPU recipe learns 4-digit captchas in minutes: captcha train --recipe cpu";
  parts.metrics = metrics.get();  // --metrics-every: per-step records
  parts.metrics_every = a.metrics_every;
  parts.loss_key = "loss";
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

  std::unique_ptr<GraphedTrainStep> graphed;  // the step replayed from a CUDA graph (train_step.h)
  if (use_cuda_graph) graphed = std::make_unique<GraphedTrainStep>(*model, optimizer, device);
  int64_t step = start.step;
  PlateauHint plateau;
  for (int64_t epoch = start.epoch + 1; epoch <= epochs && step < total_steps; ++epoch) {
    model->train();
    // A run resumed in the middle of this epoch: its first epoch_step batches are done, and their sums
    // (over every rank) are in the file: rank 0 starts from them.
    const bool resumed_mid_epoch = epoch == start.epoch + 1 && start.mid_epoch();
    int64_t epoch_step = resumed_mid_epoch ? start.epoch_step : 0;
    const int64_t epoch_steps = std::min(data.batches_per_epoch, total_steps - (step - epoch_step));
    Progress progress(str_cat("epoch ", epoch, "/", epochs), epoch_steps);
    loop.begin_epoch(epoch, progress);  // the whole run's time left, in the progress line
    LossLog losses(guard);
    const examples::EpochSums sums{[&] { losses.flush(); }, [&] { return losses.sums(); },
                                   [&] { return std::pair(losses.sums()[0], losses.sums()[1]); }};
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
      const Tensor target_lengths = ctc_target_lengths(batch.targets);
      const auto [log_probs, loss] =
          graphed ? (*graphed)(batch.inputs, batch.targets, input_lengths, target_lengths)
                  : train_step(*model, optimizer, batch.inputs.to(device), batch.targets, input_lengths,
                               target_lengths, [&] { if (dp) dp->finish_step(); });
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
    const std::string run_left = loop.end_epoch(epoch, epoch_steps - (resumed_mid_epoch ? start.epoch_step : 0),
                                                train_seconds, seconds - train_seconds);
    // This invocation's images: a resumed epoch's first steps ran in another one.
    const double images_per_second = static_cast<double>(losses.samples() - samples_before) / train_seconds;

    const bool new_best = best.update(epoch, val.sequence_accuracy, val.loss);
    const std::string best_shown =
        new_best ? std::string(" (best)")
                 : str_cat(" (best ", percent(best.best_accuracy()), " at epoch ", best.best_epoch(), ")");
    char summary[400];
    std::snprintf(summary, sizeof summary,
                  "epoch %lld/%lld (step %lld): train loss %.4f | validation loss %.4f, whole-captcha accuracy %s%s, "
                  "per-character %s | %s, %.0f images/s%s",
                  static_cast<long long>(epoch), static_cast<long long>(epochs), static_cast<long long>(step),
                  losses.mean(), val.loss, percent(val.sequence_accuracy).c_str(), best_shown.c_str(),
                  percent(val.character_accuracy).c_str(), format_duration(seconds).c_str(), images_per_second,
                  run_left.c_str());
    progress.finish(summary);
    if (graphed && epoch == start.epoch + 1) std::printf("captcha: CUDA graphs: %s\n", graphed->describe().c_str());
    const std::string hint = plateau.after_epoch(val.sequence_accuracy);  // examples/captcha/plateau_hint.h
    if (!hint.empty()) std::printf("captcha: %s\n", hint.c_str());
    if (metrics)
      metrics->write({{"epoch", epoch},
                      {"step", step},
                      {"images", losses.samples()},
                      {"loss", losses.mean()},
                      {"val_loss", val.loss},
                      {"val_accuracy", val.sequence_accuracy},
                      {"val_char_accuracy", val.character_accuracy},
                      {"seconds", seconds},
                      {"seconds_since_start", loop.seconds_since_start()},
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

}  // namespace captcha
