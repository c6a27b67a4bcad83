// examples/mnist/train_settings.cpp — the settings of an `mnist train` run that follow from its flags once
// the data is loaded (examples/mnist/common.h): the step count the schedule needs, the learning-rate
// schedule, and the run.* settings every save holds and --resume compares (examples/run_state.h).
#include <memory>
#include <string>

#include "core/error.h"
#include "examples/mnist/common.h"
#include "nn/lr_schedule.h"

using namespace minidl;

namespace mnist {

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

std::unique_ptr<LRScheduler> make_schedule(const TrainFlags& f, Optimizer& optimizer, int64_t total_steps) {
  if (f.schedule == "onecycle") return std::make_unique<OneCycleLR>(optimizer, f.lr, total_steps);
  if (f.schedule == "cosine") return std::make_unique<CosineAnnealingLR>(optimizer, total_steps);
  if (f.schedule == "step") return std::make_unique<StepLR>(optimizer, 1, 0.7);
  return nullptr;
}

}  // namespace mnist
