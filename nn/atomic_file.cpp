// nn/atomic_file.cpp — all-or-nothing file writes: temporary file, fsync, rename, and removing the
// temporary file when a signal ends the process mid-save (nn/atomic_file.h).
#include "nn/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <random>
#include <vector>

#include "core/error.h"

namespace minidl {

namespace {

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The file a save replaces: `path`, or, when `path` is a symbolic link, the file it points to (after
// every link in the chain; the target need not exist yet). Renaming over the link itself would turn it
// into a plain file and leave its target stale.
std::string resolve_links(const std::string& path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::vector<char> buf(static_cast<size_t>(st.st_size > 0 ? st.st_size : 255) + 1);
    const ssize_t n = ::readlink(p.c_str(), buf.data(), buf.size());
    MINIDL_CHECK(n >= 0 && static_cast<size_t>(n) < buf.size(), "checkpoint: cannot read the symbolic link '", p,
                 "': ", std::strerror(errno));
    const std::string link(buf.data(), static_cast<size_t>(n));
    p = link[0] == '/' ? link : directory_of(p) + "/" + link;
  }
  throw Error(str_cat("checkpoint: '", path, "': too many levels of symbolic links"));
}

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// What is at the target now: nothing (exists = false) or a regular file; anything else is refused, since
// saving replaces the file by a rename (a device node would be replaced by a plain file).
struct Existing {
  bool exists = false;
  struct stat st {};
};
Existing existing_target(const std::string& target, const std::string& what) {
  Existing e;
  if (::stat(target.c_str(), &e.st) != 0) {
    MINIDL_CHECK(errno == ENOENT, what, ": cannot inspect '", target, "': ", std::strerror(errno));
    return e;
  }
  MINIDL_CHECK(S_ISREG(e.st.st_mode), what, ": '", target, "' is ", file_kind(e.st.st_mode),
               "; a checkpoint replaces a regular file (or creates one), so give a file path");
  e.exists = true;
  return e;
}

// The mode a new file gets from open(2): 0666 without the bits of the process's umask (read from
// /proc/self/status, since umask(2) can only read it by changing it; 022 where that is unavailable).
mode_t new_file_mode() {
  mode_t mask = 022;
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f))
      if (std::strncmp(line, "Umask:", 6) == 0) mask = static_cast<mode_t>(std::strtoul(line + 6, nullptr, 8));
    std::fclose(f);
  }
  return 0666 & ~mask;
}

// Temporary files are named <target>.tmp-<pid>-XXXXXX: the pid tells a later run whether the process that
// wrote one is gone (killed mid-save), so the file can be removed.
std::string temp_prefix(const std::string& target) { return target + ".tmp-"; }
std::string temp_template(const std::string& target) {
  return str_cat(temp_prefix(target), static_cast<long>(::getpid()), "-XXXXXX");
}

// `name` with its trailing XXXXXX replaced by six random letters and digits (as mkostemp does; the
// caller creates the file with O_EXCL and tries another name if it exists).
std::string fill_random_suffix(std::string name) {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  static std::mt19937_64 generator(std::random_device{}() ^ static_cast<uint64_t>(::getpid()));
  for (size_t i = name.size() - 6; i < name.size(); ++i) name[i] = kChars[generator() % (sizeof kChars - 1)];
  return name;
}

// ---- removing the temporary file when a signal ends the process mid-save
//
// SIGINT, SIGTERM and SIGHUP would end the process between creating the temporary file and renaming it,
// leaving the file behind. While a save is in progress, a handler removes it and re-raises the signal
// with its previous disposition, so the process ends as it would have. Only signals whose disposition is
// the default (terminate) get the handler: an ignored signal stays ignored, and a program's own handler
// stays in charge (the save then completes). The handler only calls async-signal-safe functions
// (unlink, sigaction, raise) on a path prepared before the save began. There is no window: the handler is
// installed and the file's name registered before the file is created (open with O_EXCL), so a signal
// that comes first finds nothing to remove, and one that comes after removes it. SIGKILL cannot be
// caught: a later run removes what it leaves (prepare_checkpoint_path).
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr int kNumCleanupSignals = 3;
char g_pending_path[4096];
volatile sig_atomic_t g_pending = 0;
struct sigaction g_previous[kNumCleanupSignals];
bool g_installed[kNumCleanupSignals];
std::mutex g_save_mutex;  // one save at a time per process: one pending path

extern "C" void remove_pending_and_reraise(int sig) {
  if (g_pending) ::unlink(g_pending_path);
  for (int i = 0; i < kNumCleanupSignals; ++i)
    if (kCleanupSignals[i] == sig) ::sigaction(sig, &g_previous[i], nullptr);
  ::raise(sig);  // delivered when the handler returns, with the previous (default) disposition
}

