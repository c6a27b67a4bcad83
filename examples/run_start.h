// examples/run_start.h — where a training run of either program starts: from --resume FILE (the same
// run, continued where it stopped, perhaps to a larger --epochs) or from --init-from FILE (trained
// weights only, and a new run around them: fine-tuning, e.g. a captcha model trained on generated
// captchas, then on one's own folder). A run with neither starts from the model's random initialisation.
//
// Both read the file's metadata first: a file of another kind of model is refused in one line
// (check_checkpoint_model, `saved_by` naming the command that writes the right kind: "`captcha train
// --save`"; "" for a program with a --model flag, whose difference is then named as the others are),
// then the settings that decide the model are compared with this run's flags, so a mismatch is named by its flag ("--rnn: saved gru, asked lstm") rather than by a tensor's
// shape; then the tensors are loaded with the checks of nn/checkpoint_state.h.
//
//                 weights  optimizer (Adam's moments)  position, random stream   schedule
//   --resume      file     file                        file                      from the step, for --epochs
//   --init-from   file     new                         0, from --seed            new, for --epochs
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "examples/run_state.h"
#include "nn/module.h"
#include "nn/optim.h"

namespace examples {

// A program's reading of a file's metadata before it is compared (captcha fills in keys of older files),
// or none.
using MetadataDefaults = std::function<Metadata(Metadata)>;

struct ResumedRun {
  RunPosition start;               // where the run goes on
  Metadata metadata;               // the file's
  std::vector<std::string> notes;  // for the log: the data not checked, or other data
  std::string length_note;         // "" or, for another --epochs, run_length_note() (the program adds the lr)
};

// --resume FILE: the settings (resume_position), then the model and the optimizer's state, then the data's
// fingerprints (check_data_fingerprints); `sums`: the program's count of epoch sums.
ResumedRun resume_run(const std::string& path, minidl::Module& model, minidl::Optimizer& optimizer,
                      const Metadata& settings, size_t sums, const std::vector<DataFingerprint>& fingerprints,
                      bool other_data_allowed, const std::string& saved_by,
                      const MetadataDefaults& defaults = {});

// --init-from FILE: the model's weights and buffers (batch-norm statistics) from a file saved by the
// program's `train --save` or `--save-best`; the keys `model_keys` of `settings` (those that decide the
// model's tensors) must be the file's, else one line names each flag that differs. Returns the file's
// metadata. The optimizer, the position, the random stream and the schedule are the caller's, new.
Metadata init_from(const std::string& path, minidl::Module& model, const Metadata& settings,
                   const std::vector<std::string>& model_keys, const std::string& saved_by,
                   const MetadataDefaults& defaults = {});

// The line a run started with --init-from prints: "<program>: --init-from FILE: weights of <what the
// file says> (a new optimizer, schedule and position)".
std::string init_from_note(const std::string& program, const std::string& path, const Metadata& file);

}  // namespace examples
