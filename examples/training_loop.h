// examples/training_loop.h — the run plumbing that `mnist train` and `captcha train` share around their
// epoch loops, written once: the --save path checked before any work, Adam or AdamW, what a resumed run
// prints, what every save holds, and the checks after a step and after an epoch (the divergence guard:
// examples/train_guard.h; --save-every, --stop-after-*, Ctrl-C: examples/run_state.h; the ranks of a
// --distributed job agreeing: dist/data_parallel.h).
//
// The progress line and each epoch's summary show the whole run's time left (examples/run_estimate.h).
//
// A program's loop then reads (the step, the running sums, evaluation and the summary are its own):
//
//   for each epoch:
//     loop.begin_epoch(epoch, progress);
//     for each batch:  its step; sums.add(loss); if (auto status = loop.after_step(...)) return *status;
//     loop.end_of_epoch_steps(...);   evaluate; loop.check_eval_loss(...); loop.end_epoch(...); print, write metrics
//     loop.save(end of epoch);        if (auto status = loop.after_epoch(...)) return *status;
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dist/data_parallel.h"
#include "dist/launch.h"
#include "examples/run_estimate.h"
#include "examples/run_state.h"
#include "examples/train_guard.h"
#include "nn/metrics.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "nn/progress.h"

namespace examples {

// The save path (`flag` names where it came from: "--save", or "--resume") is checked before any work (a
// missing folder should not cost an epoch), and temporary files of interrupted saves are removed, saying
// so ("<program>: removed ..."). In a job, rank 0 alone checks it (it alone saves; two ranks' clean-ups
// could remove each other's files), and every rank stops if the check fails. `say_removed`: false for a
// second file (--save-best), whose leftovers are removed silently.
void prepare_save_path(const std::string& program, const std::string& path, const char* flag,
                       const minidl::dist::DistributedRun* job, bool say_removed = true);

// Adam, or AdamW (decoupled weight decay, nn/optim.h) when options.weight_decay > 0.
std::unique_ptr<minidl::Adam> make_adam(const std::vector<minidl::Tensor>& parameters,
                                        const minidl::AdamOptions& options);

// An epoch's running sums as the loop sees them (mnist's RunningStats, captcha's LossLog): flush() reads
// what has accumulated on the device (handing every loss to the guard); sums() then gives what a mid-epoch
// save stores (examples/run_state.h epoch_sums).
// loss_total (after flush()): the epoch's loss summed over its samples so far, and those samples, for the
// per-step records of --metrics-every.
struct EpochSums {
  std::function<void()> flush;
  std::function<std::vector<double>()> sums;
  std::function<std::pair<double, double>()> loss_total;
};

class TrainingLoop {
 public:
  struct Parts {
    std::string program;  // "mnist": the start of its lines
    minidl::Module* model = nullptr;
    minidl::Optimizer* optimizer = nullptr;
    DivergenceGuard* guard = nullptr;
    RunControl* control = nullptr;
    minidl::dist::DataParallel* dp = nullptr;  // --distributed, else null
    bool root = true;                          // this process prints, writes and saves
    std::string save_path;                     // "" without --save or --resume
    int64_t batches_per_epoch = 0;
    Metadata settings;  // the run's settings (run.*, the model), saved with every checkpoint
    uint64_t seed = 0;
    const std::vector<DataFingerprint>* fingerprints = nullptr;
    std::function<Metadata()> program_metadata;  // the program's own keys for every save, if any
    // The whole run's time left (examples/run_estimate.h): its length, and what an evaluation costs in
    // training steps until one is timed (eval samples / batch / 3: examples/run_estimate.h; 0: no evaluation).
    int64_t epochs = 0, total_steps = 0;
    double eval_steps_guess = 0;
    // On a CPU, a run projected to last hours says so after its first steps, with `long_run_hint`.
    bool on_cpu = false;
    std::string long_run_hint;
    // --metrics-every N (rank 0): every N steps a record {epoch (fractional), step, every_steps, loss_key
    // (the mean over those N steps), lr, seconds_since_start} goes to `metrics`, between the per-epoch ones.
    minidl::MetricsWriter* metrics = nullptr;
    int64_t metrics_every = 0;
    std::string loss_key = "train_loss";
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  };
  explicit TrainingLoop(Parts parts);

  // Seconds since Parts::started (by default: the loop's creation), for the metrics' seconds_since_start.
  double seconds_since_start() const;

  // --resume: tells the guard what the file holds, and prints where the run resumes and `notes` (about its
  // data), with the guard's note about the file's first loss.
  void announce_resume(const std::string& path, const RunPosition& start, const Metadata& resumed,
                       std::vector<std::string> notes);

  // Writes a resumable checkpoint to `path` (rank 0; every rank calls it, after the guard has checked what
  // is saved): the model, the optimizer, where the run is and what --resume needs, then `extra`.
  void save(const RunPosition& at, const Metadata& extra, const std::string& path);

  // After every step, on every rank: in a job, the ranks agree every kStepsBetweenAgreements steps that
  // none diverged; --save-every, --stop-after-steps and Ctrl-C save in the middle of the epoch (after the
  // same checks as an epoch's end) and perhaps end this invocation: then its exit status.
  std::optional<int> after_step(int64_t epoch, int64_t epoch_step, int64_t run_step, bool epoch_done,
                                minidl::Progress& progress, const EpochSums& sums);

  // After an epoch's last step: every loss read and checked, batch-norm statistics averaged over the ranks,
  // the weights and optimizer state checked, and the ranks agree.
  void end_of_epoch_steps(int64_t epoch, int64_t run_step, const EpochSums& sums);

  // The evaluation's loss checked (a model whose outputs are NaN is not saved), and the ranks agree.
  void check_eval_loss(double loss, const char* what, int64_t epoch, int64_t run_step);

  // At an epoch's start: its progress line shows the whole run's time left too ("ETA epoch 0:09, run ~0:41").
  void begin_epoch(int64_t epoch, minidl::Progress& progress);
  // At an epoch's end, after its evaluation (`steps` of this invocation took `train_seconds`, the
  // evaluation `eval_seconds`): records the times; returns ", run ~0:41 left" for the epoch's summary
  // ("" after the run's last epoch).
  std::string end_epoch(int64_t epoch, int64_t steps, double train_seconds, double eval_seconds);

  // After an epoch's end (evaluation and save done): --stop-after-epochs and Ctrl-C end this invocation
  // here (then its exit status); `run_done`: nothing is left to train.
  std::optional<int> after_epoch(const RunPosition& at, bool run_done);

 private:
  void write_step_metrics(int64_t epoch, int64_t epoch_step, int64_t run_step, const EpochSums& sums);

  Parts p_;
  RunEstimate estimate_;
  int64_t steps_this_invocation_ = 0;  // for the long-CPU-run warning, after kStepsBeforeWarning
  std::pair<double, double> last_loss_total_{0, 0};  // at the last per-step record of this epoch
  int64_t last_metrics_epoch_ = 0;
};

}  // namespace examples
