// examples/training_loop.cpp — the run plumbing both training programs share (examples/training_loop.h).
#include "examples/training_loop.h"

#include <cstdio>

#include "dist/process.h"
#include "nn/checkpoint.h"

namespace examples {

void prepare_save_path(const std::string& program, const std::string& path, const char* flag,
                       const minidl::dist::DistributedRun* job, bool say_removed) {
  const auto check = [&] {
    const minidl::SavePath save = minidl::prepare_checkpoint_path(path, flag);
    if (say_removed && save.stale_removed > 0)
      std::printf("%s: removed %d temporary file(s) %s.tmp-* left by interrupted saves\n", program.c_str(),
                  save.stale_removed, save.target.c_str());
  };
  if (job)
    minidl::dist::run_on_root(check);
  else
    check();
}

std::unique_ptr<minidl::Adam> make_adam(const std::vector<minidl::Tensor>& parameters,
                                        const minidl::AdamOptions& options) {
  if (options.weight_decay > 0) return std::make_unique<minidl::AdamW>(parameters, options);
  return std::make_unique<minidl::Adam>(parameters, options);
}

namespace {
// The steps timed before a CPU run's length is projected (the first one, which allocates, among them).
constexpr int64_t kStepsBeforeWarning = 5;
}  // namespace

TrainingLoop::TrainingLoop(Parts parts)
    : p_(std::move(parts)),
      estimate_(p_.epochs, p_.batches_per_epoch, p_.total_steps, p_.eval_steps_guess, p_.eval_steps_guess > 0) {}

void TrainingLoop::begin_epoch(int64_t epoch, minidl::Progress& progress) {
  progress.set_run_remaining([this, epoch](double eta, double step_seconds) {
    return estimate_.remaining(epoch, eta, step_seconds, /*evaluated=*/false);
  });
}

std::string TrainingLoop::end_epoch(int64_t epoch, int64_t steps, double train_seconds, double eval_seconds) {
  estimate_.epoch_done(steps, train_seconds, eval_seconds);
  if (epoch >= p_.epochs) return "";
  return ", run ~" + minidl::format_duration(estimate_.remaining(epoch, 0, 0, /*evaluated=*/true)) + " left";
}

void TrainingLoop::announce_resume(const std::string& path, const RunPosition& start, const Metadata& resumed,
                                   std::vector<std::string> notes) {
  p_.guard->saved(start.epoch, start.epoch_step);  // what the file holds already
  const std::string bound_note = p_.guard->resumed(resumed, path);
  if (!bound_note.empty()) notes.push_back(bound_note);
  std::printf("%s: resuming %s %s; saving to %s\n", p_.program.c_str(), path.c_str(),
              describe_position(start, p_.batches_per_epoch).c_str(), p_.save_path.c_str());
  for (const std::string& note : notes) std::printf("%s: %s\n", p_.program.c_str(), note.c_str());
}

void TrainingLoop::save(const RunPosition& at, const Metadata& extra, const std::string& path) {
  if (p_.root) {
    Metadata meta = resumable_metadata(p_.settings, p_.seed, at);
    if (p_.program_metadata)
      for (const auto& [key, value] : p_.program_metadata()) meta[key] = value;
    for (const auto& [key, value] : fingerprint_metadata(*p_.fingerprints)) meta[key] = value;
    for (const auto& [key, value] : p_.guard->metadata()) meta[key] = value;
    for (const auto& [key, value] : extra) meta[key] = value;
    minidl::save_checkpoint(path, *p_.model, p_.optimizer, meta);
    if (at.mid_epoch())
      std::printf("%s: saved %s (%s)\n", p_.program.c_str(), path.c_str(),
                  describe_position(at, p_.batches_per_epoch).c_str());
    else
      std::printf("%s: saved %s\n", p_.program.c_str(), path.c_str());
  }
  // A later divergence message says what the save file holds (not a second file such as --save-best).
  if (path == p_.save_path) p_.guard->saved(at.epoch, at.epoch_step);
}

double TrainingLoop::seconds_since_start() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - p_.started).count();
}

