// tests/test_checkpoint_save.cpp — the write side of checkpoints (nn/checkpoint.h): what a save replaces
// (symbolic links, file modes, things that are not files), the up-front path check programs run before
// training, temporary files (removed on failure, on a signal mid-save, and when a killed run left them).
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "nn/checkpoint.h"
#include "ops/ops.h"

using namespace minidl;

namespace {

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/minidl_test_save_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    ::chmod(path.c_str(), 0700);
    std::system(("rm -rf '" + path + "'").c_str());
  }
  std::string file(const std::string& name) const { return path + "/" + name; }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    DIR* d = ::opendir(path.c_str());
    while (dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) out.push_back(e->d_name);
    ::closedir(d);
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string path;
};

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::vector<uint8_t> out;
  int c;
  while ((c = std::fgetc(f)) != EOF) out.push_back(static_cast<uint8_t>(c));
  std::fclose(f);
  return out;
}

void touch(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  std::fputs("partial", f);
  std::fclose(f);
}

Checkpoint small(double value) {
  Checkpoint ck;
  ck.metadata["model"] = "small";
  ck.tensors.emplace_back("w", full({4}, value));
  return ck;
}

// A checkpoint of about `bytes` bytes, contiguous on the CPU (serialising it runs no kernel).
Checkpoint large(int64_t bytes) {
  Checkpoint ck;
  ck.tensors.emplace_back("w", zeros({bytes / 4}));
  return ck;
}

