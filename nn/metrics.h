// nn/metrics.h — a JSON Lines log: one JSON object per line (one per epoch in the examples), flushed as
// it is written, so a run that stops early keeps every finished epoch and `tail -f` shows progress.
//
// A metrics path may already hold a file. A metrics log (every line a JSON object: what this writer
// writes) is replaced by a fresh run, as --save replaces a checkpoint, and appended to by a resumed run,
// which continues its log. Anything else there (a checkpoint, an image, a CSV file, any file with a line
// that is not a JSON object) is refused, never truncated or appended to: `--metrics m.ckpt` is a typo
// that would otherwise destroy the model. A folder is refused; a character device or a FIFO
// (`--metrics /dev/stdout`) is a stream with nothing to destroy and is written as usual.
#pragma once
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace minidl {

// Throws an Error naming `flag` ("--metrics") and `path` unless `path` is missing, empty, a metrics log
// (see above; at most kMaxMetricsLogBytes), a character device or a FIFO. For the programs to call
// before any work; MetricsWriter checks again.
void check_metrics_log(const std::string& path, const std::string& flag);
// Larger files are not taken for a metrics log (a run writes a few hundred bytes per epoch).
constexpr uint64_t kMaxMetricsLogBytes = uint64_t(64) << 20;

class MetricsWriter {
 public:
  // Creates `path`, replacing a metrics log there, or with `append` adds to it (a resumed run continues
  // its log). Throws an Error naming the file (and `flag`, "--metrics" or "--json") when it cannot, or
  // when the file there is not a metrics log (check_metrics_log).
  explicit MetricsWriter(const std::string& path, bool append = false, const std::string& flag = "metrics");
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
