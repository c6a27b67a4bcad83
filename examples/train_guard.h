// examples/train_guard.h — what both training programs do when the numbers go bad: stop at the first
// loss that is non-finite or has grown past any healthy run's, say where (step, loss, learning rate) and
// what happened to the --save file, and never save a diverged state over the last good one.
//
// What stops a run (exit status 3), checked as described below:
//   - a training, validation or test loss that is NaN or infinite;
//   - a loss above kMaxLossGrowth (10,000) times the run's first training loss. A diverging run's loss
//     grows by orders of magnitude within a few steps (`--lr 1e4`: 1e17), while a healthy run's stays
//     near or below its first, the untrained model's (ln 10 = 2.3 for MNIST's ten classes); README.md
//     ("Reliability: what is guaranteed") says which runs were checked against the bound. The first loss is saved with every checkpoint
//     ("first_loss") and restored by --resume, so a resumed run keeps the same bound; a file saved
//     before first_loss existed resumes with the bound off (the program says so);
//   - before every save and evaluation: a parameter, buffer (batch-norm statistics) or optimizer state
//     (Adam's moments, its step and learning rate) that is NaN or infinite, or a parameter larger in
//     magnitude than kMaxParameter (1e6: trained weights of both models are of order 1).
// What is not caught: weights that are wrong without being huge or making the loss grow (a model that
// learnt nothing looks like that too), and a state one update past the last checked loss whose weights
// grew by less than kMaxParameter: a save at that step keeps it (mid-epoch: --save-every, Ctrl-C; at an
// epoch's end only without an evaluation, whose loss is checked before the save), and the next loss
// stops the run. `mnist eval`, `captcha eval` and both `predict` commands refuse a model whose outputs
// are NaN or infinite, so such a file never passes for a model.
//
// The loops read their losses from the device in batches (a read from a GPU waits for it), so a NaN is
// noticed up to a few dozen steps after it appeared; each loss keeps its step and learning rate, so the
// report names the first bad step all the same. Nothing is saved unchecked: a save (at the end of an
// epoch, or mid-epoch: --save-every, Ctrl-C) comes after every loss read so far, every parameter and
// buffer and the optimizer's state have been checked.
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
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/numerics.h"
#include "core/tensor.h"
#include "dist/launch.h"
#include "dist/process.h"
#include "examples/run_state.h"
#include "nn/module.h"
#include "nn/optim.h"

namespace examples {

// The exit status of a run stopped by NonFiniteError.
constexpr int kExitNonFinite = 3;

// --distributed: how often (in training steps) the ranks compare their loss checks within an epoch.
// The losses are read from the device at least this often anyway (the programs' loss logs flush every
// 64 steps), so a job stops at most this many steps after the first bad loss, as one process does.
constexpr int64_t kStepsBetweenAgreements = 64;

// A loss above this many times the run's first training loss means the run diverged (see the header
// comment for why it never trips on a healthy run).
constexpr double kMaxLossGrowth = 1e4;
// A parameter larger in magnitude than this means the run diverged.
constexpr double kMaxParameter = 1e6;

// The element of largest magnitude of a floating-point tensor (index -1 for an empty or integer one).
struct LargestElement {
  int64_t index = -1;
  double value = 0;
};
inline LargestElement largest_magnitude(const minidl::Tensor& t) {
  LargestElement out;
  if (t.dtype() != minidl::DType::float32 && t.dtype() != minidl::DType::float64) return out;
  const std::vector<double> values = t.to_vector<double>();
  for (size_t i = 0; i < values.size(); ++i)
    if (out.index < 0 || std::fabs(values[i]) > std::fabs(out.value)) {
      out.index = static_cast<int64_t>(i);
      out.value = values[i];
    }
  return out;
}

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

  // --resume: the first loss of the run the file holds (its "first_loss"); a file without one leaves
  // the loss bound off for this run. Returns a line for the log in that case ("" otherwise).
  std::string resumed(const Metadata& saved, const std::string& path) {
    const auto it = saved.find("first_loss");
    char* end = nullptr;
    const double first = it == saved.end() ? 0 : std::strtod(it->second.c_str(), &end);
    if (it != saved.end() && end == it->second.c_str() + it->second.size() && std::isfinite(first) && first > 0) {
      first_loss_ = first;
      return "";
    }
    bound_off_ = true;
    return minidl::str_cat(path, " has no first_loss (saved by an older minidl): only a NaN or infinite loss "
                           "stops this run, not the bound on its growth (examples/train_guard.h)");
  }
  // What a checkpoint keeps for the guard of a resumed run: {"first_loss": ...} once it is known.
  Metadata metadata() const {
    if (first_loss_ <= 0) return {};
    return {{"first_loss", exact_number(first_loss_)}};
  }

