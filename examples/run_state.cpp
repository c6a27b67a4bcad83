// examples/run_state.cpp — resumable checkpoints, mid-epoch saves and Ctrl-C for both training programs
// (examples/run_state.h).
#include "examples/run_state.h"

#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/autograd.h"
#include "core/error.h"
#include "core/printable.h"
#include "core/random.h"
#include "dist/process.h"
#include "examples/flags.h"
#include "nn/metrics.h"

namespace examples {

using minidl::str_cat;

std::string exact_number(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

Metadata resumable_metadata(const Metadata& settings, uint64_t seed, const RunPosition& at) {
  Metadata m = settings;
  m["seed"] = std::to_string(seed);
  m["epoch"] = std::to_string(at.epoch);
  m["epoch_step"] = std::to_string(at.epoch_step);
  m["step"] = std::to_string(at.step);
  m["random_offset"] = std::to_string(minidl::current_random_offset());
  if (at.mid_epoch()) {
    std::string sums;
    for (double s : at.epoch_sums) sums += (sums.empty() ? "" : ",") + exact_number(s);
    m["epoch_sums"] = sums;
  }
  return m;
}

namespace {

// A saved value as quoted in a message: one printable line of at most 43 characters (the file may be
// damaged or crafted; core/printable.h).
std::string shown(const std::string& text) { return minidl::shown_value(text); }

// A whole non-negative integer of the metadata, or an error naming the file and the key.
template <typename T>
T integer_of(const Metadata& saved, const std::string& key, const std::string& path) {
  const std::string& text = saved.at(key);
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  MINIDL_CHECK(ec == std::errc() && end == text.data() + text.size() && !text.empty() && value >= 0, "--resume ",
               path, ": '", key, "' is '", shown(text), "', not a whole number from 0 to ", std::numeric_limits<T>::max());
  return value;
}

std::vector<double> numbers_of(const std::string& text, const std::string& path) {
  std::vector<double> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string field = text.substr(start, comma - start);
    char* end = nullptr;
    const double v = std::strtod(field.c_str(), &end);
    MINIDL_CHECK(!field.empty() && end == field.c_str() + field.size() && std::isfinite(v), "--resume ", path,
                 ": 'epoch_sums' is '", shown(text), "', not a list of finite numbers");
    out.push_back(v);
    start = comma + 1;
  }
  return out;
}

}  // namespace

RunPosition resume_position(const std::string& path, const Metadata& saved, const Metadata& expected, size_t sums) {
  std::string differences;
  for (const auto& [key, value] : expected) {
    auto it = saved.find(key);
    if (it != saved.end() && it->second == value) continue;
    const std::string was = it == saved.end() ? "(none)" : shown(it->second);
    differences += str_cat(differences.empty() ? "" : "; ", key, ": saved ", was, ", this run ", value);
  }
  // A run.* setting the file has and this run has not (one written only when on, like run.weight_decay).
  for (const auto& [key, value] : saved)
    if (key.rfind("run.", 0) == 0 && !expected.count(key))
      differences += str_cat(differences.empty() ? "" : "; ", key, ": saved ", shown(value), ", this run (none)");
  MINIDL_CHECK(differences.empty(), "--resume ", path, ": the saved run had other settings; resume with the same "
               "flags (", differences, ")");
  for (const char* key : {"seed", "epoch", "step", "random_offset"})
    MINIDL_CHECK(saved.count(key), "--resume ", path, ": no '", key,
                 "' in the file: it was not saved by a resumable run (or by an older minidl)");
  RunPosition at;
  at.epoch = integer_of<int64_t>(saved, "epoch", path);
  at.step = integer_of<int64_t>(saved, "step", path);
  if (saved.count("epoch_step")) at.epoch_step = integer_of<int64_t>(saved, "epoch_step", path);  // older files: 0
  if (at.mid_epoch()) {
    MINIDL_CHECK(saved.count("epoch_sums"), "--resume ", path, ": saved in the middle of an epoch but without "
                 "'epoch_sums'");
    at.epoch_sums = numbers_of(saved.at("epoch_sums"), path);
    MINIDL_CHECK(at.epoch_sums.size() == sums, "--resume ", path, ": 'epoch_sums' has ", at.epoch_sums.size(),
                 " numbers, this program keeps ", sums);
  }
  minidl::set_random_state(integer_of<uint64_t>(saved, "seed", path),
                           integer_of<uint64_t>(saved, "random_offset", path));
  return at;
}

uint64_t fnv1a_64(const void* bytes, size_t size, uint64_t hash) {
  constexpr uint64_t kPrime = 1099511628211ull;  // FNV's 64-bit prime
  const auto* p = static_cast<const unsigned char*>(bytes);
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {  // FNV-1a's step on a word: a change to any word changes the result
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    hash ^= word;
    hash *= kPrime;
  }
  for (; i < size; ++i) {  // the last bytes one by one
    hash ^= p[i];
    hash *= kPrime;
  }
  return hash;
}

std::string data_fingerprint(const minidl::Tensor& inputs, const minidl::Tensor& targets) {
  const minidl::Tensor x = inputs.to(minidl::Device::cpu()).contiguous();
  const minidl::Tensor y = targets.to(minidl::Device::cpu()).contiguous();
  uint64_t hash = fnv1a_64(x.raw_data(), static_cast<size_t>(x.numel()) * minidl::dtype_size(x.dtype()));
  hash = fnv1a_64(y.raw_data(), static_cast<size_t>(y.numel()) * minidl::dtype_size(y.dtype()), hash);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return str_cat(x.dim() > 0 ? x.size(0) : 0, " samples, fnv1a64 ", hex);
}

Metadata fingerprint_metadata(const std::vector<DataFingerprint>& fingerprints) {
  Metadata m;
  for (const DataFingerprint& f : fingerprints) m[f.key] = f.value;
  return m;
}

std::string check_data_fingerprints(const std::string& path, const Metadata& saved,
                                    const std::vector<DataFingerprint>& fingerprints, bool other_data_allowed) {
  std::string unchecked, differences;
  for (const DataFingerprint& f : fingerprints) {
    const auto it = saved.find(f.key);
    if (it == saved.end()) {
      unchecked += str_cat(unchecked.empty() ? "" : ", ", f.flags);
    } else if (it->second != f.value) {
      differences += str_cat(differences.empty() ? "" : "; ", f.flags, " gives ", f.value, ", the saved run had ",
                             shown(it->second));
    }
  }
  if (!differences.empty()) {
    MINIDL_CHECK(other_data_allowed, "--resume ", path, ": the data is not the saved run's (", differences,
                 "). Resume with the same data, or give --resume-other-data to go on with this data");
    return str_cat("--resume-other-data: going on with other data than ", path, " was trained on (", differences,
                   ")");
  }
  if (!unchecked.empty())
    return str_cat(path, " has no fingerprint of its data (saved by an older minidl): resuming without checking "
                   "that ", unchecked, " give", unchecked.find(',') == std::string::npos ? "s" : "",
                   " the same data");
  return "";
}

std::string describe_position(const RunPosition& at, int64_t steps_per_epoch) {
  if (!at.mid_epoch()) return str_cat("after epoch ", at.epoch, " (step ", at.step, ")");
  return str_cat("in epoch ", at.epoch + 1, " after step ", at.epoch_step, " of ", steps_per_epoch, ", step ", at.step,
                 " of the run");
}

void with_averaged_buffers(minidl::Module& model, minidl::dist::DataParallel* dp, const std::function<void()>& save) {
  if (!dp) {
    save();
    return;
  }
  minidl::NoGradGuard no_grad;
  std::vector<std::pair<minidl::Tensor, minidl::Tensor>> own;  // (buffer, this rank's values)
  for (const auto& [name, buffer] : model.named_buffers()) own.emplace_back(buffer, buffer.clone());
  dp->average_buffers();
  save();
  for (const auto& [buffer, values] : own) minidl::copy_(buffer, values);
}

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
  const char* dropped[] = {"--resume", "--save", "--stop-after-epochs", "--stop-after-steps"};
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

void RunFlags::check() const {
  MINIDL_CHECK(stop_after_epochs == 0 || !save_path().empty(),
               "--stop-after-epochs needs --save FILE (or --resume FILE): a stopped run continues from that file");
  MINIDL_CHECK(stop_after_steps == 0 || !save_path().empty(),
               "--stop-after-steps needs --save FILE (or --resume FILE): a stopped run continues from that file");
  MINIDL_CHECK(save_every == 0 || !save_path().empty(), "--save-every needs --save FILE (or --resume FILE)");
}

void check_run_paths(const RunFlags& run, const minidl::NamedPath& metrics,
                     const std::vector<minidl::NamedPath>& other_outputs, const std::vector<minidl::NamedPath>& data) {
  std::vector<minidl::NamedPath> not_the_resumed = other_outputs;
  not_the_resumed.push_back(metrics);
  minidl::check_outputs_are_not_inputs(not_the_resumed, {{"--resume", run.resume}});
  std::vector<minidl::NamedPath> outputs = {{run.save.empty() ? "--resume" : "--save", run.save_path()}};
  outputs.insert(outputs.end(), not_the_resumed.begin(), not_the_resumed.end());
  minidl::check_outputs_are_not_inputs(outputs, data);
  if (!metrics.path.empty()) minidl::check_metrics_log(metrics.path, metrics.flag);
}

void add_run_flags(CLI::App& train, RunFlags& flags) {
  train.add_option("--save", flags.save,
                   "save the model and what --resume needs to FILE after every epoch (atomically; a symbolic "
                   "link's target is replaced, a file keeps its permissions)")
      ->check(non_empty());
  train.add_option("--resume", flags.resume,
                   "continue the run saved in FILE where it stopped, with the same flags and data (keeps saving to "
                   "FILE unless --save says otherwise; --metrics is appended to)")
      ->check(non_empty());
  train.add_flag("--resume-other-data", flags.resume_other_data,
                 "with --resume: go on even when the data differs from what the file was trained on (its "
                 "fingerprint: the sample count and a hash of the loaded data); the log says so");
  train.add_option("--save-every", flags.save_every,
                   "also save every N training steps, in the middle of epochs (--resume goes on from the next step)")
      ->check(number_in(FlagRange::whole<int64_t>(1)));
  train.add_option("--stop-after-epochs", flags.stop_after_epochs,
                   "end this invocation after N epochs, saved (continue later with --resume)")
      ->check(number_in(FlagRange::whole<int64_t>(1)));
  train.add_option("--stop-after-steps", flags.stop_after_steps,
                   "end this invocation after N training steps, saved (continue later with --resume)")
      ->check(number_in(FlagRange::whole<int64_t>(1)));
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
