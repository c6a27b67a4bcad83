// tests/test_kernel_auto.cpp — the `auto` kernel selection (core/kernel_auto.h, core/dispatch.h) and the
// per-shape profile (core/kernel_profile.h, core/profile_shapes.h).
//
// The `auto` cases register kernels of their own under a key only these tests use ("test_auto", the
// UnaryKernel signature), dispatched by name: a kernel made slower on purpose (a 20 ms sleep per call,
// against nothing), one that declines some shapes, one that counts its calls. The one timing assumption
// is that margin: 20 ms of sleep is slower than an empty function on any machine. Which kernel ran is
// read back with last_kernel, and whether `auto` timed again with the slow kernel's call count.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/call_shape.h"
#include "core/dispatch.h"
#include "core/kernel_auto.h"
#include "core/kernel_profile.h"
#include "core/profile_shapes.h"
#include "ops/kernel_signatures.h"
#include "tests/test_util.h"
#include "tools/bench/bench.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

const char* kKey = "test_auto";

// Calls of each test kernel (reset by each test case).
std::atomic<int> slow_calls{0}, fast_calls{0};

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// Slow on purpose: 20 ms a call, whatever the shape.
bool slow_kernel(const Tensor&, Tensor&) {
  ++slow_calls;
  sleep_ms(20);
  return true;
}
// Does nothing quickly.
bool fast_kernel(const Tensor&, Tensor&) {
  ++fast_calls;
  return true;
}
// Declines every call (and would be the fastest if it did not).
bool declining_kernel(const Tensor&, Tensor&) { return false; }
// Fast on small tensors (shape A, at most 10 elements); declines larger ones (shape B).
bool small_only_kernel(const Tensor& x, Tensor&) { return x.numel() <= 10; }
// Fast on small tensors, 20 ms on larger ones.
bool small_fast_kernel(const Tensor& x, Tensor&) {
  if (x.numel() > 10) sleep_ms(20);
  return true;
}
// 5 ms on every shape: between the two above.
bool steady_kernel(const Tensor&, Tensor&) {
  sleep_ms(5);
  return true;
}

// A test kernel of key "test_auto" on the CPU for the life of the object, at a priority of the test's choice
// (tests/test_util.h ScopedKernel fixes the priority; here it is what `auto` must ignore).
class TestKernel {
 public:
  TestKernel(const std::string& name, int priority, UnaryKernel* fn) : name_(name) {
    register_kernel<UnaryKernel>(kKey, DeviceType::cpu, name, priority, "registered by test_kernel_auto", fn);
  }
  ~TestKernel() {
    reset_kernel_selection();
    KernelRegistry::instance().remove(kKey, DeviceType::cpu, name_);
  }
  TestKernel(const TestKernel&) = delete;
  TestKernel& operator=(const TestKernel&) = delete;

 private:
  std::string name_;
};

// One call of "test_auto" on x; returns the kernel that served it.
std::string call(const Tensor& x) {
  Tensor out = zeros(x.shape());
  dispatch<UnaryKernel>(kKey, Device::cpu(), x, out);
  return last_kernel(kKey, DeviceType::cpu);
}

void reset_counts() {
  slow_calls = 0;
  fast_calls = 0;
}

const Shape kShapeA = {2, 3};    // 6 elements
const Shape kShapeB = {10, 10};  // 100 elements

}  // namespace

TEST_CASE("auto: the faster kernel wins whatever the priorities, timed once per shape", "[auto]") {
  TestKernel slow("slow", 50, slow_kernel), fast("fast", 5, fast_kernel);
  KernelRegistry::instance().auto_table().clear();
  reset_counts();
  CHECK(call(zeros(kShapeA)) == "slow");  // the usual order: the higher priority
  CHECK(slow_calls == 1);

  select_kernel(kKey, DeviceType::cpu, "auto");
  CHECK(KernelRegistry::instance().selected(kKey, DeviceType::cpu) == "auto");
  reset_counts();
  CHECK(call(zeros(kShapeA)) == "fast");
  const int timed = slow_calls;
  CHECK(timed >= 2);  // a warm-up call and at least one timed call
  CHECK(timed <= 1 + kAutoTimedCalls);
  for (int i = 0; i < 3; ++i) CHECK(call(zeros(kShapeA)) == "fast");
  CHECK(slow_calls == timed);  // later calls of the shape go straight to the winner
  CHECK(KernelRegistry::instance().auto_table().find(kKey, "cpu", describe_call(zeros(kShapeA), zeros(kShapeA))) ==
        "fast");

  // Clearing the selection gives the usual order back.
  select_kernel(kKey, DeviceType::cpu, "default");
  CHECK(call(zeros(kShapeA)) == "slow");
}

