#include "nn/checkpoint.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <vector>

#include "core/error.h"
#include "core/printable.h"
#include "nn/files.h"

namespace minidl {

namespace {

constexpr char kMagic[8] = {'M', 'I', 'N', 'I', 'D', 'L', 'C', 'K'};
constexpr size_t kHeaderBytes = 24;  // magic, version, flags, file size
constexpr size_t kTrailerBytes = 4;  // CRC-32
constexpr uint32_t kMaxNameBytes = 1u << 16;
constexpr int kMaxDims = 16;

bool host_is_little_endian() {
  const uint16_t one = 1;
  uint8_t first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

// Stable on-disk dtype codes (independent of the DType enum's order).
uint8_t dtype_code(DType t) {
  switch (t) {
    case DType::float32: return 0;
    case DType::float64: return 1;
    case DType::int32: return 2;
    case DType::int64: return 3;
    case DType::bfloat16: break;  // not a checkpoint dtype: parameters and state are float32/float64
  }
  return 255;
}

bool dtype_from_code(uint8_t code, DType& t) {
  switch (code) {
    case 0: t = DType::float32; return true;
    case 1: t = DType::float64; return true;
    case 2: t = DType::int32; return true;
    case 3: t = DType::int64; return true;
    default: return false;
  }
}

// ------------------------------------------------------------------ writing

class Writer {
 public:
  void u8(uint8_t v) { bytes.push_back(v); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void raw(const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
  }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    raw(s.data(), s.size());
  }
  void put_u64_at(size_t pos, uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes[pos + i] = static_cast<uint8_t>(v >> (8 * i));
  }
  std::vector<uint8_t> bytes;
};

std::vector<uint8_t> serialize(const std::string& path, const Checkpoint& ck) {
  MINIDL_CHECK(host_is_little_endian(), "checkpoint: writing needs a little-endian host");
  Writer w;
  w.raw(kMagic, sizeof kMagic);
  w.u32(kCheckpointVersion);
  w.u32(0);  // flags, reserved
  w.u64(0);  // file size, patched below
  w.u32(static_cast<uint32_t>(ck.metadata.size()));
  for (const auto& [key, value] : ck.metadata) {
    MINIDL_CHECK(key.size() <= kMaxNameBytes && value.size() <= UINT32_MAX, "checkpoint: '", path,
                 "': metadata entry '", key.substr(0, 64), "' is too long");
    w.str(key);
    w.str(value);
  }
  w.u32(static_cast<uint32_t>(ck.tensors.size()));
  std::set<std::string> names;
  for (const auto& [name, tensor] : ck.tensors) {
    MINIDL_CHECK(names.insert(name).second, "checkpoint: '", path, "': the tensor name '", name, "' appears twice");
    MINIDL_CHECK(tensor.defined(), "checkpoint: '", path, "': tensor '", name, "' is undefined");
    MINIDL_CHECK(name.size() <= kMaxNameBytes && tensor.dim() <= kMaxDims, "checkpoint: '", path, "': tensor '",
                 name.substr(0, 64), "' has too long a name or too many dims");
    MINIDL_CHECK(dtype_code(tensor.dtype()) != 255, "checkpoint: '", path, "': tensor '", name, "' is ",
                 dtype_name(tensor.dtype()), ", which checkpoints do not store (float32, float64, int32, int64)");
    const Tensor host = tensor.detach().to(Device::cpu()).contiguous();
    w.str(name);
    w.u8(dtype_code(host.dtype()));
    w.u8(static_cast<uint8_t>(host.dim()));
    for (int64_t s : host.shape()) w.u64(static_cast<uint64_t>(s));
    const size_t nbytes = host.numel() * dtype_size(host.dtype());
    w.u64(nbytes);
    w.raw(host.raw_data(), nbytes);
  }
  w.put_u64_at(16, w.bytes.size() + kTrailerBytes);
  w.u32(static_cast<uint32_t>(crc32_z(0L, w.bytes.data(), w.bytes.size())));
  return w.bytes;
}

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

// temp file next to the target (so rename is atomic) -> write -> keep the old file's mode -> fsync ->
// rename over the target -> fsync the folder. `path` may be a symbolic link: its target is replaced.
// `who` starts the error messages ("checkpoint: cannot save 'x'"; "" for "cannot save 'x'").
void write_atomically(const std::string& path, const uint8_t* data, size_t size, const std::string& who) {
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

namespace {

// ------------------------------------------------------------------ reading

// Bounds-checked reads over the part of the file covered by the checksum.
class Reader {
 public:
  Reader(const std::vector<uint8_t>& bytes, size_t begin, size_t end, std::string what)
      : b_(bytes), pos_(begin), end_(end), what_(std::move(what)) {}

  size_t remaining() const { return end_ - pos_; }
  void need(size_t n, const std::string& field) const {
    if (n > remaining())
      throw Error(str_cat(what_, ": corrupt: ", field, " needs ", n, " bytes at offset ", pos_, " but only ",
                          remaining(), " remain"));
  }
  uint8_t u8(const std::string& field) {
    need(1, field);
    return b_[pos_++];
  }
  uint32_t u32(const std::string& field) {
    need(4, field);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(b_[pos_ + i]) << (8 * i);
    pos_ += 4;
    return v;
  }
  uint64_t u64(const std::string& field) {
    need(8, field);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(b_[pos_ + i]) << (8 * i);
    pos_ += 8;
    return v;
  }
  std::string str(const std::string& field, uint32_t max_len) {
    const uint32_t n = u32(field + " length");
    if (n > max_len) throw Error(str_cat(what_, ": corrupt: ", field, " length ", n, " exceeds the limit ", max_len));
    need(n, field);
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  const uint8_t* take(size_t n, const std::string& field) {
    need(n, field);
    const uint8_t* p = b_.data() + pos_;
    pos_ += n;
    return p;
  }
  Error corrupt(const std::string& why) const { return Error(str_cat(what_, ": corrupt: ", why)); }

 private:
  const std::vector<uint8_t>& b_;
  size_t pos_, end_;
  std::string what_;
};

uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

uint64_t le64(const uint8_t* p) { return static_cast<uint64_t>(le32(p)) | static_cast<uint64_t>(le32(p + 4)) << 32; }

// The header checks, in order: identity first (so a random file is called "not a checkpoint", not
// "truncated"), then size and version. `head` holds the first min(size, kHeaderBytes) bytes of a file of
// `size` bytes. The checksum and the structure are checked by the caller.
void check_header(const uint8_t* head, size_t size, const std::string& what) {
  MINIDL_CHECK(size > 0 && std::memcmp(head, kMagic, std::min(size, sizeof kMagic)) == 0, what,
               ": not a minidl checkpoint (wrong magic; expected the file to start with \"MINIDLCK\")");
  MINIDL_CHECK(size >= kHeaderBytes + kTrailerBytes, what, ": truncated: the file has ", size,
               " bytes, less than the ", kHeaderBytes + kTrailerBytes, " of an empty checkpoint");
  const uint32_t version = le32(head + 8);
  MINIDL_CHECK(version == kCheckpointVersion, what, ": unsupported format version ", version,
               " (this build reads version ", kCheckpointVersion, ")");
  const uint64_t declared = le64(head + 16);
  MINIDL_CHECK(declared >= size, what, ": ", size - declared, " unexpected bytes after the end (the header says the file has ",
               declared, " bytes, it has ", size, ")");
  MINIDL_CHECK(declared == size, what, ": truncated: the header says the file has ", declared, " bytes, it has ", size);
}

// Reads the file in two steps: the header first, checked, then the rest; so a large file that is not a
// checkpoint is rejected without being loaded into memory.
std::vector<uint8_t> read_checked_file(const std::string& path, const std::string& what) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(open_regular_file(path, "checkpoint"), &std::fclose);
  struct stat st;
  MINIDL_CHECK(::fstat(fileno(f.get()), &st) == 0, what, ": cannot read: ", std::strerror(errno));
  const size_t size = static_cast<size_t>(st.st_size);
  std::vector<uint8_t> bytes(std::min(size, kHeaderBytes));
  auto read_into = [&](size_t from) {
    const size_t want = bytes.size() - from;
    const size_t got = want == 0 ? 0 : std::fread(bytes.data() + from, 1, want, f.get());
    MINIDL_CHECK(got == want, what, ": read error after ", from + got, " of ", size, " bytes");
  };
  read_into(0);
  check_header(bytes.data(), size, what);
  bytes.resize(size);
  read_into(kHeaderBytes);
  return bytes;
}

}  // namespace

void write_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
  const std::vector<uint8_t> bytes = serialize(path, checkpoint);
  write_atomically(path, bytes.data(), bytes.size(), "checkpoint");
}

void write_file_atomically(const std::string& path, const std::string& contents) {
  write_atomically(path, reinterpret_cast<const uint8_t*>(contents.data()), contents.size(), "");
}

Checkpoint read_checkpoint(const std::string& path) {
  MINIDL_CHECK(host_is_little_endian(), "checkpoint: reading needs a little-endian host");
  return parse_checkpoint(read_checked_file(path, str_cat("checkpoint '", path, "'")), path);
}

Checkpoint parse_checkpoint(const std::vector<uint8_t>& bytes, const std::string& path) {
  MINIDL_CHECK(host_is_little_endian(), "checkpoint: reading needs a little-endian host");
  const std::string what = str_cat("checkpoint '", path, "'");
  const size_t size = bytes.size();
  check_header(bytes.data(), size, what);
  const uint32_t stored_crc = le32(bytes.data() + size - kTrailerBytes);
  const uint32_t crc = static_cast<uint32_t>(crc32_z(0L, bytes.data(), size - kTrailerBytes));
  if (crc != stored_crc) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "stored 0x%08x, computed 0x%08x", stored_crc, crc);
    throw Error(str_cat(what, ": checksum mismatch (", buf, "): the file is corrupt"));
  }