void TrainingLoop::write_step_metrics(int64_t epoch, int64_t epoch_step, int64_t run_step, const EpochSums& sums) {
  sums.flush();
  const std::pair<double, double> total = sums.loss_total();
  // The window starts at the last record of this epoch, or at the epoch's start. A run resumed in the middle
  // of an epoch holds that epoch's earlier sums too: its first record would cover more than N steps, and
  // goes without the loss.
  const bool new_epoch = epoch != last_metrics_epoch_ || total.second < last_loss_total_.second;
  if (new_epoch) last_loss_total_ = {0, 0};
  last_metrics_epoch_ = epoch;
  const double samples = new_epoch && epoch_step > p_.metrics_every ? 0 : total.second - last_loss_total_.second;
  const double epoch_done = static_cast<double>(epoch_step) / static_cast<double>(p_.batches_per_epoch);
  nlohmann::json record = {
      {"epoch", static_cast<double>(epoch - 1) + epoch_done}, {"step", run_step}, {"every_steps", p_.metrics_every}};
  if (samples > 0) record[p_.loss_key] = (total.first - last_loss_total_.first) / samples;
  record["lr"] = p_.optimizer->lr();
  record["seconds_since_start"] = seconds_since_start();
  p_.metrics->write(record);
  last_loss_total_ = total;
}

std::optional<int> TrainingLoop::after_step(int64_t epoch, int64_t epoch_step, int64_t run_step, bool epoch_done,
                                            minidl::Progress& progress, const EpochSums& sums) {
  if (p_.metrics && p_.metrics_every > 0 && run_step % p_.metrics_every == 0 && sums.loss_total)
    write_step_metrics(epoch, epoch_step, run_step, sums);
  if (p_.dp && run_step % kStepsBetweenAgreements == 0) {  // every rank stops if one diverged
    sums.flush();
    p_.guard->agree();
  }
  if (++steps_this_invocation_ == kStepsBeforeWarning && p_.on_cpu && p_.root && !epoch_done) {
    const double step_seconds = progress.step_seconds(epoch_step);
    const double left = estimate_.remaining(epoch, progress.eta_seconds(epoch_step), step_seconds, false);
    const std::string warning =
        long_run_warning(p_.program, left, p_.epochs, p_.batches_per_epoch, step_seconds, p_.long_run_hint);
    if (!warning.empty()) {
      progress.clear();
      std::printf("%s\n", warning.c_str());
      std::fflush(stdout);
    }
  }
  const RunControl::Decision decision = p_.control->after_step(run_step, epoch_done);
  if (!decision.save && !decision.stop) return std::nullopt;
  progress.clear();  // a live progress line is drawn again at the next update
  sums.flush();
  const RunPosition at{epoch - 1, epoch_step, run_step, p_.dp ? p_.dp->sum(sums.sums()) : sums.sums()};
  with_averaged_buffers(*p_.model, p_.dp, [&] {  // batch-norm statistics, if any: the ranks' average
    p_.guard->check_state(*p_.model, p_.optimizer, epoch, run_step, p_.optimizer->lr());
    p_.guard->agree();
    if (decision.save) save(at, {}, p_.save_path);
  });
  if (!decision.stop) return std::nullopt;
  std::printf("%s\n", p_.control->stop_message(at, p_.batches_per_epoch, decision.save).c_str());
  return p_.control->exit_status();
}

void TrainingLoop::end_of_epoch_steps(int64_t epoch, int64_t run_step, const EpochSums& sums) {
  sums.flush();
  if (p_.dp) p_.dp->average_buffers();  // batch-norm statistics, if any: checked, evaluated, saved from here
  p_.guard->check_state(*p_.model, p_.optimizer, epoch, run_step, p_.optimizer->lr());
  p_.guard->agree();
}

void TrainingLoop::check_eval_loss(double loss, const char* what, int64_t epoch, int64_t run_step) {
  p_.guard->check_eval_loss(loss, what, epoch, run_step);
  p_.guard->agree();
}

std::optional<int> TrainingLoop::after_epoch(const RunPosition& at, bool run_done) {
  if (!p_.control->after_epoch(at.step, run_done)) return std::nullopt;
  std::printf("%s\n", p_.control->stop_message(at, p_.batches_per_epoch, !p_.save_path.empty()).c_str());
  return p_.control->exit_status();
}

}  // namespace examples
