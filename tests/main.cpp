// tests/main.cpp — Catch2 runner. When asked for the GPU tests ("[cuda]") on a machine where no GPU is
// usable it prints why and exits 77, which ctest reports as "Skipped".
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

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
  return Catch::Session().run(argc, argv);
}