  Reader r(bytes, kHeaderBytes, size - kTrailerBytes, what);
  Checkpoint ck;
  const uint32_t n_meta = r.u32("metadata count");
  if (n_meta > r.remaining() / 8) throw r.corrupt(str_cat("metadata count ", n_meta, " is larger than the file allows"));
  for (uint32_t i = 0; i < n_meta; ++i) {
    std::string key = r.str("metadata key", kMaxNameBytes);
    std::string value = r.str("metadata value of '" + key + "'", UINT32_MAX);
    if (!ck.metadata.emplace(std::move(key), std::move(value)).second) throw r.corrupt("a metadata key appears twice");
  }
  const uint32_t n_tensors = r.u32("tensor count");
  if (n_tensors > r.remaining() / 14) throw r.corrupt(str_cat("tensor count ", n_tensors, " is larger than the file allows"));
  std::set<std::string> names;
  for (uint32_t i = 0; i < n_tensors; ++i) {
    std::string name = r.str(str_cat("name of tensor ", i), kMaxNameBytes);
    const std::string field = "tensor '" + name + "'";
    if (!names.insert(name).second) throw r.corrupt(field + " appears twice");
    DType dtype;
    const uint8_t code = r.u8(field + " dtype");
    if (!dtype_from_code(code, dtype)) throw r.corrupt(str_cat(field, " has an unknown dtype code ", int(code)));
    const int ndim = r.u8(field + " rank");
    if (ndim > kMaxDims) throw r.corrupt(str_cat(field, " has ", ndim, " dimensions (at most ", kMaxDims, ")"));
    Shape shape;
    uint64_t numel = 1;
    const uint64_t max_elems = r.remaining();  // no element takes less than a byte
    for (int d = 0; d < ndim; ++d) {
      const uint64_t s = r.u64(field + " shape");
      if (s > max_elems || (s != 0 && numel > max_elems / s))
        throw r.corrupt(str_cat(field, " has an absurd shape (dimension ", d, " is ", s, ")"));
      numel *= s;
      shape.push_back(static_cast<int64_t>(s));
    }
    const uint64_t nbytes = r.u64(field + " byte count");
    if (nbytes != numel * dtype_size(dtype))
      throw r.corrupt(str_cat(field, " ", shape_str(shape), " ", dtype_name(dtype), " declares ", nbytes,
                              " data bytes, expected ", numel * dtype_size(dtype)));
    const uint8_t* data = r.take(nbytes, field + " data");
    Tensor t = empty(shape, TensorOptions(dtype, Device::cpu()));
    if (nbytes > 0) std::memcpy(t.raw_data(), data, nbytes);
    ck.tensors.emplace_back(std::move(name), t);
  }
  if (r.remaining() != 0) throw r.corrupt(str_cat(r.remaining(), " bytes after the last tensor"));
  return ck;
}

// ------------------------------------------------------------------ model + optimizer

namespace {
const std::string kModelPrefix = "model/", kOptimizerPrefix = "optimizer/";

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }
}  // namespace

