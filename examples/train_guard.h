// examples/train_guard.h — what both training programs do when the numbers go bad: stop at the first
// non-finite loss, say where (step, loss, learning rate) and what happened to the --save file, and never
// save a model holding NaN or infinity over the last good one.
//
// The loops read their losses from the device in batches (a read from a GPU waits for it), so a NaN is
// noticed up to a few dozen steps after it appeared; each loss keeps its step and learning rate, so the
// report names the first bad step all the same. Nothing is saved unchecked: a save (at the end of an
// epoch, or mid-epoch: --save-every, Ctrl-C) comes after every loss read so far and every parameter and
// buffer have been checked.
//
// The programs exit with status 3 on NonFiniteError (1 for other errors, 2 for bad flags).
//
// --distributed (dist/launch.h): one rank must not stop alone, for the others would wait for it in the
// next all-reduce forever. In a job the checks therefore only note the first problem of this rank, and
// agree() (every rank calls it at the same points: every kStepsBetweenAgreements steps and after each
// check of an epoch's end) compares the ranks' notes: when any rank has one, every rank throws the same
// dist::JobError with exit status 3, naming the earliest bad step and the rank that saw it. Rank 0
// prints it once; every rank exits with status 3. (A NaN loss on one rank makes the averaged gradients,
// and so every rank's weights, NaN; the other ranks' losses follow a step later, but the message names
// the first.)
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/numerics.h"
#include "core/tensor.h"
#include "dist/launch.h"
#include "dist/process.h"
#include "nn/module.h"

namespace examples {

// The exit status of a run stopped by NonFiniteError.
constexpr int kExitNonFinite = 3;

// --distributed: how often (in training steps) the ranks compare their loss checks within an epoch.
// The losses are read from the device at least this often anyway (the programs' loss logs flush every
// 64 steps), so a job stops at most this many steps after the first bad loss, as one process does.
constexpr int64_t kStepsBetweenAgreements = 64;

class DivergenceGuard {
 public:
  // `save_path`: the run's --save file ("" when it saves nothing). `job`: this rank's place in a
  // --distributed job (nullptr otherwise); it must outlive the guard.
  explicit DivergenceGuard(std::string save_path, const minidl::dist::DistributedRun* job = nullptr)
      : save_path_(std::move(save_path)), job_(job) {}

  // The file now holds the run after `epoch` epochs and `epoch_step` steps of the next (called after each
  // save, at an epoch's end or in the middle of one: examples/run_state.h; in a job, by every rank: rank 0
  // saved it).
  void saved(int64_t epoch, int64_t epoch_step = 0) {
    last_saved_epoch_ = epoch;
    last_saved_epoch_step_ = epoch_step;
  }

  // Stops (see the header comment) when the training loss of `step` (1-based, over the run) is NaN or
  // infinite.
  void check_loss(double loss, int64_t step, double lr) {
    if (std::isfinite(loss)) return;
    stop(step, minidl::str_cat(
                   "training diverged", on_rank(), ": the loss is ", minidl::number_str(loss), " at step ", step,
                   " (learning rate ", minidl::number_str(lr), "). Stopped.", save_note(),
                   " Try a smaller --lr, or run with MINIDL_CHECK_NUMERICS=1 to find the op that first "
                   "produced a NaN or an infinity."));
  }

  // Stops when a parameter or buffer of `model` is not finite (an update after the last finite loss can
  // still break the weights): checked before every evaluation and save (in a job, after the batch-norm
  // statistics are averaged, so every rank checks what rank 0 saves).
  void check_model(const minidl::Module& model, int64_t epoch, int64_t step, double lr) {
    for (const auto& [name, tensor] : model.state_dict()) {
      const minidl::NonFinite bad = minidl::first_non_finite(tensor);
      if (!bad.found()) continue;
      stop(step, minidl::str_cat("training diverged: after epoch ", epoch, " (step ", step,
                                 ", learning rate ", minidl::number_str(lr), ") the model's '", name, "' holds ",
                                 minidl::number_str(bad.value), " at ", minidl::index_str(tensor.shape(), bad.index),
                                 ". Stopped.", save_note(), " Try a smaller --lr."));
      return;
    }
  }

  // Stops when an evaluation loss (`what`: "test", "validation"; in a job, the loss over every rank's
  // part) of the epoch ending at `step` is not finite.
  void check_eval_loss(double loss, const char* what, int64_t epoch, int64_t step) {
    if (std::isfinite(loss)) return;
    stop(step, minidl::str_cat("training diverged: the ", what, " loss after epoch ", epoch, " is ",
                               minidl::number_str(loss), ". Stopped.", save_note(), " Try a smaller --lr."));
  }

  // In a job: collective. Every rank throws the same dist::JobError (exit status 3) when any rank noted
  // a problem since the start; the message is that of the earliest step (the lowest rank among equals).
  // Without a job the checks have thrown already and this does nothing.
  void agree() const {
    if (!job_) return;
    const std::vector<std::string> steps =
        minidl::dist::all_gather_strings(problem_.empty() ? "" : std::to_string(problem_step_));
    const std::vector<std::string> problems = minidl::dist::all_gather_strings(problem_);
    int first = -1;
    for (int r = 0; r < static_cast<int>(steps.size()); ++r)
      if (!steps[r].empty() && (first < 0 || std::stoll(steps[r]) < std::stoll(steps[first]))) first = r;
    if (first >= 0) throw minidl::dist::JobError(problems[first], kExitNonFinite);
  }

 private:
  // Alone: throws NonFiniteError now. In a job: notes the first problem, for agree().
  void stop(int64_t step, const std::string& message) {
    if (!job_) throw minidl::NonFiniteError(message);
    if (!problem_.empty()) return;
    problem_ = message;
    problem_step_ = step;
  }

  // " on rank 1 of 4" in a job of several processes (a training loss is one rank's).
  std::string on_rank() const {
    return job_ && job_->world_size > 1 ? minidl::str_cat(" on rank ", job_->rank, " of ", job_->world_size) : "";
  }

  // What the --save file holds now.
  std::string save_note() const {
    if (save_path_.empty()) return "";
    if (last_saved_epoch_step_ > 0)
      return minidl::str_cat(" ", save_path_, " keeps step ", last_saved_epoch_step_, " of epoch ",
                             last_saved_epoch_ + 1, ", the last good state.");
    if (last_saved_epoch_ > 0)
      return minidl::str_cat(" ", save_path_, " keeps epoch ", last_saved_epoch_, ", the last good one.");
    return minidl::str_cat(" ", save_path_, " was not written by this run.");
  }

  std::string save_path_;
  const minidl::dist::DistributedRun* job_;
  int64_t last_saved_epoch_ = 0, last_saved_epoch_step_ = 0;
  std::string problem_;       // in a job: this rank's first problem ("" while there is none)
  int64_t problem_step_ = 0;  // and its step
};

}  // namespace examples
