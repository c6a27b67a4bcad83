// exercises/common/exercise.h — what every exercise's checker shares: a list of named checks that say
// clearly what is wrong, direct calls of the student's kernel through the dispatch table, the bench, and
// the exit codes `make exercise N=...` and CI read.
//
// A checker (exercises/NN-*/check.cpp) is a small program:
//
//   int main(int argc, char** argv) {
//     exercise::Checker c(argc, argv, {4, "a cache-blocked matmul", "exercises/04-blocked-matmul/matmul_blocked.cpp"});
//     register_student_matmul();                       // the student's registration function
//     c.section("correctness: against the naive reference");
//     c.check("64x64x64", [&] { return ...; });        // "" = passed, otherwise what is wrong
//     c.bench({"matmul"}, {"student", "naive", "openblas"}, {"matmul:256x256x256"});
//     return c.finish();
//   }
//
// Exit codes: 0 every check passed; 1 a check failed; 3 the student's code crashed (the check that was
// running is named); 77 skipped (a GPU exercise on a machine without a usable GPU). Flags:
//   --no-bench      skip the timing (CI's runs, and a quick re-check)
//   --quick-bench   time only the first shape, a few calls (CI runs the solutions so, to keep the bench path
//                   tested without spending minutes)
//   --expect-fail   CI's check that the stub fails: exit 0 when some check failed, 1 when all passed
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace minidl {
namespace exercise {

// The name every exercise registers the student's kernel under (the kernel table's "kernel" column).
constexpr const char* kStudent = "student";

// An exercise's number as `make exercise N=...` takes it: 4, or 4b for the second exercise of chapter 4.
class Number {
 public:
  Number(int n) : text_(std::to_string(n)) {}             // NOLINT: implicit, so that {4, ...} reads naturally
  Number(const char* text) : text_(text) {}               // NOLINT: {"4b", ...}
  const char* c_str() const { return text_.c_str(); }

 private:
  std::string text_;
};

struct Info {
  Number number;
  std::string title;
  std::string file;  // the student's file, from the repository root
};

class Checker {
 public:
  // Reads the flags, prints the heading, and registers minidl's kernels (the table's first use), so that a
  // kernel the checker registers afterwards comes after them, as in a program.
  Checker(int argc, char** argv, Info info);

  // Prints a heading for the checks that follow.
  void section(const std::string& title);
  // Runs one check. body returns "" when it passes, otherwise a message saying what is wrong (several lines
  // are fine). An exception from the student's code fails the check with its message.
  void check(const std::string& name, const std::function<std::string()>& body);
  // Explanation printed under the checks (not a check); from inside a check, under its result line.
  void note(const std::string& text);

  bool all_passed() const { return failures_.empty(); }

  // For GPU exercises: returns when a CUDA device is usable; otherwise prints why and exits 77 (skipped).
  void require_cuda();

  // Times kernels of `keys` with `minidl bench` (tools/bench/) in this process, where the student's kernel
  // is registered: `kernels` names the rows to show (names this build lacks are left out), `shapes` are
  // bench --shape values. Runs only when every check so far passed, and not with --no-bench.
  void bench(const std::vector<std::string>& keys, const std::vector<std::string>& kernels,
             const std::vector<std::string>& shapes, const std::string& device = "cpu");
  // For exercises whose key has no bench case: whether to time at all, and whether quickly.
  bool timing_wanted() const;
  bool quick() const { return quick_bench_; }

  // Prints the summary and returns the exit code (see the header comment).
  int finish();

 private:
  Info info_;
  bool bench_ = true, quick_bench_ = false, expect_fail_ = false;
  int checks_ = 0;
  std::vector<std::string> failures_;
  bool in_check_ = false;
  std::vector<std::string> pending_notes_;
};

// ---------------------------------------------------------------- calling kernels

// The kernel `name` of (key, device), or nullptr when none is registered.
const KernelInfo* find_kernel(const std::string& key, DeviceType device, const std::string& name);

// "" when the student's kernel of (key, device) is registered; otherwise a message saying what to do.
std::string registered(const std::string& key, DeviceType device, const std::string& registration_function);

// Calls kernel `name` of (key, device) directly (no selection, no fallback): returns what it returned, true
// when it served the call, false when it declined. Fn is the key's signature (ops/kernel_signatures.h).
template <class Fn, class... Args>
bool call_kernel(const std::string& key, DeviceType device, const std::string& name, Args&&... args) {
  const KernelInfo* k = find_kernel(key, device, name);
  MINIDL_CHECK(k != nullptr, "no kernel '", name, "' is registered for ", key, " on ", device_type_name(device));
  MINIDL_CHECK(k->signature == typeid(Fn), "kernel '", name, "' of ", key, " was registered with another signature");
  return reinterpret_cast<Fn*>(k->fn)(std::forward<Args>(args)...);
}

// Selects kernel `name` for `op` on `device` for the life of the object (then restores the defaults).
class Selected {
 public:
  Selected(const std::string& op, DeviceType device, const std::string& name);
  ~Selected();
  Selected(const Selected&) = delete;
  Selected& operator=(const Selected&) = delete;
};

// Everything written to stderr while `body` runs (the dispatch log).
std::string capture_stderr(const std::function<void()>& body);

// "[2, 3]" style strings for messages.
std::string shape_text(const Shape& s);

// Seconds of one call of `work` on device d: the median of `runs` timed calls after one warm-up, each after
// a cache flush, timed as `minidl bench` times (the backend's time_on_device). For exercises that time
// something the bench has no case for.
double median_seconds(const std::function<void()>& work, Device d, int runs);

}  // namespace exercise
}  // namespace minidl