void save_checkpoint(const std::string& path, const Module& model, const Optimizer* optimizer,
                     std::map<std::string, std::string> metadata) {
  Checkpoint ck;
  ck.metadata = std::move(metadata);
  for (const auto& [name, t] : model.state_dict()) ck.tensors.emplace_back(kModelPrefix + name, t);
  if (optimizer) {
    ck.metadata["optimizer"] = optimizer->type_name();
    for (const auto& [name, t] : optimizer->state_dict()) ck.tensors.emplace_back(kOptimizerPrefix + name, t);
  }
  write_checkpoint(path, ck);
}

namespace {

// "a, b, c and 5 more": a list in an error message stays one readable line.
std::string some_names(const std::vector<std::string>& names, size_t shown = 3) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += str_cat(" and ", names.size() - shown, " more");
  return out;
}

// The file's model tensors against the model's state: one line naming what does not fit (missing,
// unexpected, other shapes, other dtypes), or, when no name is shared at all, that the file holds another
// kind of model.
void check_model_state(const NamedTensors& file_state, const Module& model, const Checkpoint& ck,
                       const std::string& what) {
  const NamedTensors mine = model.state_dict();
  std::map<std::string, Tensor> given(file_state.begin(), file_state.end());
  std::vector<std::string> missing, unexpected, other_shape, other_dtype;
  std::set<std::string> known;
  for (const auto& [name, dst] : mine) {
    known.insert(name);
    auto it = given.find(name);
    if (it == given.end()) {
      missing.push_back(name);
    } else if (it->second.shape() != dst.shape()) {
      other_shape.push_back(str_cat(name, " (expected ", shape_str(dst.shape()), ", got ", shape_str(it->second.shape()), ")"));
    } else if (it->second.dtype() != dst.dtype()) {
      other_dtype.push_back(str_cat(name, " (expected ", dtype_name(dst.dtype()), ", got ", dtype_name(it->second.dtype()), ")"));
    }
  }
  for (const auto& [name, t] : file_state)
    if (!known.count(name)) unexpected.push_back(name);
  if (!mine.empty() && !file_state.empty() && missing.size() == mine.size()) {
    auto kind = ck.metadata.find("model");
    throw Error(str_cat(what, ": holds another kind of model",
                        kind == ck.metadata.end() ? std::string() : " ('" + kind->second + "')", ", not a ",
                        model.type_name(), ": none of its ", file_state.size(), " model tensors (", some_names(unexpected, 2),
                        ") is one of this model's ", mine.size(), " (", some_names(missing, 2), ")"));
  }
  if (missing.empty() && unexpected.empty() && other_shape.empty() && other_dtype.empty()) return;
  std::string msg = str_cat(what, ": does not fit this ", model.type_name());
  if (!missing.empty()) msg += str_cat("; missing: ", some_names(missing));
  if (!unexpected.empty()) msg += str_cat("; unexpected: ", some_names(unexpected));
  if (!other_shape.empty()) msg += str_cat("; shape mismatch: ", some_names(other_shape));
  if (!other_dtype.empty()) msg += str_cat("; dtype mismatch: ", some_names(other_dtype));
  throw Error(msg);
}