mode_t mode_of(const std::string& path) {
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

bool is_symlink(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// The pid of a process that has exited (a child reaped at once): no process has it now.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  REQUIRE(pid > 0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

// SIGXFSZ is what the kernel sends a process whose write passes RLIMIT_FSIZE: a way to interrupt a save
// in the middle of writing its temporary file, at a known point. This handler turns it into the signal a
// test wants to see arrive mid-save.
int g_signal_to_raise = 0;
extern "C" void raise_test_signal(int) { ::raise(g_signal_to_raise); }

}  // namespace

TEST_CASE("checkpoint save: a symbolic link's target is replaced and the link stays", "[checkpoint_save]") {
  TempDir dir;
  ::mkdir(dir.file("real").c_str(), 0700);
  write_checkpoint(dir.file("real/model.ckpt"), small(1));
  REQUIRE(::symlink("real/model.ckpt", dir.file("link.ckpt").c_str()) == 0);
  REQUIRE(::symlink("link.ckpt", dir.file("link2.ckpt").c_str()) == 0);  // a chain of two

  write_checkpoint(dir.file("link2.ckpt"), small(2));
  CHECK(is_symlink(dir.file("link.ckpt")));
  CHECK(is_symlink(dir.file("link2.ckpt")));
  CHECK(read_checkpoint(dir.file("real/model.ckpt")).tensors[0].second.to_vector<float>()[0] == 2);
  CHECK(dir.entries() == std::vector<std::string>{"link.ckpt", "link2.ckpt", "real"});

  // A dangling link: the file it names is created.
  REQUIRE(::symlink("real/new.ckpt", dir.file("dangling.ckpt").c_str()) == 0);
  write_checkpoint(dir.file("dangling.ckpt"), small(3));
  CHECK(is_symlink(dir.file("dangling.ckpt")));
  CHECK(read_checkpoint(dir.file("real/new.ckpt")).tensors[0].second.to_vector<float>()[0] == 3);
  CHECK(prepare_checkpoint_path(dir.file("link2.ckpt")).target == dir.file("real/model.ckpt"));
}

TEST_CASE("checkpoint save: an existing file keeps its permissions, a new one follows the umask",
          "[checkpoint_save]") {
  TempDir dir;
  const std::string path = dir.file("model.ckpt");
  write_checkpoint(path, small(1));
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  write_checkpoint(path, small(2));
  CHECK(mode_of(path) == 0600);
  REQUIRE(::chmod(path.c_str(), 0640) == 0);
  write_checkpoint(path, small(3));
  CHECK(mode_of(path) == 0640);

  const mode_t old_mask = ::umask(027);
  write_checkpoint(dir.file("new.ckpt"), small(1));
  ::umask(old_mask);
  CHECK(mode_of(dir.file("new.ckpt")) == 0640);
}

TEST_CASE("checkpoint save: folders, FIFOs and empty paths are refused, before anything is written",
          "[checkpoint_save]") {
  TempDir dir;
  ::mkdir(dir.file("adir").c_str(), 0700);
  REQUIRE(::mkfifo(dir.file("fifo").c_str(), 0600) == 0);
  REQUIRE(::symlink("fifo", dir.file("to_fifo").c_str()) == 0);

  CHECK_THROWS_WITH(write_checkpoint(dir.file("adir"), small(1)), Catch::Contains("is a folder"));
  CHECK_THROWS_WITH(write_checkpoint(dir.file("fifo"), small(1)), Catch::Contains("is a FIFO"));
  CHECK_THROWS_WITH(write_checkpoint(dir.file("to_fifo"), small(1)), Catch::Contains("is a FIFO"));
  CHECK_THROWS_WITH(write_checkpoint("", small(1)), Catch::Contains("empty path"));
  // /dev/null is a character device: refused before a temporary file is made next to it, so the device
  // node is never replaced (as root, rename(2) would do it).
  CHECK_THROWS_WITH(write_checkpoint("/dev/null", small(1)), Catch::Contains("is a character device"));

  CHECK_THROWS_WITH(prepare_checkpoint_path(dir.file("adir")),
                    Catch::StartsWith("--save '" + dir.file("adir") + "'") && Catch::Contains("is a folder"));
  CHECK_THROWS_WITH(prepare_checkpoint_path(dir.file("fifo"), "--resume"),
                    Catch::StartsWith("--resume") && Catch::Contains("is a FIFO"));
  CHECK_THROWS_WITH(prepare_checkpoint_path("/dev/full"), Catch::Contains("is a character device"));
  CHECK_THROWS_WITH(prepare_checkpoint_path(""), Catch::Contains("--save: the file name is empty"));
  CHECK_THROWS_WITH(prepare_checkpoint_path(dir.file("missing/m.ckpt")),
                    Catch::Contains("the folder '" + dir.file("missing") + "' does not exist"));
  touch(dir.file("plain"));
  CHECK_THROWS_WITH(prepare_checkpoint_path(dir.file("plain/m.ckpt")), Catch::Contains("is not a folder"));
  CHECK(dir.entries() == std::vector<std::string>{"adir", "fifo", "plain", "to_fifo"});

  // A folder we may not create files in (root may create files anywhere, so this part needs a user).
  if (::geteuid() != 0) {
    ::mkdir(dir.file("locked").c_str(), 0500);
    CHECK_THROWS_WITH(prepare_checkpoint_path(dir.file("locked/m.ckpt")),
                      Catch::Contains("cannot create files in the folder") && Catch::Contains("Permission denied"));
  } else {
    WARN("running as root: the unwritable-folder case of prepare_checkpoint_path is not exercised");
  }
  // A good path: nothing is left behind by the check (it creates and removes a file).
  const std::vector<std::string> listed = dir.entries();
  const SavePath ok = prepare_checkpoint_path(dir.file("m.ckpt"));
  CHECK(ok.target == dir.file("m.ckpt"));
  CHECK(ok.stale_removed == 0);
  CHECK(dir.entries() == listed);
}

TEST_CASE("checkpoint save: a failed write removes its temporary file and keeps the old file",
          "[checkpoint_save]") {
  TempDir dir;
  const std::string path = dir.file("model.ckpt");
  write_checkpoint(path, small(1));
  const std::vector<uint8_t> before = read_bytes(path);

  // RLIMIT_FSIZE makes write(2) fail with EFBIG (SIGXFSZ ignored) after the temporary file exists.
  struct sigaction ignore {}, old_action {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGXFSZ, &ignore, &old_action);
  struct rlimit old_limit;
  ::getrlimit(RLIMIT_FSIZE, &old_limit);
  struct rlimit small_limit = old_limit;
  small_limit.rlim_cur = 4096;
  ::setrlimit(RLIMIT_FSIZE, &small_limit);
  std::string message;
  try {
    write_checkpoint(path, large(1 << 20));
  } catch (const Error& e) {
    message = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::sigaction(SIGXFSZ, &old_action, nullptr);
  CHECK_THAT(message, Catch::Contains("write failed") && Catch::Contains("File too large"));
  CHECK(dir.entries() == std::vector<std::string>{"model.ckpt"});
  CHECK(read_bytes(path) == before);
}

TEST_CASE("checkpoint save: SIGTERM or SIGINT during a save removes the temporary file", "[checkpoint_save]") {
  for (int sig : {SIGTERM, SIGINT}) {
    INFO("signal " << sig);
    TempDir dir;
    const std::string path = dir.file("model.ckpt");
    write_checkpoint(path, small(1));
    const std::vector<uint8_t> before = read_bytes(path);
    const Checkpoint big = large(1 << 20);  // built before fork: the child runs no kernel

    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // A program's usual dispositions (the test runner installs its own handlers for SIGTERM and SIGINT).
      ::signal(SIGTERM, SIG_DFL);
      ::signal(SIGINT, SIG_DFL);
      // Mid-write, RLIMIT_FSIZE raises SIGXFSZ; its handler raises `sig`, which must end the process
      // the way `sig` does, with the temporary file gone.
      g_signal_to_raise = sig;
      struct sigaction on_xfsz {};
      on_xfsz.sa_handler = raise_test_signal;
      ::sigaction(SIGXFSZ, &on_xfsz, nullptr);
      struct rlimit limit;
      ::getrlimit(RLIMIT_FSIZE, &limit);
      limit.rlim_cur = 4096;
      ::setrlimit(RLIMIT_FSIZE, &limit);
      try {
        write_checkpoint(path, big);
      } catch (...) {
        ::_exit(10);  // the signal did not end the save
      }
      ::_exit(11);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));
    if (WIFSIGNALED(status)) CHECK(WTERMSIG(status) == sig);
    if (WIFEXITED(status)) FAIL("the child exited with status " << WEXITSTATUS(status) << " instead of dying");
    CHECK(dir.entries() == std::vector<std::string>{"model.ckpt"});
    CHECK(read_bytes(path) == before);
  }
}

