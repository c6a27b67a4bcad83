#!/usr/bin/env bash
# tests/exercise_mutant_test.sh CHECKER TEXT — an exercise's checker built with a planted mistake
# (tests/fixtures/exercise_mutants/) must fail (exit 1: a check failed) and name the first wrong value: its
# report must contain TEXT. A checker whose comparison lets the mistake through fails this test.
set -uo pipefail
checker="${1:?usage: exercise_mutant_test.sh CHECKER TEXT}"
text="${2:?usage: exercise_mutant_test.sh CHECKER TEXT}"
out="$("$checker" --no-bench 2>&1)"
rc=$?
if [ "$rc" -eq 77 ]; then  # the checker skipped (a GPU exercise without a GPU): so does this test
  echo "$out"; exit 77
fi
if [ "$rc" -ne 1 ]; then
  echo "FAIL: $checker exited $rc, expected 1 (a check failed):"; echo "$out"; exit 1
fi
grep -qF -- "$text" <<< "$out" || { echo "FAIL: the report lacks \"$text\":"; echo "$out"; exit 1; }
echo "exercise_mutant_test: the planted mistake is caught, and the report names it: \"$text\""
