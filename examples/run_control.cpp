// examples/run_control.cpp — stopping a run on purpose, for both training programs (examples/run_state.h
// RunControl): the SIGINT/SIGTERM handler, the decisions after every step and epoch (save mid-epoch?
// stop now?, for --save-every, --stop-after-epochs, --stop-after-steps and Ctrl-C, the ranks of a job
// agreeing), and the line that says why the run stopped and how to resume it (resume_command). What a
// save holds and how --resume reads it back are in examples/run_state.cpp.
#include "examples/run_state.h"

#include <errno.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "dist/process.h"

namespace examples {

using minidl::str_cat;

// ------------------------------------------------------------------ the command that resumes

namespace {

// An argument as a POSIX shell reads it back: unchanged when it has only safe characters, else in
// single quotes (a quote inside becomes '\'').
std::string shell_quoted(const std::string& arg) {
  const bool safe = !arg.empty() && arg.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                          "0123456789_./:=,@%+-") == std::string::npos;
  if (safe) return arg;
  std::string q = "'";
  for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::string resume_command(const std::string& file, int world_size) {
  const std::vector<std::string> args = minidl::dist::command_line_arguments();
  std::string cmd = world_size > 1 ? str_cat("mpirun -np ", world_size, " ") : "";
  cmd += shell_quoted(program_invocation_name);  // argv[0], as it was typed (glibc)
  const char* dropped[] = {"--resume", "--init-from", "--save", "--stop-after-epochs", "--stop-after-steps"};
  for (size_t i = 0; i < args.size(); ++i) {
    bool drop = false;
    for (const char* flag : dropped) {
      const std::string f = flag;
      if (args[i] == f) {  // "--save FILE": the value goes too
        drop = true;
        ++i;
        break;
      }
      if (args[i].compare(0, f.size() + 1, f + "=") == 0) {  // "--save=FILE"
        drop = true;
        break;
      }
    }
    if (!drop) cmd += " " + shell_quoted(args[i]);
  }
  return cmd + " --resume " + shell_quoted(file);
}

// ------------------------------------------------------------------ SIGINT, SIGTERM
//
// The handler notes the first signal, writes a prepared line to stderr, and gives both signals their
// previous dispositions back, so a second one acts as if the handler had never been there. It calls
// only async-signal-safe functions (write, sigaction) on data prepared before it was installed.

namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM};
constexpr int kNumStopSignals = 2;
volatile std::sig_atomic_t g_noted = 0;
struct sigaction g_previous[kNumStopSignals];               // set before the handler is installed
volatile std::sig_atomic_t g_installed[kNumStopSignals];    // read by the handler
char g_notice[kNumStopSignals][256];  // the line written when the signal comes
size_t g_notice_length[kNumStopSignals];
bool g_in_use = false;  // one RunControl at a time

extern "C" void note_stop_signal(int sig) {
  const int saved_errno = errno;
  for (int i = 0; i < kNumStopSignals; ++i) {
    if (kStopSignals[i] == sig && g_noted == 0) {
      g_noted = sig;
      const ssize_t written = ::write(STDERR_FILENO, g_notice[i], g_notice_length[i]);
      (void)written;  // nothing to do about a closed stderr
    }
  }
  for (int i = 0; i < kNumStopSignals; ++i)
    if (g_installed[i]) ::sigaction(kStopSignals[i], &g_previous[i], nullptr);
  errno = saved_errno;
}

const char* signal_name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal"; }

}  // namespace

int noted_stop_signal() { return g_noted; }

