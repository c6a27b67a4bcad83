// exercises/common/exercise.cpp — the checkers' shared parts (exercises/common/exercise.h).
#include "exercises/common/exercise.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <sstream>

#include "core/backend.h"
#include "core/strings.h"
#include "tests/test_util.h"
#include "tools/bench/bench.h"
#include "tools/bench/machine.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace minidl {
namespace exercise {

namespace {

// The check running now, for the crash message (a signal handler may only read it).
char running_check[256] = "";
bool expecting_failure = false;

void write_text(const char* s) {
  const ssize_t ignored = ::write(STDERR_FILENO, s, std::strlen(s));
  (void)ignored;
}

void on_crash(int signal) {
  write_text("\nCRASH: the program stopped with ");
  write_text(signal == SIGSEGV ? "SIGSEGV (a read or write outside any tensor's memory: an index out of range, or "
                                 "a pointer past the end?)"
             : signal == SIGFPE ? "SIGFPE (an integer division by zero?)"
             : signal == SIGBUS ? "SIGBUS (a misaligned or invalid address)"
                                : "SIGABRT (an assertion, an uncaught exception, or the allocator finding its "
                                  "memory overwritten (\"free(): invalid size\", \"corrupted\"): a write past the end "
                                  "of a tensor?)");
  write_text("\n       during the check: ");
  write_text(running_check[0] ? running_check : "(before the first check)");
  write_text("\n");
  std::_Exit(3);
}

const char* kRule = "----------------------------------------------------------------------------------------------\n";

}  // namespace

Checker::Checker(int argc, char** argv, Info info) : info_(std::move(info)) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-bench") {
      bench_ = false;
    } else if (a == "--quick-bench") {
      quick_bench_ = true;
    } else if (a == "--expect-fail") {
      expect_fail_ = true;
      bench_ = false;
    } else {
      std::fprintf(stderr,
                   "exercise %s: unknown argument '%s'\nusage: %s [--no-bench] [--quick-bench] [--expect-fail]\n",
                   info_.number.c_str(), a.c_str(), argv[0]);
      std::exit(2);
    }
  }
  expecting_failure = expect_fail_;
  for (int s : {SIGSEGV, SIGFPE, SIGBUS, SIGABRT}) std::signal(s, on_crash);
  // minidl registers its kernels lazily, on the table's first use. Use it now, so that they are registered
  // before the student's kernel (the checker registers it next), as in any program that has run an op: of
  // kernels with equal priorities, the one registered first is tried first (exercise 3 checks a priority).
  KernelRegistry::instance();
  std::printf("%sExercise %s: %s\nyour file: %s\n%s", kRule, info_.number.c_str(), info_.title.c_str(), info_.file.c_str(),
              kRule);
  std::fflush(stdout);
}

void Checker::section(const std::string& title) {
  std::printf("\n%s\n", title.c_str());
  std::fflush(stdout);
}

static std::string indent(const std::string& text);

void Checker::note(const std::string& text) {
  if (in_check_) {  // printed under the check's result line
    pending_notes_.push_back(text);
    return;
  }
  std::printf("%s\n", indent(text).c_str());
  std::fflush(stdout);
}