// Installs the handler for the lifetime of the object; name() registers the file it removes.
class PendingTempFile {
 public:
  PendingTempFile() {
    g_pending = 0;
    for (int i = 0; i < kNumCleanupSignals; ++i) {
      g_installed[i] = false;
      struct sigaction current;
      if (::sigaction(kCleanupSignals[i], nullptr, &current) != 0) continue;
      const bool is_default = !(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL;
      if (!is_default) continue;
      struct sigaction handler {};
      handler.sa_handler = remove_pending_and_reraise;
      sigemptyset(&handler.sa_mask);
      g_installed[i] = ::sigaction(kCleanupSignals[i], &handler, &g_previous[i]) == 0;
    }
  }
  ~PendingTempFile() {
    for (int i = 0; i < kNumCleanupSignals; ++i)
      if (g_installed[i]) ::sigaction(kCleanupSignals[i], &g_previous[i], nullptr);
    g_pending = 0;
  }
  // `tmp` (it fits: fits()) is the file a signal removes from now on, whether it exists yet or not.
  static void name(const std::string& tmp) {
    g_pending = 0;  // the handler never reads a half-written path
    std::memcpy(g_pending_path, tmp.c_str(), tmp.size() + 1);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    g_pending = 1;
  }
  static bool fits(const std::string& tmp) { return tmp.size() < sizeof g_pending_path; }
  PendingTempFile(const PendingTempFile&) = delete;
  PendingTempFile& operator=(const PendingTempFile&) = delete;
};

// Removes <target>.tmp-<pid>-XXXXXX files whose process no longer exists, and pid-less
// <target>.tmp-XXXXXX files (written by minidl before the pid was in the name) untouched for over ten
// minutes (a save takes seconds). Returns how many it removed.
int remove_stale_temp_files(const std::string& target) {
  const std::string dir = directory_of(target), prefix = base_name(temp_prefix(target));
  DIR* d = ::opendir(dir.c_str());
  if (!d) return 0;
  std::vector<std::string> stale;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = name.substr(prefix.size());  // "<pid>-XXXXXX" or "XXXXXX"
    const std::string full = dir + "/" + name;
    struct stat st;
    if (::lstat(full.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    const size_t dash = rest.find('-');
    if (dash != std::string::npos && dash > 0 && rest.size() == dash + 7 &&
        rest.find_first_not_of("0123456789") == dash) {
      const long pid = std::strtol(rest.substr(0, dash).c_str(), nullptr, 10);
      if (pid > 0 && pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
        stale.push_back(full);
    } else if (rest.size() == 6 && std::time(nullptr) - st.st_mtime > 600) {
      stale.push_back(full);
    }
  }
  ::closedir(d);
  int removed = 0;
  for (const std::string& f : stale) removed += ::unlink(f.c_str()) == 0;
  return removed;
}

}  // namespace

// temp file next to the target (so rename is atomic) -> write -> keep the old file's mode -> fsync ->
// rename over the target -> fsync the folder. `path` may be a symbolic link: its target is replaced.
void write_bytes_atomically(const std::string& path, const uint8_t* data, size_t size, const std::string& who) {
  const std::string prefix = who.empty() ? "" : who + ": ";
  MINIDL_CHECK(!path.empty(), prefix, "cannot save to an empty path");
  const std::string what = str_cat(prefix, "cannot save '", path, "'");
  const std::string target = resolve_links(path);
  const Existing old = existing_target(target, what);

  std::lock_guard<std::mutex> lock(g_save_mutex);
  std::string tmp = temp_template(target);
  MINIDL_CHECK(PendingTempFile::fits(tmp), what, ": the path is too long");
  // mkostemp's job done here, so that the name is registered with the handler before the file exists:
  // fill the XXXXXX, register, create with O_EXCL; another name if that one is taken.
  PendingTempFile pending;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = fill_random_suffix(temp_template(target));
    PendingTempFile::name(tmp);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  MINIDL_CHECK(fd >= 0, prefix, "cannot create a temporary file next to '", target, "': ", std::strerror(errno));
  auto fail = [&](const char* step, bool close_fd) {
    const int err = errno;
    if (close_fd) ::close(fd);
    ::unlink(tmp.c_str());
    throw Error(str_cat(what, ": ", step, " failed: ", std::strerror(err)));
  };
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write", true);
    done += static_cast<size_t>(n);
  }
  // The replaced file's permission bits (and, for root, its owner) carry over; a new file gets the usual
  // 0666 minus the umask.
  if (::fchmod(fd, old.exists ? (old.st.st_mode & 07777) : new_file_mode()) != 0) fail("chmod", true);
  if (old.exists && ::geteuid() == 0 && ::fchown(fd, old.st.st_uid, old.st.st_gid) != 0) fail("chown", true);
  if (::fsync(fd) != 0) fail("fsync", true);
  if (::close(fd) != 0) fail("close", false);
  if (::rename(tmp.c_str(), target.c_str()) != 0) fail("rename", false);
  // Make the rename itself durable; failure here leaves a complete file, so it is not an error.
  const int dir = ::open(directory_of(target).c_str(), O_RDONLY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void write_file_atomically(const std::string& path, const std::string& contents) {
  write_bytes_atomically(path, reinterpret_cast<const uint8_t*>(contents.data()), contents.size(), "");
}

SavePath prepare_checkpoint_path(const std::string& path, const std::string& flag) {
  const std::string what = flag.empty() ? "checkpoint" : flag;
  MINIDL_CHECK(!path.empty(), what, ": the file name is empty");
  const std::string shown = str_cat(what, " '", path, "'");
  SavePath out;
  out.target = resolve_links(path);
  const std::string dir = directory_of(out.target);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    throw Error(str_cat(shown, ": the folder '", dir, "' ", err == ENOENT ? "does not exist" : "cannot be inspected",
                        " (", std::strerror(err), ")"));
  }
  MINIDL_CHECK(S_ISDIR(st.st_mode), shown, ": '", dir, "' is not a folder");
  existing_target(out.target, shown);
  // Can a file be created next to the target? Try it: permissions, read-only file systems, quotas.
  std::string probe = temp_template(out.target);
  const int fd = ::mkostemp(probe.data(), O_CLOEXEC);
  MINIDL_CHECK(fd >= 0, shown, ": cannot create files in the folder '", dir, "': ", std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  out.stale_removed = remove_stale_temp_files(out.target);
  return out;
}

}  // namespace minidl
