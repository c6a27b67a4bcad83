#!/usr/bin/env bash
# tests/bench_cli_test.sh MINIDL_BINARY — `minidl bench --baseline`, `--against` and `--shape-sweep` as a
# user runs them: exit statuses, one-line errors naming the file or flag, and the files a sweep writes
# (tests/test_bench_*.cpp check the verdicts, the CSV and the SVG in detail). The verdicts come from the
# hand-written files of tests/fixtures/bench, so no result depends on this machine's speed.
set -u
minidl=$1
here=$(cd "$(dirname "$0")" && pwd)
fixtures=$here/fixtures/bench
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

fail() {
  echo "FAIL: $*"
  [ -e "$dir/expect.log" ] && { echo "--- output"; tail -n 20 "$dir/expect.log"; }
  exit 1
}

# Runs "$@", expecting exit status $1 and output (stdout and stderr) containing $2.
expect() {
  local want_rc=$1 want_text=$2
  shift 2
  "$@" >"$dir/expect.log" 2>&1
  local rc=$?
  [ "$rc" -eq "$want_rc" ] || fail "exit $rc (wanted $want_rc): $*"
  grep -qF -- "$want_text" "$dir/expect.log" || fail "no '$want_text' in the output of: $*"
}

# Two saved runs: openblas 50% slower (exit 3), ikj within the noise, a case missing, a case new.
expect 3 "slower: REGRESSION" "$minidl" bench --baseline "$fixtures/before.jsonl" --against "$fixtures/after.jsonl"
grep -q " ikj .*same (within noise)" "$dir/expect.log" || fail "ikj is not 'same (within noise)'"
grep -qF "missing (in the baseline, not in this run): relu 5x7 naive on cpu" "$dir/expect.log" || fail "no missing case"
grep -qF "new (not in the baseline): matmul 64x64x64 packed_omp on cpu" "$dir/expect.log" || fail "no new case"
# A threshold above the 50%: still "slower", exit 0.
expect 0 "slower" "$minidl" bench --baseline "$fixtures/before.jsonl" --against "$fixtures/after.jsonl" \
  --regression-threshold 60
grep -q "slower: REGRESSION\\|^REGRESSION" "$dir/expect.log" && fail "a regression beyond a 60% threshold"
# A run against itself: no regression.
expect 0 "0 slower" "$minidl" bench --baseline "$fixtures/before.jsonl" --against "$fixtures/before.jsonl"

# Missing and malformed baselines: exit 2 before any work, one line naming the file.
expect 2 "bench --baseline '$dir/none.json': cannot open it" "$minidl" bench --baseline "$dir/none.json"
[ "$(wc -l <"$dir/expect.log")" -eq 1 ] || fail "more than one line for a missing baseline"
echo "not json" >"$dir/bad.json"
expect 2 "bench --baseline '$dir/bad.json': line 1 is not JSON" "$minidl" bench --baseline "$dir/bad.json"
: >"$dir/empty.json"
expect 2 "bench --baseline '$dir/empty.json': is empty" "$minidl" bench --baseline "$dir/empty.json"
expect 2 "bench --against '$dir/bad.json': line 1 is not JSON" "$minidl" bench --baseline \
  "$fixtures/before.jsonl" --against "$dir/bad.json"
expect 2 "--against needs --baseline" "$minidl" bench --against "$fixtures/after.jsonl"
expect 2 "--regression-threshold needs --baseline" "$minidl" bench --op relu --regression-threshold 5
expect 2 "is the same file as --baseline" "$minidl" bench --baseline "$fixtures/before.jsonl" \
  --json "$fixtures/before.jsonl"

# Sweep flags refused before any work.
expect 2 "bench --shape-sweep '64:32:x2': HI 32 is below LO 64" "$minidl" bench --op matmul --shape-sweep 64:32:x2
expect 2 "name the one op" "$minidl" bench --shape-sweep 8:16:x2
expect 2 "relu has no default sweep spec" "$minidl" bench --op relu --shape-sweep 8:16:x2
expect 2 "--sweep-spec needs --shape-sweep" "$minidl" bench --op matmul --sweep-spec nxnxn

# A tiny sweep (sizes 4, 8, 16; two kernels): the CSV has a header and 6 rows, the SVG one path per kernel.
expect 0 "matmul 16x16x16:" "$minidl" bench --op matmul --kernel naive --kernel ikj --shape-sweep 4:16:x2 \
  --repeat 2 --budget 0.001 --csv "$dir/sweep.csv" --svg "$dir/sweep.svg" --json "$dir/sweep.jsonl"
[ "$(wc -l <"$dir/sweep.csv")" -eq 7 ] || fail "sweep.csv has $(wc -l <"$dir/sweep.csv") lines, not 7"
grep -q "^cpu,matmul,8x8x8,8,ikj,ok," "$dir/sweep.csv" || fail "no row for ikj at n = 8"
[ "$(grep -c "<path " "$dir/sweep.svg")" -eq 2 ] || fail "sweep.svg does not have one path per kernel"
grep -qF "GFLOP/s (log scale)" "$dir/sweep.svg" || fail "no y-axis label with its unit"

# The sweep's JSON as a baseline: its cases run again (here on the CPU: its device) and are compared.
expect 0 "baseline $dir/sweep.jsonl: cpu" "$minidl" bench --baseline "$dir/sweep.jsonl" --repeat 2 --budget 0.001 \
  --regression-threshold 100000
grep -qF "6 compared" "$dir/expect.log" || fail "the sweep's 6 cases were not compared"
echo "bench_cli: all checks passed"