TEST_CASE("auto: a kernel that declines is never chosen, and the log line says it declined", "[auto]") {
  TestKernel declining("declines", 60, declining_kernel), slow("slow", 50, slow_kernel);
  KernelRegistry::instance().auto_table().clear();
  select_kernel(kKey, DeviceType::cpu, "auto");
  CHECK(call(zeros(kShapeA)) == "slow");
  CHECK(last_declined_kernels(kKey, DeviceType::cpu).empty());  // the winner was tried first

  const std::string line = auto_choice_line(
      "conv2d", "cpu", "2x3", "im2col_blas",
      {{"im2col_blas", 0.0015, ""}, {"direct", 0.04, "after its warm-up"}, {"declines", 0, "declined"},
       {"naive", 0, "not timed (reference)"}});
  CHECK(line == "[minidl auto] conv2d cpu 2x3 -> im2col_blas (im2col_blas 1.5 ms, direct 40 ms after its warm-up, "
                "declines declined, naive not timed (reference))");
}

TEST_CASE("auto: a reference kernel is timed only when no other accepts, and a kernel far slower in its warm-up is not "
          "called again", "[auto]") {
  KernelRegistry::instance().auto_table().clear();
  {
    // "fast" (portable) accepts: the reference kernel is never called, however fast it might be.
    TestKernel fast("fast", 10, fast_kernel), reference("reference", 0, slow_kernel);
    select_kernel(kKey, DeviceType::cpu, "auto");
    reset_counts();
    CHECK(call(zeros(kShapeA)) == "fast");
    CHECK(slow_calls == 0);
  }
  {
    // The only other kernel declines: the reference kernel is timed and wins.
    TestKernel declining("declines", 10, declining_kernel), reference("reference", 0, fast_kernel);
    select_kernel(kKey, DeviceType::cpu, "auto");
    reset_counts();
    CHECK(call(zeros(kShapeA)) == "reference");
    CHECK(fast_calls >= 2);  // a warm-up and at least one timed call
  }
  {
    // "fast" comes first (higher priority) and is timed; "slow" takes 20 ms in its warm-up, far beyond
    // kAutoCutoff times fast's time, so its warm-up is its only call.
    TestKernel fast("fast", 50, fast_kernel), slow("slow", 10, slow_kernel);
    select_kernel(kKey, DeviceType::cpu, "auto");
    reset_counts();
    CHECK(call(zeros(kShapeA)) == "fast");
    CHECK(slow_calls == 1);
  }
}

TEST_CASE("auto: chooses per shape", "[auto]") {
  TestKernel steady("steady", 50, steady_kernel);
  KernelRegistry::instance().auto_table().clear();
  select_kernel(kKey, DeviceType::cpu, "auto");
  {
    // Fast on A, declines B.
    TestKernel small_only("small_only", 5, small_only_kernel);
    select_kernel(kKey, DeviceType::cpu, "auto");  // TestKernel's registration cleared nothing, but be explicit
    CHECK(call(zeros(kShapeA)) == "small_only");
    CHECK(call(zeros(kShapeB)) == "steady");
    CHECK(call(zeros(kShapeA)) == "small_only");
  }
  {
    // Fast on A, slow on B. (Removing small_only forgot the key's choices: this kernel is timed afresh.)
    TestKernel small_fast("small_fast", 5, small_fast_kernel);
    select_kernel(kKey, DeviceType::cpu, "auto");
    CHECK(call(zeros(kShapeA)) == "small_fast");
    CHECK(call(zeros(kShapeB)) == "steady");
  }
}

