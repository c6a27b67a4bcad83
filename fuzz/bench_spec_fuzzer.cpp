// fuzz/bench_spec_fuzzer.cpp — libFuzzer target: the `minidl bench --shape` reader on arbitrary text (see
// fuzz/README.md). One input is tried twice:
//   - whole, as a --shape value KEY:SPEC (bench::check_shape_flag: the op or key, then its families' specs);
//   - the part after the first ':' (all of it when there is none) as the spec of every key of every family
//     (CaseFamily::check), so that each family's syntax meets every mutation.
// Parse only: check() reads and counts, and never builds a case or runs a kernel, so a spec that asks for
// terabytes costs nothing here. A minidl::Error is the reader refusing the spec; an accepted spec must
// count a positive, finite number of bytes. Anything else (a crash, a sanitizer report, another exception,
// one allocation above 64 MB) is a bug.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "tools/bench/bench.h"
#include "tools/bench/case.h"

namespace {

void expect_counted(double bytes) {
  if (!(bytes > 0 && std::isfinite(bytes))) std::abort();
}

}  // namespace

// The reader allocates only strings and vectors of the spec's size: any single allocation above 64 MB
// (libFuzzer's -malloc_limit_mb, put first so that a flag given on the command line wins) is a bug.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  static std::vector<char*> args;
  static char limit[] = "-malloc_limit_mb=64";
  args.assign(*argv, *argv + *argc);
  args.insert(args.begin() + 1, limit);
  args.push_back(nullptr);
  *argc += 1;
  *argv = args.data();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace minidl;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    expect_counted(bench::check_shape_flag(text));
  } catch (const Error&) {
  }
  const size_t colon = text.find(':');
  const std::string spec = colon == std::string::npos ? text : text.substr(colon + 1);
  for (const bench::CaseFamily& family : bench::case_families())
    for (const bench::CaseKey& k : family.keys) {
      try {
        expect_counted(family.check(k.key, spec));
      } catch (const Error&) {
      }
    }
  return 0;
}
