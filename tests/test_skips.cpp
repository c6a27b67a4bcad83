// tests/test_skips.cpp — hidden cases for tests/skip_report_test.sh, which runs them and checks how a
// skipped case is reported (tests/skips.h): skipped, skipped in part, and a failure the skip does not hide.
#include <catch2/catch.hpp>

#include "tests/skips.h"

using minidl::testing::skip_test;

TEST_CASE("skip demo: a case that skips says why and runs no assertion", "[.skip_demo]") {
  skip_test("what it needs is missing (a demonstration)");
}

TEST_CASE("skip demo: a case that passes a CPU part, then skips its GPU part", "[.skip_demo]") {
  CHECK(1 + 1 == 2);
  skip_test("its GPU part needs a GPU (a demonstration)");
}

TEST_CASE("skip demo: a case that notes a skip, then fails", "[.skip_demo_failure]") {
  skip_test("this note must not hide the failure");
  CHECK(1 + 1 == 3);
}