RunControl::RunControl(std::string program, const RunFlags& flags, int64_t start_step,
                       const minidl::dist::DistributedRun* job)
    : program_(std::move(program)), flags_(flags), start_step_(start_step), job_(job) {
  MINIDL_CHECK(!g_in_use, "RunControl: only one at a time");
  g_in_use = true;
  g_noted = 0;
  const std::string then = flags_.save_path().empty() ? "then stopping (nothing will be saved: no --save)"
                                                      : "then saving and stopping";
  for (int i = 0; i < kNumStopSignals; ++i) {
    const std::string notice =
        str_cat("\n", program_, ": ", kStopSignals[i] == SIGINT ? "SIGINT (Ctrl-C)" : "SIGTERM",
                ": finishing this step, ", then, "; a second one quits at once\n");
    std::snprintf(g_notice[i], sizeof g_notice[i], "%s", notice.c_str());
    g_notice_length[i] = std::strlen(g_notice[i]);
    g_installed[i] = 0;
    if (::sigaction(kStopSignals[i], nullptr, &g_previous[i]) != 0) continue;
    // Only over the default disposition: an ignored signal stays ignored, another handler stays in charge.
    if ((g_previous[i].sa_flags & SA_SIGINFO) || g_previous[i].sa_handler != SIG_DFL) continue;
    struct sigaction handler {};
    handler.sa_handler = note_stop_signal;
    handler.sa_flags = SA_RESTART;  // a read or write in progress goes on rather than failing with EINTR
    sigemptyset(&handler.sa_mask);
    for (int s : kStopSignals) sigaddset(&handler.sa_mask, s);  // one handler run at a time
    g_installed[i] = 1;  // before the handler can run: it restores what g_previous holds
    if (::sigaction(kStopSignals[i], &handler, nullptr) != 0) g_installed[i] = 0;
  }
}

RunControl::~RunControl() {
  for (int i = 0; i < kNumStopSignals; ++i)
    if (g_installed[i]) ::sigaction(kStopSignals[i], &g_previous[i], nullptr);
  for (int i = 0; i < kNumStopSignals; ++i) g_installed[i] = 0;
  g_in_use = false;
}

bool RunControl::signal_agreed() {
  const int mine = g_noted;
  signal_ = job_ ? minidl::dist::max_over_ranks(mine) : mine;
  return signal_ != 0;
}

RunControl::Decision RunControl::after_step(int64_t run_step, bool epoch_done) {
  Decision d;
  const bool signalled = signal_agreed();  // every step, on every rank: the ranks stop together
  if (epoch_done) return d;                // the epoch's end decides, after its evaluation and save
  const bool can_save = !flags_.save_path().empty();
  if (signalled) {
    reason_ = StopReason::signal;
    d.save = can_save;
    d.stop = true;
  } else if (flags_.stop_after_steps > 0 && run_step - start_step_ >= flags_.stop_after_steps) {
    reason_ = StopReason::steps_done;
    d.save = true;
    d.stop = true;
  } else if (flags_.save_every > 0 && run_step % flags_.save_every == 0) {
    d.save = can_save;
  }
  return d;
}

bool RunControl::after_epoch(int64_t run_step, bool run_done) {
  ++epochs_this_run_;
  const bool signalled = signal_agreed();
  if (run_done) return false;
  if (signalled)
    reason_ = StopReason::signal;
  else if (flags_.stop_after_epochs > 0 && epochs_this_run_ >= flags_.stop_after_epochs)
    reason_ = StopReason::epochs_done;
  else if (flags_.stop_after_steps > 0 && run_step - start_step_ >= flags_.stop_after_steps)
    reason_ = StopReason::steps_done;
  return reason_ != StopReason::none;
}

int RunControl::exit_status() const { return reason_ == StopReason::signal ? 128 + signal_ : 0; }

std::string RunControl::stop_message(const RunPosition& at, int64_t steps_per_epoch, bool saved) const {
  std::string why;
  switch (reason_) {
    case StopReason::signal: why = str_cat("interrupted by ", signal_name(signal_)); break;
    case StopReason::epochs_done: why = str_cat("stopped as asked (--stop-after-epochs ", flags_.stop_after_epochs, ")"); break;
    case StopReason::steps_done: why = str_cat("stopped as asked (--stop-after-steps ", flags_.stop_after_steps, ")"); break;
    case StopReason::none: why = "stopped"; break;
  }
  const std::string file = flags_.save_path();
  const int world = job_ ? job_->world_size : 1;
  if (!saved)
    return str_cat(program_, ": ", why, " ", describe_position(at, steps_per_epoch),
                   "; nothing was saved (no --save FILE), so the run cannot be resumed");
  return str_cat(program_, ": ", why, " ", describe_position(at, steps_per_epoch), "; saved ", file,
                 "; resume with: ", resume_command(file, world));
}

}  // namespace examples
