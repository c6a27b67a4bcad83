// tests/test_dispatch_messages.cpp — the dispatch table's errors that help the user: a misspelled op or
// kernel in a selection names the nearest one (core/did_you_mean.h), and two kernels of one key and device
// may not share a priority (registration refuses the second, naming both). Also that adding a kernel file
// recompiles one file: only cpu/register.cpp and cuda/register.cu read the kernel lists.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/did_you_mean.h"
#include "core/dispatch.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

bool relu_never(const Tensor&, Tensor&) { return false; }

}  // namespace

TEST_CASE("did_you_mean names the nearest candidate within two edits", "[core][strings]") {
  CHECK(edit_distance("matmull", "matmul") == 1);
  CHECK(edit_distance("naiv", "naive") == 1);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("kitten", "sitting") == 3);
  const std::vector<std::string> names{"naive", "ikj", "openblas"};
  CHECK(did_you_mean("naiv", names) == " (did you mean 'naive'?)");
  CHECK(did_you_mean("opneblas", names) == " (did you mean 'openblas'?)");
  CHECK(did_you_mean("cublas", names) == "");  // 3 edits from openblas: no guess
  CHECK(did_you_mean("naive", names) == "");   // a candidate itself
}

TEST_CASE("a misspelled op or kernel in a selection gets a did-you-mean, and the list", "[dispatch][selection]") {
  SelectionReset reset;
  CHECK_THROWS_WITH(select_kernels_from_spec("matmul=naiv"),
                    Catch::StartsWith("kernel selection: op 'matmul' has no kernel 'naiv' (did you mean 'naive'?); "
                                      "kernels: ") &&
                        Catch::Contains("ikj@cpu"));
  CHECK_THROWS_WITH(select_kernels_from_spec("matmull=naive"),
                    Catch::StartsWith("kernel selection: unknown op 'matmull' (did you mean 'matmul'?); ops: "));
  CHECK_THROWS_WITH(select_kernel("relu", DeviceType::cpu, "vectorised"),
                    Catch::StartsWith("kernel selection: op 'relu' has no kernel 'vectorised' on cpu (did you mean "
                                      "'vectorized'?); kernels there: "));
  // Far from every name: the list only.
  CHECK_THROWS_WITH(select_kernels_from_spec("matmul=zzzzzz"),
                    Catch::StartsWith("kernel selection: op 'matmul' has no kernel 'zzzzzz'; kernels: "));
}

TEST_CASE("a kernel with the priority of another of its key and device is refused, naming both",
          "[dispatch][priority]") {
  const std::vector<const KernelInfo*> relu = KernelRegistry::instance().candidates("relu", DeviceType::cpu);
  REQUIRE(!relu.empty());
  const KernelInfo& first = *relu.front();
  CHECK_THROWS_WITH(register_kernel<UnaryKernel>("relu", DeviceType::cpu, "test_tie", first.priority, "a tie",
                                                 relu_never),
                    "dispatch: kernels '" + first.name + "' and 'test_tie' of relu on cpu have the same priority (" +
                        std::to_string(first.priority) + "): give 'test_tie' another (core/dispatch.h, Priority)");
  CHECK(KernelRegistry::instance().candidates("relu", DeviceType::cpu).size() == relu.size());  // not added
  // Another priority is accepted; so is the same priority on another device or key.
  register_kernel<UnaryKernel>("relu", DeviceType::cpu, "test_no_tie", first.priority - 3, "no tie", relu_never);
  CHECK(KernelRegistry::instance().remove("relu", DeviceType::cpu, "test_no_tie"));
}

TEST_CASE("the kernel lists are read by one file each, so adding a kernel file recompiles that one",
          "[dispatch][registration]") {
  namespace fs = std::filesystem;
  const fs::path root = MINIDL_SOURCE_DIR;
  std::vector<std::string> readers;
  for (const char* dir : {"core", "ops", "cpu", "cuda", "nn", "dist", "tools", "examples", "tests", "exercises"})
    for (const auto& entry : fs::recursive_directory_iterator(root / dir)) {
      if (!entry.is_regular_file()) continue;
      const std::string ext = entry.path().extension().string();
      if (ext != ".h" && ext != ".cpp" && ext != ".cu" && ext != ".cuh") continue;
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      const std::string s = text.str();
      if (s.find("#include \"cpu/kernel_files.h\"") != std::string::npos ||
          s.find("#include \"cuda/kernel_files.h\"") != std::string::npos)
        readers.push_back(fs::relative(entry.path(), root).string());
    }
  std::sort(readers.begin(), readers.end());
  CHECK(readers == std::vector<std::string>{"cpu/register.cpp", "cuda/register.cu"});
}