TEST_CASE("auto: deterministic mode keeps the usual order and times nothing", "[auto]") {
  TestKernel slow("slow", 50, slow_kernel), fast("fast", 5, fast_kernel);
  KernelRegistry::instance().auto_table().clear();
  select_kernel(kKey, DeviceType::cpu, "auto");
  reset_counts();
  {
    DeterministicScope deterministic(true);
    CHECK(call(zeros(kShapeA)) == "slow");
    CHECK(slow_calls == 1);
    CHECK(fast_calls == 0);
  }
  CHECK(call(zeros(kShapeA)) == "fast");  // out of it, `auto` times
}

TEST_CASE("auto: the choices round-trip through their file, and a loaded choice is used without timing", "[auto]") {
  TestKernel slow("slow", 50, slow_kernel), fast("fast", 5, fast_kernel);
  AutoTable& table = KernelRegistry::instance().auto_table();
  table.clear();
  select_kernel(kKey, DeviceType::cpu, "auto");
  CHECK(call(zeros(kShapeA)) == "fast");

  const std::string path = "/tmp/minidl_test_auto_" + std::to_string(getpid()) + ".txt";
  table.save(path);
  {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    CHECK_THAT(text.str(), Catch::Contains("test_auto cpu 2x3,2x3 fast\n"));
  }
  table.clear();
  table.load(path);
  reset_counts();
  CHECK(call(zeros(kShapeA)) == "fast");
  CHECK(slow_calls == 0);  // not timed: the loaded choice served
  CHECK(fast_calls == 1);

  // A malformed line is an Error naming the file and the line; a missing file is an empty table.
  {
    std::ofstream out(path);
    out << "# minidl auto choices\ntest_auto cpu 2x3\n";
  }
  CHECK_THROWS_WITH(table.load(path), Catch::Contains(path + ", line 2") && Catch::Contains("key device shape kernel"));
  std::remove(path.c_str());
  CHECK_NOTHROW(table.load(path));
}

TEST_CASE("auto: every op at once (star), and the keys that cannot be repeated are never timed", "[auto]") {
  SelectionReset reset;
  select_kernels_from_spec("*=auto");
  KernelRegistry& registry = KernelRegistry::instance();
  CHECK(registry.selected("relu", DeviceType::cpu) == "auto");
  CHECK(registry.watch(registry.candidates("relu", DeviceType::cpu)).auto_select);
  for (const char* key :
       {"sgd_step", "adam_step", "dropout_mask", "ctc_loss", "ctc_loss.backward", "batch_norm.running_stats"}) {
    CHECK_FALSE(kernel_auto_may_time(key));
    CHECK_FALSE(registry.watch(registry.candidates(key, DeviceType::cpu)).auto_select);
  }
  // An op's own selection comes before "*".
  select_kernels_from_spec("relu=naive");
  CHECK(registry.selected("relu", DeviceType::cpu) == "naive");
  CHECK_FALSE(registry.watch(registry.candidates("relu", DeviceType::cpu)).auto_select);
  CHECK_THROWS_WITH(select_kernels_from_spec("*=naive"), Catch::Contains("every op ('*') can only be given auto"));
  reset_kernel_selection();
  CHECK(registry.selected("matmul", DeviceType::cpu).empty());
}

TEST_CASE("call shapes: tensors, lists, bools and the parameter structs", "[auto][profile]") {
  Conv2dParams p;
  p.stride_h = 2, p.pad_h = 1, p.pad_w = 1;
  const Tensor f64 = zeros({4}, DType::float64);
  const Tensor strided = zeros({2, 3}).transpose(0, 1);
  const std::vector<Tensor> list = {zeros({2, 3}), zeros({4})};
  CHECK(describe_call(zeros({2, 3}), f64, Tensor(), strided, true, p, 0.5, list) ==
        "2x3,4:float64,-,3x2:strided,1,s2x1p1,[2:10]");
  CHECK(describe_call(zeros({1, 2, 5, 5}), Pool2dParams()) == "1x2x5x5,k2s2p0");
}

