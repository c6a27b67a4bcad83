// examples/run_state.cpp — resumable checkpoints for both training programs (examples/run_state.h): what
// a save holds and how --resume reads it back, the data fingerprints --resume compares, mid-epoch saves
// in a job, and the flags and file checks of a run. Ctrl-C, SIGTERM and the decisions to save and stop
// after a step or an epoch (RunControl, and the command that resumes) are in examples/run_control.cpp.
#include "examples/run_state.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/autograd.h"
#include "core/error.h"
#include "core/printable.h"
#include "core/random.h"
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

namespace {

// The flag that sets each saved setting, so that a refusal names what to change on the command line
// ("--rnn: saved gru, asked lstm"). The keys of both programs (mnist's and captcha's); a key not here is
// shown as it is.
const std::map<std::string, std::string>& setting_flags() {
  static const std::map<std::string, std::string> flags = {
      {"model", "--model"},
      {"charset", "--charset"},
      {"length", "--length"},
      {"width", "--width"},
      {"height", "--height"},
      {"channels", "--channels"},
      {"convs_per_block", "--convs-per-block"},
      {"rnn", "--rnn"},
      {"gru_hidden", "--hidden"},
      {"gru_layers", "--gru-layers"},
      {"dropout", "--dropout"},
      {"run.data", "--data"},
      {"run.batch", "--batch"},
      {"run.batches_per_epoch", "batches per epoch (--batch, --epoch-size, --limit, --data)"},
      {"run.epochs", "--epochs"},
      {"run.total_steps", "--epochs/--steps"},
      {"run.lr", "--lr"},
      {"run.schedule", "--schedule"},
      {"run.seed", "--seed"},
      {"run.weight_decay", "--weight-decay"},
      {"run.augment", "--augment"}};
  return flags;
}

// The run's length: what --resume may change (a longer run; examples/run_state.h).
bool is_run_length(const std::string& key) { return key == "run.epochs" || key == "run.total_steps"; }

int64_t total_steps_of(const Metadata& m) {
  const auto it = m.find("run.total_steps");
  if (it == m.end()) return -1;
  int64_t v = -1;
  const auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  return ec == std::errc() && end == it->second.data() + it->second.size() ? v : -1;
}

}  // namespace

std::string flag_of_setting(const std::string& key) {
  const auto it = setting_flags().find(key);
  return it == setting_flags().end() ? key : it->second;
}

std::string setting_differences(const Metadata& saved, const Metadata& expected,
                                 const std::function<bool(const std::string&)>& compared) {
  std::string differences;
  const auto add = [&](const std::string& key, const std::string& was, const std::string& asked) {
    differences += str_cat(differences.empty() ? "" : "; ", flag_of_setting(key), ": saved ", was, ", asked ", asked);
  };
  for (const auto& [key, value] : expected) {
    if (!compared(key)) continue;
    auto it = saved.find(key);
    if (it != saved.end() && it->second == value) continue;
    add(key, it == saved.end() ? "(none)" : shown(it->second), value);
  }
  // A run.* setting the file has and this run has not (one written only when on, like run.weight_decay).
  for (const auto& [key, value] : saved)
    if (key.rfind("run.", 0) == 0 && !expected.count(key) && compared(key)) add(key, shown(value), "(none)");
  return differences;
}

RunPosition resume_position(const std::string& path, const Metadata& saved, const Metadata& expected, size_t sums) {
  // Every setting but the run's length must be the saved run's; the length may grow (run_length_note).
  const std::string differences =
      setting_differences(saved, expected, [](const std::string& key) { return !is_run_length(key); });
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
  // A longer run goes on; a shorter one than what is done cannot.
  const int64_t asked_steps = total_steps_of(expected);
  if (asked_steps >= 0 && asked_steps < at.step) {
    const auto epochs = expected.find("run.epochs");
    throw minidl::Error(str_cat("--resume ", path, ": the saved run has done ", at.epoch, " epoch(s), ", at.step,
                                " steps, more than this run's ",
                                epochs != expected.end() ? str_cat("--epochs ", epochs->second, " (") : "(",
                                asked_steps, " steps); give at least as many epochs as are done to go on"));
  }
  minidl::set_random_state(integer_of<uint64_t>(saved, "seed", path),
                           integer_of<uint64_t>(saved, "random_offset", path));
  return at;
}

std::string run_length_note(const Metadata& saved, const Metadata& expected) {
  const int64_t was = total_steps_of(saved), now = total_steps_of(expected);
  if (was < 0 || now < 0 || was == now) return "";
  const auto epochs_of = [](const Metadata& m) {
    const auto it = m.find("run.epochs");
    return it == m.end() ? std::string("?") : shown(it->second);
  };
  return str_cat(now > was ? "extending" : "shortening", " the run from ", epochs_of(saved), " epoch(s) (", was,
                 " steps) to ", epochs_of(expected), " (", now, " steps): the learning-rate schedule is recomputed "
                 "for ", now, " steps");
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

void RunFlags::check() const {
  MINIDL_CHECK(stop_after_epochs == 0 || !save_path().empty(),
               "--stop-after-epochs needs --save FILE (or --resume FILE): a stopped run continues from that file");
  MINIDL_CHECK(stop_after_steps == 0 || !save_path().empty(),
               "--stop-after-steps needs --save FILE (or --resume FILE): a stopped run continues from that file");
  MINIDL_CHECK(save_every == 0 || !save_path().empty(), "--save-every needs --save FILE (or --resume FILE)");
  MINIDL_CHECK(init_from.empty() || resume.empty(), "--init-from starts a new run from trained weights and --resume "
               "continues a saved run: give one of them");
}

void check_run_paths(const RunFlags& run, const minidl::NamedPath& metrics,
                     const std::vector<minidl::NamedPath>& other_outputs, const std::vector<minidl::NamedPath>& data) {
  std::vector<minidl::NamedPath> not_the_resumed = other_outputs;
  not_the_resumed.push_back(metrics);
  minidl::check_outputs_are_not_inputs(not_the_resumed, {{"--resume", run.resume}});
  std::vector<minidl::NamedPath> inputs = data;
  inputs.push_back({"--init-from", run.init_from});
  std::vector<minidl::NamedPath> outputs = {{run.save.empty() ? "--resume" : "--save", run.save_path()}};
  outputs.insert(outputs.end(), not_the_resumed.begin(), not_the_resumed.end());
  minidl::check_outputs_are_not_inputs(outputs, inputs);
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
  train.add_option("--init-from", flags.init_from,
                   "start from the model weights in FILE (saved by train --save or --save-best, with the same model "
                   "flags) with a new optimizer, learning-rate schedule and position: fine-tuning")
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

}  // namespace examples
