// examples/captcha/train_settings.cpp — the settings of a `captcha train` run that every save holds
// (examples/captcha/train.h): the run.* settings --resume compares, and the model settings --init-from
// compares.
#include <map>
#include <string>
#include <vector>

#include "examples/captcha/train.h"
#include "examples/run_state.h"

namespace captcha {

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

const std::vector<std::string>& init_from_keys() {
  static const std::vector<std::string> keys = {"model",           "charset", "width",      "height",    "channels",
                                                "convs_per_block", "rnn",     "gru_hidden", "gru_layers"};
  return keys;
}

}  // namespace captcha
