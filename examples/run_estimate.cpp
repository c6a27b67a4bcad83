// examples/run_estimate.cpp — the whole run's time left, and the long-CPU-run warning (examples/run_estimate.h).
#include "examples/run_estimate.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "nn/progress.h"

namespace examples {

RunEstimate::RunEstimate(int64_t epochs, int64_t steps_per_epoch, int64_t total_steps, double eval_steps_guess,
                         bool evaluates)
    : epochs_(epochs),
      steps_per_epoch_(steps_per_epoch),
      total_steps_(total_steps),
      eval_steps_guess_(eval_steps_guess),
      evaluates_(evaluates) {}

void RunEstimate::epoch_done(int64_t steps, double train_seconds, double eval_seconds) {
  if (steps > 0) {
    measured_steps_ += steps;
    measured_train_seconds_ += train_seconds;
  }
  if (evaluates_) {
    ++measured_evals_;
    measured_eval_seconds_ += eval_seconds;
  }
}

double RunEstimate::step_seconds(double step_seconds_now) const {
  return measured_steps_ > 0 ? measured_train_seconds_ / static_cast<double>(measured_steps_) : step_seconds_now;
}

double RunEstimate::eval_seconds(double step_seconds_now) const {
  if (!evaluates_) return 0;
  if (measured_evals_ > 0) return measured_eval_seconds_ / static_cast<double>(measured_evals_);
  return eval_steps_guess_ * step_seconds(step_seconds_now);
}

double RunEstimate::remaining(int64_t epoch, double epoch_eta, double step_seconds_now, bool evaluated) const {
  const double s = step_seconds(step_seconds_now), e = eval_seconds(step_seconds_now);
  const int64_t epoch_end = std::min(epoch * steps_per_epoch_, total_steps_);  // the run's step after this epoch
  const int64_t later_steps = std::max<int64_t>(0, total_steps_ - epoch_end);
  const int64_t later_evals = std::max<int64_t>(0, epochs_ - epoch);
  return epoch_eta + (evaluated ? 0 : e) + static_cast<double>(later_steps) * s + static_cast<double>(later_evals) * e;
}

std::string long_run_warning(const std::string& program, double projected_seconds, int64_t epochs,
                             int64_t steps_per_epoch, double step_seconds, const std::string& hint) {
  if (projected_seconds <= kLongCpuRunSeconds) return "";
  char per_step[32];
  std::snprintf(per_step, sizeof per_step, "%.2g s a step", step_seconds);
  return minidl::str_cat(program, ": warning: on this CPU the run needs about ",
                         minidl::format_duration(projected_seconds), " more (", epochs, " epoch(s) of ",
                         steps_per_epoch, " steps, ", per_step, ")", hint.empty() ? "" : "; ", hint);
}

}  // namespace examples