static std::string indent(const std::string& text) {
  std::string out = "        ";
  for (char ch : text) {
    out += ch;
    if (ch == '\n') out += "        ";
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n')) out.pop_back();
  return out;
}

void Checker::check(const std::string& name, const std::function<std::string()>& body) {
  ++checks_;
  std::snprintf(running_check, sizeof running_check, "%s", name.c_str());
  std::string problem;
  in_check_ = true;
  try {
    problem = body();
  } catch (const std::exception& e) {
    problem = str_cat("threw an exception: ", e.what());
  }
  in_check_ = false;
  reset_kernel_selection();  // a check that failed half-way must not leave its selection behind
  running_check[0] = '\0';
  if (problem.empty()) {
    std::printf("  ok    %s\n", name.c_str());
  } else {
    std::printf("  FAIL  %s\n%s\n", name.c_str(), indent(problem).c_str());
    failures_.push_back(name);
  }
  for (const std::string& text : pending_notes_) std::printf("%s\n", indent(text).c_str());
  pending_notes_.clear();
  std::fflush(stdout);
}

void Checker::require_cuda() {
  const std::string why = testing::cuda_unavailable_reason();
  if (why.empty()) return;
  std::printf(
      "\nSKIPPED: this exercise runs on an NVIDIA GPU, and none is usable here: %s\n"
      "Your file compiled (so the compiler found no errors in it); run `make exercise N=%s` on a machine with a GPU\n"
      "to check it (docs/course/00-setup.md: building with CUDA, `minidl info`).\n",
      why.c_str(), info_.number.c_str());
  std::fflush(stdout);
  std::exit(77);
}

bool Checker::timing_wanted() const { return bench_ && failures_.empty(); }

void Checker::bench(const std::vector<std::string>& keys, const std::vector<std::string>& kernels,
                    const std::vector<std::string>& shapes, const std::string& device) {
  if (!bench_) return;
  if (!failures_.empty()) {
    std::printf("\nbench: skipped until every check passes (a wrong kernel's time means nothing)\n");
    return;
  }
  bench::BenchOptions o;
  o.ops = keys;
  o.keys_only = true;  // the keys the student's kernel serves: not the op's backward keys (conv2d.backward_input)
  o.device = device;
  const Device d = Device::parse(device);
  // Only the kernels this build has (no OpenBLAS, no cuDNN: those rows are left out).
  for (const std::string& name : kernels) {
    bool present = false;
    for (const std::string& key : keys)
      for (const std::string& k : testing::kernels_for(key, d.type)) present = present || k == name;
    if (present) o.kernels.push_back(name);
  }
  o.shapes = quick_bench_ && !shapes.empty() ? std::vector<std::string>{shapes.front()} : shapes;
  if (quick_bench_) {
    o.repeat = 3;
    o.budget_seconds = 0.02;
  }
  std::string names;
  for (const std::string& n : o.kernels) names += " --kernel " + n;
  std::string shape_flags;
  for (const std::string& s : o.shapes) shape_flags += " --shape " + s;
  std::string ops;
  for (const std::string& k : keys) ops += " --op " + k;
  const std::string key_list = join(keys, ", ");
  std::printf("\nbench: your kernel next to the others, as `build/bin/minidl bench%s%s%s` would time them if\n"
              "\"student\" were one of minidl's own kernels (it is registered in this process only); only the\n"
              "key%s your kernel serves (%s), not the op's backward keys\n\n",
              ops.c_str(), names.c_str(), shape_flags.c_str(), keys.size() > 1 ? "s" : "", key_list.c_str());
  std::fflush(stdout);
  int rc = 0;
  try {
    rc = bench::run_bench(o, stdout);
  } catch (const std::exception& e) {
    failures_.push_back("bench");
    std::printf("  FAIL  bench\n%s\n", indent(e.what()).c_str());
    return;
  }
  if (rc == 2) {
    failures_.push_back("bench");
    std::printf("  FAIL  bench: a kernel's output differs from the reference (marked WRONG above)\n");
  }
  std::fflush(stdout);
}

int Checker::finish() {
  std::printf("\n%s", kRule);
  if (failures_.empty()) {
    std::printf("Exercise %s: all %d checks passed.\n", info_.number.c_str(), checks_);
  } else {
    std::printf("Exercise %s: %zu of %d checks FAILED. Start with the first: \"%s\"\n", info_.number.c_str(),
                failures_.size(), checks_, failures_.front().c_str());
    std::printf("Edit %s, then run `make exercise N=%s` again.\n", info_.file.c_str(), info_.number.c_str());
  }
  std::printf("%s", kRule);
  std::fflush(stdout);
  if (expect_fail_) {
    if (failures_.empty()) {
      std::printf("--expect-fail: every check passed, but this build was expected to fail (it is the stub): the "
                  "checker cannot tell a missing implementation from a working one\n");
      return 1;
    }
    std::printf("--expect-fail: the stub fails, as it should\n");
    return 0;
  }
  return failures_.empty() ? 0 : 1;
}

// ---------------------------------------------------------------- calling kernels

const KernelInfo* find_kernel(const std::string& key, DeviceType device, const std::string& name) {
  for (const KernelInfo* k : KernelRegistry::instance().all())
    if (k->key == key && k->device == device && k->name == name) return k;
  return nullptr;
}

// The name of key `key`'s object in namespace keys (ops/kernel_signatures.h): "conv2d.backward_input" ->
// "conv2d_backward_input".
std::string key_object_name(std::string key) {
  for (char& c : key)
    if (c == '.') c = '_';
  return key;
}

std::string registered(const std::string& key, DeviceType device, const std::string& registration_function) {
  if (find_kernel(key, device, kStudent)) return "";
  const std::string others = join(testing::kernels_for(key, device), ", ");
  return str_cat("no kernel named \"", kStudent, "\" is registered for key \"", key, "\" on ", device_type_name(device),
                 " (kernels there: ", others, ").\n", registration_function,
                 " must call register_kernel(keys::", key_object_name(key), ", DeviceType::", device_type_name(device),
                 ", \"", kStudent, "\", ...)");
}

Selected::Selected(const std::string& op, DeviceType device, const std::string& name) {
  select_kernel(op, device, name);
}
Selected::~Selected() { reset_kernel_selection(); }

std::string capture_stderr(const std::function<void()>& body) {
  std::fflush(stderr);
  char path[] = "/tmp/minidl-exercise-stderr-XXXXXX";
  const int file = ::mkstemp(path);
  MINIDL_CHECK(file >= 0, "capture_stderr: cannot create a temporary file");
  const int saved = ::dup(STDERR_FILENO);
  ::dup2(file, STDERR_FILENO);
  try {
    body();
  } catch (...) {
    std::fflush(stderr);
    ::dup2(saved, STDERR_FILENO);
    ::close(saved);
    ::close(file);
    ::unlink(path);
    throw;
  }
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  std::string text;
  ::lseek(file, 0, SEEK_SET);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(file, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  ::close(file);
  ::unlink(path);
  return text;
}

std::string shape_text(const Shape& s) { return shape_str(s); }

double median_seconds(const std::function<void()>& work, Device d, int runs) {
  bench::MachineInfo machine;
  machine.device = d;
  machine.spec = backend_for(d.type).spec(d.index);
#ifdef _OPENMP
  machine.threads = omp_get_max_threads();
#endif
  bench::CacheFlush flush(machine);
  DeviceBackend& backend = backend_for(d.type);
  flush.run();
  backend.time_on_device(work, d.index);  // warm-up
  std::vector<double> times;
  for (int i = 0; i < std::max(1, runs); ++i) {
    flush.run();
    times.push_back(backend.time_on_device(work, d.index));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace exercise
}  // namespace minidl
