// tests/skips.cpp — the skip notes of tests/skips.h and the Catch2 listener that decides, at the end of
// each test case, whether it was skipped (it noted a skip and no assertion ran) or passed in part.
#include "tests/skips.h"

// The listener base class of Catch2 2 is visible only with this defined (Catch2 docs, "event listeners").
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>
#include <algorithm>

namespace minidl {
namespace testing {

namespace {

struct SkipState {
  std::string current_case;
  std::string pending_why;  // noted by the running case
  std::vector<SkippedCase> skipped;
  int cases = 0;
};

SkipState& state() {
  static SkipState s;
  return s;
}

class SkipListener : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;

  void testCaseStarting(Catch::TestCaseInfo const& info) override {
    state().current_case = info.name;
    state().pending_why.clear();
  }

  void testCaseEnded(Catch::TestCaseStats const& stats) override {
    SkipState& s = state();
    ++s.cases;
    if (s.pending_why.empty()) return;
    const Catch::Counts& a = stats.totals.assertions;
    if (a.failed > 0) return;  // a failure is reported as one; the skip note does not hide it
    s.skipped.push_back({stats.testInfo.name, s.pending_why, a.passed > 0});
    s.pending_why.clear();
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(SkipListener)

void skip_test(const std::string& why) {
  SkipState& s = state();
  if (s.pending_why.empty())
    s.pending_why = why;
  else if (s.pending_why.find(why) == std::string::npos)
    s.pending_why += "; " + why;
}

const std::vector<SkippedCase>& skipped_cases() { return state().skipped; }

int cases_run() { return state().cases; }

std::string skip_report() {
  const std::vector<SkippedCase>& skipped = state().skipped;
  if (skipped.empty()) return "";
  size_t whole = 0;
  for (const SkippedCase& c : skipped) whole += c.in_part ? 0 : 1;
  // The count first and the cases last: scripts/skipped-tests.sh reads a "SKIPPED: " line and what follows.
  std::string out = std::to_string(whole) + " of " + std::to_string(state().cases) + " test case(s) skipped, " +
                    std::to_string(skipped.size() - whole) +
                    " skipped in part (Catch2 2 has no SKIP: the totals above count them as passed):\n";
  // Each reason once: "SKIPPED: <case>: <why>" for a reason of one case, else the reason and its cases.
  for (const bool in_part : {false, true}) {
    const std::string label = in_part ? "skipped in part" : "SKIPPED";
    std::vector<std::string> reasons;
    for (const SkippedCase& c : skipped)
      if (c.in_part == in_part && std::find(reasons.begin(), reasons.end(), c.why) == reasons.end())
        reasons.push_back(c.why);
    for (const std::string& why : reasons) {
      std::vector<std::string> names;
      for (const SkippedCase& c : skipped)
        if (c.in_part == in_part && c.why == why) names.push_back(c.name);
      if (names.size() == 1) {
        out += label + ": " + names[0] + ": " + why + "\n";
        continue;
      }
      out += label + " (" + std::to_string(names.size()) + " cases): " + why + ":\n";
      for (const std::string& name : names) out += "  " + name + "\n";
    }
  }
  return out;
}

}  // namespace testing
}  // namespace minidl