  // Stops (see the header comment) when the training loss of `step` (1-based, over the run) is NaN or
  // infinite, or more than kMaxLossGrowth times the run's first.
  void check_loss(double loss, int64_t step, double lr) {
    if (!std::isfinite(loss)) {
      stop(step, minidl::str_cat(
                     "training diverged", on_rank(), ": the loss is ", minidl::number_str(loss), " at step ", step,
                     " (learning rate ", minidl::number_str(lr), "). Stopped.", save_note(),
                     " Try a smaller --lr, or run with MINIDL_CHECK_NUMERICS=1 to find the op that first "
                     "produced a NaN or an infinity."));
      return;
    }
    if (first_loss_ <= 0 && !bound_off_ && loss > 0) first_loss_ = loss;
    if (!too_large(loss)) return;
    stop(step, minidl::str_cat("training diverged", on_rank(), ": the loss is ", minidl::number_str(loss),
                               " at step ", step, " (learning rate ", minidl::number_str(lr), "), more than ",
                               growth_bound(), ". Stopped.", save_note(), " Try a smaller --lr."));
  }

  // Stops when what a save or an evaluation would use is broken (an update after the last checked loss
  // can still break the weights): a parameter, buffer or `optimizer` state (may be null) that is NaN or
  // infinite, or a parameter above kMaxParameter in magnitude. Checked before every evaluation and
  // save (in a job, after the batch-norm statistics are averaged, so every rank checks what rank 0
  // saves).
  void check_state(const minidl::Module& model, const minidl::Optimizer* optimizer, int64_t epoch, int64_t step,
                   double lr) {
    const std::string where = minidl::str_cat("training diverged: at step ", step, " (epoch ", epoch,
                                              ", learning rate ", minidl::number_str(lr), ") ");
    const std::string end = minidl::str_cat(". Stopped.", save_note(), " Try a smaller --lr.");
    for (const auto& [name, tensor] : model.state_dict()) {
      const minidl::NonFinite bad = minidl::first_non_finite(tensor);
      if (!bad.found()) continue;
      stop(step, minidl::str_cat(where, "the model's '", name, "' holds ", minidl::number_str(bad.value), " at ",
                                 minidl::index_str(tensor.shape(), bad.index), end));
      return;
    }
    for (const auto& [name, tensor] : model.named_parameters()) {
      const LargestElement big = largest_magnitude(tensor);
      if (big.index < 0 || std::fabs(big.value) <= kMaxParameter) continue;
      stop(step, minidl::str_cat(where, "the model's '", name, "' holds ", minidl::number_str(big.value), " at ",
                                 minidl::index_str(tensor.shape(), big.index), ", beyond the ",
                                 minidl::number_str(kMaxParameter), " no healthy run's weights come near", end));
      return;
    }
    if (!optimizer) return;
    for (const auto& [name, tensor] : optimizer->state_dict()) {
      const minidl::NonFinite bad = minidl::first_non_finite(tensor);
      if (!bad.found()) continue;
      stop(step, minidl::str_cat(where, optimizer->type_name(), "'s state '", name, "' holds ",
                                 minidl::number_str(bad.value), " at ", minidl::index_str(tensor.shape(), bad.index),
                                 end));
      return;
    }
  }

  // Stops when an evaluation loss (`what`: "test", "validation"; in a job, the loss over every rank's
  // part) of the epoch ending at `step` is not finite, or more than kMaxLossGrowth times the first
  // training loss (weights that the last updates made absurd show there).
  void check_eval_loss(double loss, const char* what, int64_t epoch, int64_t step) {
    if (std::isfinite(loss) && !too_large(loss)) return;
    stop(step, minidl::str_cat("training diverged: the ", what, " loss after epoch ", epoch, " is ",
                               minidl::number_str(loss), std::isfinite(loss) ? ", more than " + growth_bound() : "",
                               ". Stopped.", save_note(), " Try a smaller --lr."));
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

  bool too_large(double loss) const { return first_loss_ > 0 && loss > kMaxLossGrowth * first_loss_; }
  // "10000 times the run's first loss 2.30 (examples/train_guard.h)"
  std::string growth_bound() const {
    return minidl::str_cat(minidl::number_str(kMaxLossGrowth), " times the run's first loss ",
                           minidl::number_str(first_loss_), " (the bound of examples/train_guard.h)");
  }

  std::string save_path_;
  const minidl::dist::DistributedRun* job_;
  double first_loss_ = 0;   // the run's first training loss (0: not known yet)
  bool bound_off_ = false;  // resumed from a file without first_loss
  int64_t last_saved_epoch_ = 0, last_saved_epoch_step_ = 0;
  std::string problem_;       // in a job: this rank's first problem ("" while there is none)
  int64_t problem_step_ = 0;  // and its step
};

}  // namespace examples
