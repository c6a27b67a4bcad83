#!/usr/bin/env bash
# scripts/skipped-tests.sh [LOG] — after ctest: the tests that were skipped, each with the reason it
# printed. ctest reports a skipped test (exit status 77) as "Skipped" without its output; minidl's tests
# print "SKIPPED: <why>" first (tests/main.cpp for the [cuda] cases, the shell tests), and ctest keeps
# every test's output in Testing/Temporary/LastTest.log, which this reads (default: build/'s).
set -euo pipefail
log=${1:-build/Testing/Temporary/LastTest.log}
[ -f "$log" ] || exit 0
awk '
  /^[0-9]+\/[0-9]+ Test: / { name = $0; sub(/^[0-9]+\/[0-9]+ Test: /, "", name); in_output = 0; why = ""; next }
  /^Output:$/ { in_output = 1; next }
  in_output && /<end of output>$/ {
    line = $0; sub(/<end of output>$/, "", line)
    if (why != "" && line != "") why = why " " line
    if (why != "") skipped[++n] = "  " name ": " why
    in_output = 0; next
  }
  in_output && why == "" && /^SKIPPED: / { why = substr($0, 10); next }
  in_output && why != "" { why = why " " $0 }
  END {
    if (n == 0) exit
    print "Skipped tests, and why (from " FILENAME "):"
    for (i = 1; i <= n; ++i) print skipped[i]
  }
' "$log"
