// tests/test_dispatch_threads.cpp — the dispatch table used from several threads at once: ops dispatched
// on worker threads while another thread selects kernels and registers and removes one (core/dispatch.h,
// "Thread safety"). Run under ThreadSanitizer by `make test-tsan`, which reports any data race; in other
// builds it checks that every result stays right and nothing crashes.
#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "core/dispatch.h"
#include "ops/kernel_signatures.h"
#include "ops/ops.h"
#include "tests/test_util.h"

using namespace minidl;

namespace {

// A relu kernel of the test's own, registered and removed while the workers run: it computes the same
// values as the others, so results stay checkable whichever kernel serves a call.
bool relu_by_test(const Tensor& x, Tensor& out) {
  if (x.dtype() != DType::float32 || !x.is_contiguous()) return false;
  const float* in = x.data<float>();
  float* o = out.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] > 0 ? in[i] : 0;
  return true;
}

}  // namespace

TEST_CASE("dispatch: threads dispatch while another selects, registers and removes kernels", "[dispatch][threads]") {
  testing::SelectionReset reset;
  KernelRegistry& registry = KernelRegistry::instance();
  const std::vector<std::string> relu_kernels = testing::kernels_for("relu", DeviceType::cpu);
  const std::vector<std::string> add_kernels = testing::kernels_for("add", DeviceType::cpu);
  REQUIRE(relu_kernels.size() >= 2);

  const Tensor x = from_vector({-2.0, -0.5, 0.0, 1.5, 3.0, -1.0, 2.0, 4.0}, {8}, DType::float32);
  const std::vector<float> want_relu = {0, 0, 0, 1.5f, 3, 0, 2, 4};
  const std::vector<float> want_add = {-4, -1, 0, 3, 6, -2, 4, 8};

  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0}, errors{0};
  std::atomic<long> calls{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&] {
      while (!stop.load()) {
        try {
          if (relu(x).to_vector<float>() != want_relu) ++wrong;
          if (add(x, x).to_vector<float>() != want_add) ++wrong;
          // The usage notes are read while other threads write them.
          (void)last_kernel("relu", DeviceType::cpu);
          (void)last_declined_kernels("relu", DeviceType::cpu);
          ++calls;
        } catch (const std::exception&) {
          ++errors;
        }
      }
    });
  }
  // The selecting thread: every relu and add kernel in turn, the defaults, and a kernel that comes and goes.
  for (int round = 0; round < 200; ++round) {
    select_kernel("relu", DeviceType::cpu, relu_kernels[round % relu_kernels.size()]);
    select_kernel("add", DeviceType::cpu, add_kernels[round % add_kernels.size()]);
    if (round % 10 == 0) {
      register_kernel<UnaryKernel>("relu", DeviceType::cpu, "by_test", 1000, "registered by a test", relu_by_test);
      (void)registry.candidates("relu", DeviceType::cpu);
      std::this_thread::yield();
      REQUIRE(registry.remove("relu", DeviceType::cpu, "by_test"));
    }
    reset_kernel_selection();
  }
  // Let the workers run a little longer against the final lists, then stop them.
  while (calls.load() < 200) std::this_thread::yield();
  stop = true;
  for (std::thread& w : workers) w.join();
  CHECK(wrong.load() == 0);
  CHECK(errors.load() == 0);
  CHECK(calls.load() >= 200);
}

TEST_CASE("dispatch: a selection that changes nothing keeps the published list", "[dispatch]") {
  testing::SelectionReset reset;
  KernelRegistry& registry = KernelRegistry::instance();
  const std::vector<const KernelInfo*>* before = &registry.candidates("relu", DeviceType::cpu);
  select_kernel("relu", DeviceType::cpu, "default");  // already the default
  CHECK(&registry.candidates("relu", DeviceType::cpu) == before);
  // A real change publishes a new list, and the old one stays readable (a dispatch may be walking it).
  const std::string other = testing::kernels_for("relu", DeviceType::cpu).back();
  const std::vector<const KernelInfo*> old_copy = *before;
  select_kernel("relu", DeviceType::cpu, other);
  const std::vector<const KernelInfo*>& after = registry.candidates("relu", DeviceType::cpu);
  CHECK(after.front()->name == other);
  CHECK(*before == old_copy);
}

TEST_CASE("dispatch: an unknown kernel name lists each kernel of the op once", "[dispatch]") {
  testing::SelectionReset reset;
  try {
    select_kernels_from_spec("conv2d=nope");
    FAIL("conv2d=nope was accepted");
  } catch (const Error& e) {
    const std::string message = e.what();
    CHECK_THAT(message, Catch::StartsWith("kernel selection: op 'conv2d' has no kernel 'nope'; kernels: "));
    // conv2d has three keys (forward and two gradients); each name@device appears once.
    const std::string naive = "naive@cpu";
    const size_t first = message.find(naive);
    REQUIRE(first != std::string::npos);
    CHECK(message.find(naive, first + 1) == std::string::npos);
  }
}