TEST_CASE("profile: a row per shape, and MINIDL_PROFILE=shapes writes specs the bench accepts", "[profile]") {
  KernelRegistry& registry = KernelRegistry::instance();
  const bool was_profiling = registry.profiling();
  registry.set_profiling(true);
  registry.clear_profile();
  conv2d(zeros({2, 3, 7, 6}), zeros({4, 3, 3, 2}));
  conv2d(zeros({1, 3, 8, 8}), zeros({4, 3, 3, 3}), Tensor(), 2, 1);
  conv2d(zeros({1, 3, 8, 8}), zeros({4, 3, 3, 3}), Tensor(), 2, 1);
  max_pool2d(zeros({2, 3, 8, 8}), 2);
  const std::vector<KernelRegistry::ProfileRow> rows = registry.profile_rows();
  registry.set_profiling(was_profiling);

  std::vector<std::string> conv_shapes;
  for (const auto& r : rows)
    if (r.key == "conv2d") {
      conv_shapes.push_back(r.shape);
      CHECK(r.calls == (r.shape.rfind("1x3x8x8", 0) == 0 ? 2 : 1));
    }
  std::sort(conv_shapes.begin(), conv_shapes.end());
  REQUIRE(conv_shapes == std::vector<std::string>{"1x3x8x8,4x3x3x3,1x4x4x4,s2p1", "2x3x7x6,4x3x3x2,2x4x5x5,s1p0"});
  CHECK(bench_shape_spec("conv2d", conv_shapes[1]) == "conv2d:2x3x7x6,4x3x3x2,s1p0");

  // Every spec the shape list holds is one the bench reads.
  const std::vector<std::string> specs = profile_bench_shapes(rows);
  CHECK(std::find(specs.begin(), specs.end(), "--shape conv2d:1x3x8x8,4x3x3x3,s2p1") != specs.end());
  CHECK(std::find(specs.begin(), specs.end(), "--shape max_pool2d:2x3x8x8,k2s2p0") != specs.end());
  for (const std::string& s : specs) {
    INFO(s);
    REQUIRE(s.rfind("--shape ", 0) == 0);
    CHECK_NOTHROW(bench::check_shape_flag(s.substr(8)));
  }
  // The other stages and keys, from shapes as the dispatcher writes them.
  for (const auto& [key, shape] : std::vector<std::pair<std::string, std::string>>{
           {"conv2d.backward_input", "2x4x5x5,4x3x3x2,2x3x7x6,s1p0"},
           {"conv2d.backward_weight", "2x3x7x6,2x4x5x5,4x3x3x2,s1p0"},
           {"matmul", "1x64x9216,1x128x9216,1x64x128,0,1"},
           {"matmul", "4x9216x64,4x9216x128,4x64x128,1,0"},
           {"max_pool2d.backward", "2x3x8x8,2x3x4x4,2x3x4x4,2x3x8x8,k2s2p0"},
           {"relu", "64x32x26x26:strided,64x32x26x26"},
           {"copy", "5x7:strided,5x7"},
           {"cross_entropy", "64x10,64:int64,0d"},
           {"bias_relu", "64x32x26x26,32,64x32x26x26"},
           {"batch_norm", "64x32x676,32,32,64x32x676,32,32"},
           {"softmax", "64x10,64x10"}}) {
    const std::string spec = bench_shape_spec(key, shape);
    INFO(key << " " << shape << " -> " << spec);
    REQUIRE_FALSE(spec.empty());
    CHECK_NOTHROW(bench::check_shape_flag(spec));
  }
  CHECK(bench_shape_spec("matmul", "1x64x9216,1x128x9216,1x64x128,0,1") == "matmul:64x128x9216,tb");
  CHECK(bench_shape_spec("relu", "4x4:float64,4x4:float64").empty());  // the bench times float32
  CHECK(bench_shape_spec("sgd_step", "[8:1199882],[8:1199882],[8:1199882]").empty());

  // What MINIDL_PROFILE=shapes writes to MINIDL_PROFILE_FILE: one argument a line.
  const std::string path = "/tmp/minidl_test_shapes_" + std::to_string(getpid()) + ".txt";
  std::FILE* sink = std::tmpfile();
  write_profile_shapes(rows, path, sink);
  std::fclose(sink);
  std::ifstream in(path);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    CHECK(std::find(specs.begin(), specs.end(), line) != specs.end());
    ++lines;
  }
  CHECK(lines == static_cast<int>(specs.size()));
  std::remove(path.c_str());
}
