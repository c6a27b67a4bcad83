// tools/child_process.h — running a training program as a child process, for `minidl compare`.
//
// The child's stdout and stderr go into one pipe; each line is printed with a prefix ("[gpu] ") as it
// arrives, so the user sees the run's progress, and the raw output is kept in a log file. A SIGINT (Ctrl-C)
// or SIGTERM that reaches this process while the child runs is passed on to the child, whose signals are
// set back to their default actions (an ignored SIGINT, as in a background job, is not inherited), and the
// caller learns of it so it can stop instead of starting the next run.
#pragma once
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace minidl {

struct ChildStatus {
  int pid = 0;
  int exit_code = -1;      // the child's exit status, when it exited
  int signal = 0;          // the signal that ended it, when one did
  int interrupted_by = 0;  // SIGINT or SIGTERM received (and forwarded) while it ran; 0 if none

  bool ok() const { return signal == 0 && exit_code == 0 && interrupted_by == 0; }
  std::string describe() const;  // "exit status 1", "ended by signal 2 (Interrupt)"
};

// Runs argv[0] (a path) with argv, relaying its output to `out` with `prefix` before each line and
// writing it to `log_path`. `on_start(pid)` is called once the child runs (for a message naming it).
// Throws an Error when the log file cannot be written or the program cannot be started.
ChildStatus run_child(const std::vector<std::string>& argv, const std::string& prefix, std::FILE* out,
                      const std::string& log_path, const std::function<void(int pid)>& on_start = {});

}  // namespace minidl
