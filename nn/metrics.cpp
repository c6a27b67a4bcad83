// nn/metrics.cpp — the JSON Lines log (nn/metrics.h).
#include "nn/metrics.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "nn/files.h"

namespace minidl {

void check_metrics_log(const std::string& path, const std::string& flag) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return;  // nothing there (a missing folder fails at the open)
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return;  // a stream: /dev/stdout, a named pipe
  MINIDL_CHECK(S_ISREG(st.st_mode), flag, " '", path, "' is ", non_regular_file_kind(st.st_mode),
               ": a metrics log is a file");
  const std::string refused = str_cat(flag, " '", path, "' holds something other than a metrics log (");
  const std::string advice = "): refusing to replace or append to it; give another file name";
  MINIDL_CHECK(static_cast<uint64_t>(st.st_size) <= kMaxMetricsLogBytes, refused, st.st_size,
               " bytes, more than a log of ours ever holds", advice);
  const std::vector<uint8_t> bytes = read_regular_file(path, flag, kMaxMetricsLogBytes);
  const std::string text(bytes.begin(), bytes.end());
  size_t start = 0;
  for (int64_t line = 1; start < text.size(); ++line) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const nlohmann::json record =
        nlohmann::json::parse(text.begin() + static_cast<std::ptrdiff_t>(start),
                              text.begin() + static_cast<std::ptrdiff_t>(end), nullptr, /*allow_exceptions=*/false);
    MINIDL_CHECK(record.is_object(), refused, "line ", line, " is not a JSON object", advice);
    start = end + 1;
  }
}

MetricsWriter::MetricsWriter(const std::string& path, bool append, const std::string& flag) : path_(path) {
  check_metrics_log(path, flag);
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  MINIDL_CHECK(file_ != nullptr, flag, ": cannot ", append ? "open" : "create", " '", path, "': ",
               std::strerror(errno));
}

MetricsWriter::~MetricsWriter() {
  if (file_) std::fclose(file_);
}

void MetricsWriter::write(const nlohmann::json& record) {
  const std::string line = record.dump() + "\n";
  const bool ok = std::fwrite(line.data(), 1, line.size(), file_) == line.size() && std::fflush(file_) == 0;
  MINIDL_CHECK(ok, "metrics: cannot write to '", path_, "': ", std::strerror(errno));
}

}  // namespace minidl
