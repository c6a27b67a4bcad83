// nn/files.cpp — opening the files minidl reads, and keeping outputs off inputs (nn/files.h).
#include "nn/files.h"

#include <limits.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

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

// ------------------------------------------------------------------ outputs never replace inputs

namespace {

// Where a path is on the file system.
struct Location {
  bool exists = false;  // stat() succeeded (through every symbolic link)
  bool is_dir = false;
  dev_t dev = 0;
  ino_t ino = 0;
  // The absolute path with every link resolved: realpath(path) when it exists, else realpath(folder) +
  // "/" + name; "" when not even its folder exists (then nothing can be written there either).
  std::string resolved;
  // The resolved folder the name itself sits in (for a symbolic link: the link's folder, which may
  // differ from its target's).
  std::string folder;
};

std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : std::string();
}

// "a/b/c" -> ("a/b", "c"); "c" -> (".", "c"); "/c" -> ("/", "c"); trailing slashes are dropped first.
std::pair<std::string, std::string> split_folder(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

std::string joined(const std::string& folder, const std::string& name) {
  return folder == "/" ? "/" + name : folder + "/" + name;
}

Location locate(const std::string& path) {
  Location at;
  const auto [folder, name] = split_folder(path);
  at.folder = real_path(folder);
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    at.exists = true;
    at.is_dir = S_ISDIR(st.st_mode);
    at.dev = st.st_dev;
    at.ino = st.st_ino;
    at.resolved = real_path(path);
  } else if (!at.folder.empty()) {
    at.resolved = joined(at.folder, name);
  }
  return at;
}

bool same_file(const Location& a, const Location& b) {
  if (a.exists && b.exists) return a.dev == b.dev && a.ino == b.ino;
  return !a.resolved.empty() && a.resolved == b.resolved;
}

// Whether the resolved folder `folder` is `dir` or lies below it (compared by device and inode, folder
// by folder up to the root).
bool folder_within(const std::string& folder, const Location& dir) {
  std::string at = folder;
  while (!at.empty()) {
    struct stat st;
    if (::stat(at.c_str(), &st) == 0 && st.st_dev == dir.dev && st.st_ino == dir.ino) return true;
    if (at == "/") break;
    at = split_folder(at).first;
  }
  return false;
}

std::string quoted(const NamedPath& p) { return str_cat(p.flag, " '", p.path, "'"); }

}  // namespace

void check_outputs_are_not_inputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
  std::vector<Location> out_at;
  for (const NamedPath& out : outputs) out_at.push_back(locate(out.path));
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (outputs[o].path.empty()) continue;
    const Location& out = out_at[o];
    for (const NamedPath& in : inputs) {
      if (in.path.empty()) continue;
      const Location in_at = locate(in.path);
      if (!in_at.exists) continue;  // nothing to destroy; its reader reports it
      if (same_file(out, in_at))
        throw OutputIsInputError(str_cat(quoted(outputs[o]), " is the same file as ", quoted(in),
                                         ": refusing to overwrite an input"));
      // Inside an input folder: where the name sits, and where its links lead.
      if (in_at.is_dir && ((!out.folder.empty() && folder_within(out.folder, in_at)) ||
                           (!out.resolved.empty() && folder_within(split_folder(out.resolved).first, in_at))))
        throw OutputIsInputError(str_cat(quoted(outputs[o]), " is inside the folder ", quoted(in),
                                         ": refusing to write into an input folder (what is there is read as "
                                         "data)"));
    }
    for (size_t p = 0; p < o; ++p)
      if (!outputs[p].path.empty() && same_file(out, out_at[p]))
        throw OutputIsInputError(str_cat(quoted(outputs[o]), " is the same file as ", quoted(outputs[p]),
                                         ": give each output its own file"));
  }
}

}  // namespace minidl
