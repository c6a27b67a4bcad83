// fuzz/font_fuzzer.cpp — libFuzzer target: fuzz/harness.h font_input (see fuzz/README.md).
#include <cstddef>
#include <cstdint>

#include "fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  minidl::fuzz::font_input(data, size);
  return 0;
}
