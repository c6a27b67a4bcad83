// tests/test_run_environment.cpp — what a run says about the machine it measures on (core/cpu_load.h):
// the load read from a /proc/loadavg-like file, and the warning when the OpenMP threads exceed the free
// cores; and which kernel selections no device of a run has (core/selection_devices.h).
// tests/run_environment_test.sh checks the programs' lines.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "core/cpu_load.h"
#include "core/selection_devices.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

CpuLoad load_of(int cores, double load1, int threads) {
  CpuLoad l;
  l.cores = cores;
  l.load1 = load1;
  l.load5 = load1;
  l.load15 = load1;
  l.threads = threads;
  return l;
}

bool relu_test_kernel(const Tensor&, Tensor&) { return false; }

}  // namespace

TEST_CASE("cpu load: the three averages of a loadavg file, the cores and the threads", "[core][cpu_load]") {
  const std::string path = "cpu_load_test_loadavg.txt";
  {
    std::ofstream out(path);
    out << "1.50 0.75 0.25 3/812 4242\n";
  }
  const CpuLoad l = read_cpu_load(path);
  std::remove(path.c_str());
  CHECK(l.load1 == 1.5);
  CHECK(l.load5 == 0.75);
  CHECK(l.load15 == 0.25);
  CHECK(l.cores >= 1);
  CHECK(l.threads >= 1);
  CHECK(describe_load(l) == "load average 1.50 0.75 0.25 on " + std::to_string(l.cores) + " cores");

  const CpuLoad missing = read_cpu_load("no/such/loadavg");
  CHECK_FALSE(missing.load_known());
  CHECK(missing.free_cores() == missing.cores);
  CHECK(describe_load(missing) == "load average unknown on " + std::to_string(missing.cores) + " cores");
  CHECK(oversubscription_warning(missing) == "");  // unknown load: nothing to say
}

TEST_CASE("cpu load: the warning comes when the threads exceed the free cores by more than the slack",
          "[core][cpu_load]") {
  // Idle 2 cores: 2 threads fit.
  CHECK(oversubscription_warning(load_of(2, 0.0, 2)) == "");
  // A background half core (0.4) is within the slack.
  CHECK(oversubscription_warning(load_of(2, 0.4, 2)) == "");
  // Load 1.62 on 2 cores: 0.38 free; 2 threads are too many, 1 fits.
  CHECK(oversubscription_warning(load_of(2, 1.62, 2)) ==
        "2 OpenMP thread(s) but 2 cores with a 1-minute load of 1.62 (0.38 free): threads wait for cores, so times "
        "measured now vary and understate this code; set OMP_NUM_THREADS=1 or run on an idle machine");
  CHECK(oversubscription_warning(load_of(2, 1.4, 1)) == "");  // 0.6 free: one thread fits, with the slack
  // More threads than cores warns whatever the load.
  CHECK_THAT(oversubscription_warning(load_of(16, 0.0, 17)),
             Catch::StartsWith("17 OpenMP thread(s) but 16 cores") && Catch::Contains("set OMP_NUM_THREADS=16 "));
  // One thread on a machine with no free core: there is no fewer to advise.
  CHECK(oversubscription_warning(load_of(2, 10.0, 1)) ==
        "1 OpenMP thread(s) but 2 cores with a 1-minute load of 10.00 (0.00 free): threads wait for cores, so times "
        "measured now vary and understate this code; run on an idle machine");
  // The advice: as many threads as fit.
  CHECK_THAT(oversubscription_warning(load_of(16, 5.2, 16)), Catch::Contains("set OMP_NUM_THREADS=11 "));
}

TEST_CASE("a kernel selection that no device of the run has is named, with the devices that have it",
          "[dispatch][selection]") {
  // A relu kernel that only cuda has: registered for the test, on a device type this build may lack.
  ScopedKernel<UnaryKernel> cuda_only("relu", DeviceType::cuda, "test_cuda_only", relu_test_kernel);
  const std::vector<DeviceType> cpu{DeviceType::cpu}, cuda{DeviceType::cuda};
  CHECK(selections_unused_by("relu=test_cuda_only", cpu) ==
        std::vector<std::string>{"relu=test_cuda_only selects a cuda kernel; this run uses cpu only, so the "
                                 "selection changes nothing"});
  CHECK(selections_unused_by("relu=test_cuda_only", cuda).empty());
  CHECK(selections_unused_by("relu=naive", cpu).empty());
  CHECK(selections_unused_by("matmul=naive,relu=test_cuda_only", cpu).size() == 1);
  // A CPU kernel in a GPU run.
  CHECK(selections_unused_by("matmul=ikj", cuda) ==
        std::vector<std::string>{"matmul=ikj selects a cpu kernel; this run uses cuda only, so the selection "
                                 "changes nothing"});
  // Nothing to say about what selects nothing or is refused elsewhere.
  CHECK(selections_unused_by("relu=default", cpu).empty());
  CHECK(selections_unused_by("relu", cpu).empty());
  CHECK(selections_unused_by("nosuchop=naive", cpu).empty());
  CHECK(selections_unused_by("", cpu).empty());
}
