// nn/files.cpp — opening the files minidl reads (nn/files.h).
#include "nn/files.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "core/error.h"

namespace minidl {

std::string non_regular_file_kind(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

// stat() before fopen(): opening a FIFO would block until a writer appears.
std::FILE* open_regular_file(const std::string& path, const std::string& who) {
  struct stat st;
  MINIDL_CHECK(::stat(path.c_str(), &st) == 0, who, ": cannot open '", path, "': ", std::strerror(errno));
  MINIDL_CHECK(S_ISREG(st.st_mode), who, ": '", path, "' is ", non_regular_file_kind(st.st_mode), ", not a file");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  MINIDL_CHECK(f != nullptr, who, ": cannot open '", path, "': ", std::strerror(errno));
  return f;
}

std::vector<uint8_t> read_regular_file(const std::string& path, const std::string& who, uint64_t max_bytes) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(open_regular_file(path, who), &std::fclose);
  struct stat st;
  MINIDL_CHECK(::fstat(fileno(f.get()), &st) == 0, who, ": cannot read '", path, "': ", std::strerror(errno));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  MINIDL_CHECK(size <= max_bytes, who, ": '", path, "' has ", size, " bytes, more than the ", max_bytes,
               " this reader accepts");
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  const size_t got = bytes.empty() ? 0 : std::fread(bytes.data(), 1, bytes.size(), f.get());
  MINIDL_CHECK(got == bytes.size(), who, ": cannot read '", path, "': ",
               std::ferror(f.get()) ? std::strerror(errno) : "the file got shorter while being read");
  return bytes;
}

}  // namespace minidl
