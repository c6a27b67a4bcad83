// tests/main.cpp — Catch2 runner. When asked for the GPU tests ("[cuda]") on a machine where no GPU is
// usable it prints why and exits 77, which ctest reports as "Skipped". After any other run it lists the
// test cases that skipped (tests/skips.h), last, and exits 77 when every case it ran skipped (a ctest
// entry of one case whose GPU, font or MPI is missing: "Skipped", with SKIP_RETURN_CODE 77).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "tests/skips.h"
#include "tests/test_util.h"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "[cuda]") {
      const std::string why = minidl::testing::cuda_unavailable_reason();
      if (!why.empty()) {
        std::printf("SKIPPED: GPU tests not run: %s\n", why.c_str());
        return 77;
      }
    }
  }
  const int failed = Catch::Session().run(argc, argv);
  const std::string report = minidl::testing::skip_report();
  std::fputs(report.c_str(), stdout);
  std::fflush(stdout);
  int skipped_whole = 0;
  for (const auto& c : minidl::testing::skipped_cases()) skipped_whole += c.in_part ? 0 : 1;
  if (failed == 0 && minidl::testing::cases_run() > 0 && skipped_whole == minidl::testing::cases_run()) return 77;
  return failed;
}
