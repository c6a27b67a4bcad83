#!/usr/bin/env bash
# tests/skip_report_test.sh BINARY — how minidl_tests reports a skipped test case (tests/skips.h): a run
# whose every case skipped exits 77 (ctest: "Skipped") and ends with "SKIPPED: <case>: <why>"; a case
# that passed assertions before skipping passes, listed as "skipped in part"; a case that notes a skip and
# then fails still fails. The cases are hidden ones of tests/test_skips.cpp.
set -uo pipefail
bin=${1:?usage: skip_report_test.sh MINIDL_TESTS}
# The outputs are printed only on a failure: a passing run must not show "SKIPPED: " lines, which
# scripts/skipped-tests.sh would list as this test's own skip.
out=""
fail() { echo "FAIL: $*"; echo "$out"; exit 1; }

out=$("$bin" "skip demo: a case that skips says why and runs no assertion" 2>&1); rc=$?
[ "$rc" -eq 77 ] || fail "a run of one skipped case exited $rc, not 77"
[ "$(echo "$out" | tail -n 1)" = "SKIPPED: skip demo: a case that skips says why and runs no assertion: what it needs is missing (a demonstration)" ] ||
  fail "the last line is not the SKIPPED line"
echo "$out" | grep -qx "1 of 1 test case(s) skipped, 0 skipped in part .*" || fail "no count line"

out=$("$bin" "[skip_demo]" 2>&1); rc=$?
[ "$rc" -eq 0 ] || fail "a run with a case that passed in part exited $rc, not 0"
echo "$out" | grep -qx "1 of 2 test case(s) skipped, 1 skipped in part .*" || fail "no count line for two cases"
echo "$out" | grep -qx "skipped in part: skip demo: a case that passes a CPU part, then skips its GPU part: its GPU part needs a GPU (a demonstration)" ||
  fail "the case that passed in part is not listed as such"

out=$("$bin" "[skip_demo_failure]" 2>&1); rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] || fail "a case that noted a skip and failed exited $rc"
echo "$out" | grep -q "^SKIPPED: " && fail "a failed case is listed as skipped"
echo "skip_report: ok"
