// nn/metrics.h — a JSON Lines log: one JSON object per line (one per epoch in the examples), flushed as
// it is written, so a run that stops early keeps every finished epoch and `tail -f` shows progress.
#pragma once
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace minidl {

class MetricsWriter {
 public:
  // Creates (truncates) `path`, or with `append` adds to it (a resumed run continues its log). Throws an
  // Error naming the file when it cannot.
  explicit MetricsWriter(const std::string& path, bool append = false);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  void write(const nlohmann::json& record);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace minidl
