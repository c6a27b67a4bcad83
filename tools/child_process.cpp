// tools/child_process.cpp — run_child of tools/child_process.h, with posix_spawn and a pipe.
#include "tools/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

extern char** environ;

namespace minidl {

namespace {

// The running child, for the signal handler (0: none), and the last signal it forwarded.
volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_signal = 0;

extern "C" void forward_signal(int sig) {
  g_signal = sig;
  if (g_child > 0) ::kill(static_cast<pid_t>(g_child), sig);
}

constexpr int kForwarded[] = {SIGINT, SIGTERM};

// Installs forward_signal for SIGINT and SIGTERM while it lives; the previous handlers come back after.
class ForwardSignals {
 public:
  ForwardSignals() {
    g_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (size_t i = 0; i < 2; ++i) ::sigaction(kForwarded[i], &sa, &previous_[i]);
  }
  ~ForwardSignals() {
    g_child = 0;
    for (size_t i = 0; i < 2; ++i) ::sigaction(kForwarded[i], &previous_[i], nullptr);
  }

 private:
  struct sigaction previous_[2];
};

// Prints complete lines of the child's output with the prefix; a '\r' (a progress line redrawn in place)
// ends a line too.
class LineRelay {
 public:
  LineRelay(std::string prefix, std::FILE* out) : prefix_(std::move(prefix)), out_(out) {}
  void add(const char* data, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (data[i] == '\n' || data[i] == '\r') {
        emit();
        continue;
      }
      line_ += data[i];
    }
    std::fflush(out_);
  }
  void finish() {
    emit();
    std::fflush(out_);
  }

 private:
  void emit() {
    if (line_.empty()) return;
    std::fprintf(out_, "%s%s\n", prefix_.c_str(), line_.c_str());
    line_.clear();
  }
  std::string prefix_;
  std::FILE* out_;
  std::string line_;
};

}  // namespace

std::string ChildStatus::describe() const {
  if (signal != 0) return str_cat("ended by signal ", signal, " (", strsignal(signal), ")");
  return str_cat("exit status ", exit_code);
}

ChildStatus run_child(const std::vector<std::string>& argv, const std::string& prefix, std::FILE* out,
                      const std::string& log_path, const std::function<void(int pid)>& on_start) {
  MINIDL_CHECK(!argv.empty(), "run_child: no program");
  std::FILE* log = std::fopen(log_path.c_str(), "w");
  MINIDL_CHECK(log != nullptr, "cannot write '", log_path, "': ", std::strerror(errno));
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    std::fclose(log);
    throw Error(str_cat("cannot create a pipe: ", std::strerror(errno)));
  }

  // The child: stdout and stderr into the pipe (dup2 clears close-on-exec on 1 and 2), default signal
  // actions for the signals we forward, nothing blocked.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t defaults, none;
  sigemptyset(&defaults);
  for (int sig : kForwarded) sigaddset(&defaults, sig);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  ForwardSignals forwarding;
  pid_t pid = 0;
  const int spawn_error = ::posix_spawn(&pid, argv[0].c_str(), &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(fds[1]);
  if (spawn_error != 0) {
    ::close(fds[0]);
    std::fclose(log);
    throw Error(str_cat("cannot start '", argv[0], "': ", std::strerror(spawn_error)));
  }
  g_child = pid;
  if (g_signal != 0) ::kill(pid, g_signal);  // a signal that came between the spawn and the line above
  if (on_start) on_start(pid);

  LineRelay relay(prefix, out);
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::fwrite(buffer, 1, static_cast<size_t>(n), log);
    relay.add(buffer, static_cast<size_t>(n));
  }
  relay.finish();
  ::close(fds[0]);
  std::fclose(log);

  // Wait for the end without reaping (the pid stays the child's, so a late signal cannot reach another
  // process), stop forwarding, then reap.
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  g_child = 0;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ChildStatus result;
  result.pid = pid;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.interrupted_by = g_signal;
  return result;
}

}  // namespace minidl
