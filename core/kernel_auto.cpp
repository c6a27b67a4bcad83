// core/kernel_auto.cpp — the `auto` selection's table of winners and its file (core/kernel_auto.h).
#include "core/kernel_auto.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "core/error.h"

namespace minidl {

bool kernel_auto_may_time(const std::string& key) {
  // The reasons, one per line, are in core/kernel_auto.h.
  static const char* const kNeverTimed[] = {
      "sgd_step",     "adam_step",          "dropout_mask",       "gru_sequence.backward", "lstm_sequence.backward",
      "ctc_loss",     "ctc_loss.backward",  "batch_norm.running_stats",
  };
  for (const char* never : kNeverTimed)
    if (key == never) return false;
  return true;
}

std::string AutoTable::find(const std::string& key, const std::string& device, const std::string& shape) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = winners_.find({key, device, shape});
  return it == winners_.end() ? "" : it->second;
}

std::string AutoTable::record(const std::string& key, const std::string& device, const std::string& shape,
                              const std::string& kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  return winners_.emplace(std::make_tuple(key, device, shape), kernel).first->second;
}

void AutoTable::forget(const std::string& key, const std::string& device_type) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = winners_.begin(); it != winners_.end();) {
    const std::string& device = std::get<1>(it->first);
    const bool same_type = device.compare(0, device_type.size(), device_type) == 0;
    if (std::get<0>(it->first) == key && same_type)
      it = winners_.erase(it);
    else
      ++it;
  }
}

void AutoTable::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  winners_.clear();
}

std::vector<AutoTable::Choice> AutoTable::choices() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Choice> out;
  for (const auto& [where, kernel] : winners_)
    out.push_back({std::get<0>(where), std::get<1>(where), std::get<2>(where), kernel});
  return out;
}

void AutoTable::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return;  // no file yet: the first run makes it
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string key, device, shape, kernel, extra;
    if (!(words >> key >> device >> shape >> kernel) || (words >> extra))
      throw Error(str_cat("MINIDL_AUTO_FILE ", path, ", line ", number, ": '", line,
                          "' is not 'key device shape kernel' (delete the file to time again)"));
    std::lock_guard<std::mutex> lock(mutex_);
    winners_[{key, device, shape}] = kernel;
  }
}

void AutoTable::save(const std::string& path) const {
  const std::string temporary = str_cat(path, ".tmp.", static_cast<long>(getpid()));
  {
    std::ofstream out(temporary);
    MINIDL_CHECK(out.good(), "MINIDL_AUTO_FILE: cannot write ", temporary);
    out << "# minidl auto choices: key device shape kernel\n";
    for (const Choice& c : choices()) out << c.key << ' ' << c.device << ' ' << c.shape << ' ' << c.kernel << '\n';
    MINIDL_CHECK(out.good(), "MINIDL_AUTO_FILE: cannot write ", temporary);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw Error(str_cat("MINIDL_AUTO_FILE: cannot rename ", temporary, " to ", path));
  }
}

std::string auto_choice_line(const std::string& key, const std::string& device, const std::string& shape,
                             const std::string& winner, const std::vector<AutoResult>& times) {
  std::string out = str_cat("[minidl auto] ", key, " ", device, " ", shape, " -> ",
                            winner.empty() ? "none (every kernel declined)" : winner, " (");
  for (size_t i = 0; i < times.size(); ++i) {
    const AutoResult& r = times[i];
    const bool has_time = r.note.empty() || r.note == "after its warm-up";
    char time[32] = "";
    if (has_time) std::snprintf(time, sizeof time, "%.3g ms", r.seconds * 1e3);
    out += str_cat(i ? ", " : "", r.kernel, " ", time, has_time && !r.note.empty() ? " " : "", r.note);
  }
  return out + ")";
}

}  // namespace minidl
