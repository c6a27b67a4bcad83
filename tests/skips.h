// tests/skips.h — test cases that skip, reported as skipped. Catch2 2.13 (Debian's) has no SKIP() (it came
// in v3.3): a case that returns early after a WARN counted as passed, with no assertion. Here a case says
// `skip_test(why)` and returns; a listener (tests/skips.cpp) counts a case that noted a skip and ran no
// assertion as skipped, and the runner (tests/main.cpp) lists the skipped cases at the end of the run
// ("SKIPPED: <case>: <why>"; cases that share a reason: the reason once, then their names), and exits 77
// (ctest: "Skipped") when every case it ran was skipped.
// A case that noted a skip but ran assertions too (a CPU part before its GPU part) passed: it is listed
// as "skipped in part".
#pragma once
#include <string>
#include <vector>

namespace minidl {
namespace testing {

// Notes that the running test case skips (the caller then returns): `why` is said once at the end.
void skip_test(const std::string& why);

struct SkippedCase {
  std::string name, why;
  bool in_part = false;  // assertions ran besides the skip: the case passed
};

// The cases of this run that noted a skip, in the order they ran; and how many cases ran in all.
const std::vector<SkippedCase>& skipped_cases();
int cases_run();

// The end-of-run lines ("SKIPPED: ..." and "skipped in part: ...", then a count), for the runner.
std::string skip_report();

}  // namespace testing
}  // namespace minidl
