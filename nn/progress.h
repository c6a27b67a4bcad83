// nn/progress.h — progress reporting for long loops (training epochs, evaluation).
//
// On a terminal: one live line, redrawn in place (\r) at most 10 times a second:
//   epoch 1/3 [########............] 412/938  loss 0.2114  acc 93.61%  2950 img/s  ETA 0:09
// Otherwise (a pipe, a log file): a plain line every `interval_seconds` and at 25%, 50% and 75%.
// finish() ends the loop with one summary line (the live line is replaced by it). A loop that is one
// epoch of a longer run can show the run's time left too: "ETA epoch 0:09, run ~0:41" (set_run_remaining).
//
// Reading a loss from a GPU synchronises; callers check due() first and compute the displayed values
// only when a line is about to be shown.
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace minidl {

class Progress {
 public:
  enum class Mode { automatic, live, plain };

  // `title` starts every line ("epoch 1/3"); total_steps >= 0 (a loop of 0 steps prints nothing but
  // the summary given to finish(): callers check for empty data themselves, with a message naming it).
  Progress(std::string title, int64_t total_steps, Mode mode = Mode::automatic, std::FILE* out = stdout,
           double interval_seconds = 10);

  // Whether update(step, ...) would print.
  bool due(int64_t step) const;
  // Reports that `step` of total_steps are done (1-based), having processed `samples` samples so far,
  // with the running mean loss and accuracy (in [0, 1]). Prints when due.
  void update(int64_t step, int64_t samples, double loss, double accuracy);
  // Removes the live line (nothing to do in plain mode).
  void clear();
  // Clears the live line and prints `summary` on its own line.
  void finish(const std::string& summary);

  // A loop resumed after `step` steps and `samples` samples (a run continued in the middle of an epoch):
  // images per second and the ETA count only what this loop does; the plain mode's quarters already
  // passed are not reported again.
  void resumed_at(int64_t step, int64_t samples);

  // The whole run's seconds left, shown after this loop's ETA: `run_remaining(eta, step_seconds)` gets this
  // loop's ETA and the seconds a step of it has taken so far (the training programs:
  // examples/run_estimate.h).
  void set_run_remaining(std::function<double(double eta, double step_seconds)> run_remaining);
  // The seconds a step of this loop has taken so far after `step` steps (0 before one), and what is left
  // of the loop at that rate.
  double step_seconds(int64_t step) const;
  double eta_seconds(int64_t step) const;

  double elapsed_seconds() const;
  bool live() const { return live_; }

 private:
  std::string status_text(int64_t step, int64_t samples, double loss, double accuracy) const;

  std::string title_;
  int64_t total_;
  bool live_;
  std::FILE* out_;
  double interval_;
  std::chrono::steady_clock::time_point start_;
  double last_print_;          // seconds since start
  int next_quarter_ = 1;       // plain mode: the next of 25/50/75% to report
  int64_t first_step_ = 0, first_samples_ = 0;  // where the loop started (resumed_at)
  size_t last_width_ = 0;      // live mode: characters on the line, to blank leftovers
  std::function<double(double, double)> run_remaining_;  // set_run_remaining, or empty
};

// "1:05", "1:02:03": for ETAs and epoch times.
std::string format_duration(double seconds);

}  // namespace minidl
