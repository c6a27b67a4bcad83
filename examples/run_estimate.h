// examples/run_estimate.h — how long the whole run has left, for both training programs: the progress line
// says "ETA epoch 1:45:53, run ~21:03:00" and every epoch's summary "run ~19:17:07 left", and on a CPU a
// run projected to take hours says so once, near its start, with the shorter recipe to try.
//
// The arithmetic, with s the seconds a training step takes and e the seconds an evaluation takes:
//
//   run left = this epoch's ETA (the progress line's, from this epoch's own rate)
//            + e                                    this epoch's evaluation, unless done
//            + (steps after this epoch) * s + (evaluations after this epoch) * e
//
// s is the mean over the epochs this invocation finished (before the first one ends: this epoch's rate so
// far); e the mean of the evaluations measured, and before the first one a guess: an evaluation of N
// samples costs about N / batch / 3 training steps (a forward pass without backward and optimizer step is
// about a third of a step). The figure is an estimate ("~") and changes as epochs finish; a machine
// shared with other work makes it wander.
#pragma once
#include <cstdint>
#include <string>

namespace examples {

class RunEstimate {
 public:
  // `epochs`, `steps_per_epoch`, `total_steps`: the run's (the last epoch may be cut short: captcha's
  // --steps); `eval_steps_guess`: an evaluation's cost in training steps until one is measured (eval
  // samples / batch / 3); `evaluates`: false for a run that evaluates nothing.
  RunEstimate(int64_t epochs, int64_t steps_per_epoch, int64_t total_steps, double eval_steps_guess,
              bool evaluates = true);

  // An epoch ended: `steps` training steps of this invocation took `train_seconds`, its evaluation
  // `eval_seconds`.
  void epoch_done(int64_t steps, double train_seconds, double eval_seconds);

  // Seconds the run has left during epoch `epoch` (1-based), with `epoch_eta` seconds of training left in
  // this epoch and a step of this epoch taking `step_seconds_now` so far. `evaluated`: this epoch's
  // evaluation is done (at its end).
  double remaining(int64_t epoch, double epoch_eta, double step_seconds_now, bool evaluated) const;

  // The seconds a step takes as the estimate counts it: the finished epochs' mean, else `step_seconds`.
  double step_seconds(double step_seconds_now) const;
  // The seconds an evaluation takes as the estimate counts it.
  double eval_seconds(double step_seconds_now) const;

 private:
  int64_t epochs_, steps_per_epoch_, total_steps_;
  double eval_steps_guess_;
  bool evaluates_;
  int64_t measured_steps_ = 0, measured_evals_ = 0;
  double measured_train_seconds_ = 0, measured_eval_seconds_ = 0;
};

// Above this projection, a run on a CPU warns at its start (long_run_warning).
constexpr double kLongCpuRunSeconds = 3600;

// The warning a CPU run prints once its first steps are timed, or "" when `projected_seconds` (the time
// left) is at most kLongCpuRunSeconds: "<program>: warning: on this CPU the run needs about 21:03:00 more
// (12 epoch(s) of 500 steps, 13 s a step); <hint>". `hint`: what to try instead ("" for nothing).
std::string long_run_warning(const std::string& program, double projected_seconds, int64_t epochs,
                             int64_t steps_per_epoch, double step_seconds, const std::string& hint);

}  // namespace examples