// The optimizer's entries against nn/optim.h's table: "step" and "param.<i>.step" int64 [1] and at least
// 0 (a step count), "lr" float64 [1] finite and at least 0, and "param.<i>.<buffer>" float32 of parameter
// i's shape, for i below the optimizer's parameter count. The optimizer checks names and counts itself.
void check_optimizer_state(const NamedTensors& file_state, const Optimizer& optimizer, const std::string& what) {
  const std::vector<Tensor>& params = optimizer.params();
  std::vector<std::string> problems;
  for (const auto& [name, t] : file_state) {
    const bool is_step = name == "step" || (starts_with(name, "param.") && name.size() > 5 &&
                                            name.compare(name.size() - 5, 5, ".step") == 0);
    const bool is_lr = name == "lr";
    if (is_step || is_lr) {
      const DType want = is_step ? DType::int64 : DType::float64;
      if (t.dtype() != want || t.numel() != 1) {
        problems.push_back(str_cat(name, " is ", dtype_name(t.dtype()), " ", shape_str(t.shape()), ", not ",
                                   dtype_name(want), " [1]"));
        continue;
      }
      const double v = t.item<double>();
      if (!std::isfinite(v) || v < 0) problems.push_back(str_cat(name, " is ", v));
      continue;
    }
    if (!starts_with(name, "param.")) continue;  // the optimizer names it as unexpected
    const std::optional<int64_t> index = parse_whole_number(name.substr(6, name.find('.', 6) - 6));
    if (!index || *index < 0 || *index >= static_cast<int64_t>(params.size())) {
      problems.push_back(str_cat(name, " is for no parameter (the optimizer has ", params.size(), ")"));
    } else if (t.dtype() != DType::float32 || t.shape() != params[*index].shape()) {
      problems.push_back(str_cat(name, " is ", dtype_name(t.dtype()), " ", shape_str(t.shape()), ", not float32 ",
                                 shape_str(params[*index].shape())));
    }
  }
  MINIDL_CHECK(problems.empty(), what, ": the ", optimizer.type_name(), " state does not fit: ", some_names(problems));
}

}  // namespace

