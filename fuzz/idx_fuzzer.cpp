// fuzz/idx_fuzzer.cpp — libFuzzer target: fuzz/harness.h idx_input (see fuzz/README.md).
#include <cstddef>
#include <cstdint>

#include "fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  minidl::fuzz::idx_input(data, size);
  return 0;
}