TEST_CASE("checkpoint save: the signal handlers exist only during a save, and only over default dispositions",
          "[checkpoint_save]") {
  TempDir dir;
  struct sigaction default_action {}, saved_term {};
  default_action.sa_handler = SIG_DFL;
  ::sigaction(SIGTERM, &default_action, &saved_term);
  write_checkpoint(dir.file("m.ckpt"), small(1));
  struct sigaction after {};
  ::sigaction(SIGTERM, nullptr, &after);
  CHECK(after.sa_handler == SIG_DFL);
  ::sigaction(SIGTERM, &saved_term, nullptr);

  // An ignored SIGINT stays ignored through a save.
  struct sigaction ignore {}, old_action {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &ignore, &old_action);
  write_checkpoint(dir.file("m.ckpt"), small(2));
  struct sigaction now {};
  ::sigaction(SIGINT, nullptr, &now);
  CHECK(now.sa_handler == SIG_IGN);
  ::sigaction(SIGINT, &old_action, nullptr);
}

TEST_CASE("checkpoint save: temporary files of killed saves are removed when the next run prepares",
          "[checkpoint_save]") {
  TempDir dir;
  const std::string path = dir.file("m.ckpt");
  write_checkpoint(path, small(1));
  const std::string dead = std::to_string(dead_pid());
  const std::string alive = std::to_string(::getppid());  // our parent outlives this test
  touch(dir.file("m.ckpt.tmp-" + dead + "-a1B2c3"));        // a killed save: removed
  touch(dir.file("m.ckpt.tmp-" + alive + "-d4E5f6"));       // a save in progress elsewhere: kept
  touch(dir.file("other.ckpt.tmp-" + dead + "-g7H8i9"));    // another file's: kept
  touch(dir.file("m.ckpt.tmp-Zz9Yy8"));                     // pid-less (older minidl), old: removed
  touch(dir.file("m.ckpt.tmp-Xx7Ww6"));                     // pid-less, recent: kept
  const struct utimbuf hour_ago = {std::time(nullptr) - 3600, std::time(nullptr) - 3600};
  REQUIRE(::utime(dir.file("m.ckpt.tmp-Zz9Yy8").c_str(), &hour_ago) == 0);

  const SavePath p = prepare_checkpoint_path(path);
  CHECK(p.stale_removed == 2);
  CHECK(dir.entries() == std::vector<std::string>{"m.ckpt", "m.ckpt.tmp-" + alive + "-d4E5f6", "m.ckpt.tmp-Xx7Ww6",
                                                  "other.ckpt.tmp-" + dead + "-g7H8i9"});
  CHECK(read_checkpoint(path).metadata.at("model") == "small");
  CHECK(prepare_checkpoint_path(path).stale_removed == 0);
}