std::map<std::string, std::string> load_checkpoint(const std::string& path, Module& model, Optimizer* optimizer) {
  return load_checkpoint(read_checkpoint(path), path, model, optimizer);
}

std::map<std::string, std::string> load_checkpoint(const Checkpoint& ck, const std::string& path, Module& model,
                                                   Optimizer* optimizer) {
  const std::string what = str_cat("checkpoint '", path, "'");
  NamedTensors model_state, optimizer_state;
  for (const auto& [name, t] : ck.tensors) {
    if (starts_with(name, kModelPrefix))
      model_state.emplace_back(name.substr(kModelPrefix.size()), t);
    else if (starts_with(name, kOptimizerPrefix))
      optimizer_state.emplace_back(name.substr(kOptimizerPrefix.size()), t);
    else
      throw Error(str_cat(what, ": tensor '", name, "' belongs to neither the model nor the optimizer"));
  }
  check_model_state(model_state, model, ck, what);
  if (optimizer) {
    auto it = ck.metadata.find("optimizer");
    MINIDL_CHECK(it != ck.metadata.end(), what, ": holds no optimizer state");
    MINIDL_CHECK(it->second == optimizer->type_name(), what, ": holds ", it->second, " state, not ",
                 optimizer->type_name());
    check_optimizer_state(optimizer_state, *optimizer, what);
  }
  try {
    model.load_state_dict(model_state);
    if (optimizer) optimizer->load_state_dict(optimizer_state);
  } catch (const Error& e) {
    throw Error(str_cat(what, ": ", e.what()));
  }
  return ck.metadata;
}

void check_checkpoint_model(const Checkpoint& ck, const std::string& path, const std::string& expected,
                            const std::string& saved_by) {
  auto it = ck.metadata.find("model");
  MINIDL_CHECK(it != ck.metadata.end() && it->second == expected, "'", path, "' holds ",
               it == ck.metadata.end() ? std::string("no model name in its metadata")
                                       : str_cat("a '", it->second.substr(0, 64), "' model"),
               ", not a ", expected, " model saved by ", saved_by);
}

// ------------------------------------------------------------------ metadata values

std::optional<int64_t> parse_whole_number(const std::string& text) {
  const bool negative = !text.empty() && text[0] == '-';
  const size_t first = negative ? 1 : 0;
  if (text.size() == first || text.size() - first > 18) return std::nullopt;  // 18 digits cannot overflow
  int64_t v = 0;
  for (size_t i = first; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    v = v * 10 + (text[i] - '0');
  }
  return negative ? -v : v;
}

const std::string& metadata_text(const std::map<std::string, std::string>& metadata, const std::string& key,
                                 const std::string& path) {
  auto it = metadata.find(key);
  MINIDL_CHECK(it != metadata.end(), "checkpoint '", path, "' has no '", key, "' in its metadata");
  return it->second;
}

namespace {
// A value quoted in a message: one printable line of at most 43 characters (core/printable.h).
std::string quoted(const std::string& value) { return "'" + shown_value(value) + "'"; }
}  // namespace

int64_t metadata_int(const std::map<std::string, std::string>& metadata, const std::string& key, int64_t min,
                     int64_t max, const std::string& path) {
  const std::string& text = metadata_text(metadata, key, path);
  const std::optional<int64_t> v = parse_whole_number(text);
  MINIDL_CHECK(v.has_value(), "checkpoint '", path, "': metadata ", key, " = ", quoted(text), " is not a whole number");
  MINIDL_CHECK(*v >= min && *v <= max, "checkpoint '", path, "': metadata ", key, " = ", *v, " is outside ", min, "..",
               max);
  return *v;
}

double metadata_real(const std::map<std::string, std::string>& metadata, const std::string& key, double min,
                     double max, const std::string& path) {
  const std::string& text = metadata_text(metadata, key, path);
  // strtod also reads "inf", "nan", hex and leading spaces: only plain decimal text is let through to it.
  const bool plain = !text.empty() && text.size() <= 64 &&
                     text.find_first_not_of("0123456789.-eE") == std::string::npos;
  char* end = nullptr;
  const double v = plain ? std::strtod(text.c_str(), &end) : 0;
  MINIDL_CHECK(plain && end == text.c_str() + text.size() && std::isfinite(v), "checkpoint '", path, "': metadata ",
               key, " = ", quoted(text), " is not a number");
  MINIDL_CHECK(v >= min && v <= max, "checkpoint '", path, "': metadata ", key, " = ", v, " is outside ", min, "..",
               max);
  return v;
}

}  // namespace minidl
