// tools/metrics_log.cpp — the --metrics reader of tools/metrics_log.h.
#include "tools/metrics_log.h"

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"
#include "nn/files.h"

namespace minidl {

double MetricsRecord::get(const std::string& key, double fallback) const {
  auto it = numbers.find(key);
  return it == numbers.end() ? fallback : it->second;
}

std::string MetricsRecord::text(const std::string& key) const {
  auto it = strings.find(key);
  return it == strings.end() ? "" : it->second;
}

std::vector<std::string> MetricsLog::numeric_keys() const {
  std::set<std::string> keys;
  for (const MetricsRecord& r : records)
    for (const auto& kv : r.numbers) keys.insert(kv.first);
  return {keys.begin(), keys.end()};
}

MetricsLog parse_metrics_log(const std::string& text, const std::string& name) {
  MetricsLog log;
  log.path = name;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      log.warnings.push_back(str_cat(name, ":", number, ": ", j.is_discarded() ? "not JSON" : "not a JSON object",
                                     " (skipped)"));
      continue;
    }
    MetricsRecord r;
    r.line = number;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it->is_number()) r.numbers[it.key()] = it->get<double>();
      else if (it->is_string()) r.strings[it.key()] = it->get<std::string>();
    }
    if (r.numbers.empty()) {
      log.warnings.push_back(str_cat(name, ":", number, ": no numbers (skipped)"));
      continue;
    }
    log.records.push_back(std::move(r));
  }
  MINIDL_CHECK(!log.records.empty(), name, ": no metrics in it (expected JSON Lines, one object per epoch, as "
               "written by `mnist train --metrics FILE` or `captcha train --metrics FILE`)",
               log.warnings.empty() ? "" : str_cat("; first problem: ", log.warnings.front()));
  return log;
}

MetricsLog read_metrics_log(const std::string& path) {
  // A regular file only: a FIFO would block the reader forever, a folder or a device is named as such.
  const std::vector<uint8_t> bytes = read_regular_file(path, "metrics log", kMaxPlottedLogBytes);
  return parse_metrics_log(std::string(bytes.begin(), bytes.end()), path);
}

}  // namespace minidl
