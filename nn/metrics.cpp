#include "nn/metrics.h"

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace minidl {

MetricsWriter::MetricsWriter(const std::string& path, bool append) : path_(path) {
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  MINIDL_CHECK(file_ != nullptr, "metrics: cannot ", append ? "open" : "create", " '", path, "': ",
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
