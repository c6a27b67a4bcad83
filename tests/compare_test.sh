#!/usr/bin/env bash
# tests/compare_test.sh CASE MINIDL_BINARY MNIST_BINARY — `minidl compare` and `minidl plot` as a user runs
# them (tests/test_compare.cpp checks the table and the SVG in detail).
#
# Cases (one ctest entry each):
#   cli        compare on a small MNIST fixture with --cpu-limit: exit 0, the CPU run (and the GPU run
#              first, when there is a GPU; otherwise the reason), table.md, curves.svg and the metrics; plot
#              of two runs of different lengths, against epoch and step; bad input exits non-zero with a
#              message naming it (2 for a flag error, 1 for a bad file: a FIFO refused, never waited on)
#   interrupt  SIGINT to compare while a run trains: the run is stopped (the signal is passed on, even
#              though a background job starts with SIGINT ignored), compare exits 130, and no other run
#              starts and no table is written
# MNIST data: tests/mnist_fixture.pl.
set -u
case_name=$1
minidl=$2
mnist=$3
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log "$dir"/out/*.log; do [ -e "$f" ] && { echo "--- $f"; tail -n 12 "$f"; }; done
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

perl "$here/mnist_fixture.pl" "$dir/mnist" 300 50 || fail "could not write the MNIST fixture"

case $case_name in
  cli)
    out=$dir/out
    "$minidl" compare --data "$dir/mnist" --epochs 1 --cpu-limit 128 --out "$out" -- --batch 32 \
      >"$dir/compare.log" 2>&1 || fail "compare exited $?"
    if grep -q "^\[gpu\] " "$dir/compare.log"; then
      grep -q "is usable: it trains first" "$dir/compare.log" || fail "a GPU run without the message"
      [ -s "$out/gpu.jsonl" ] || fail "no gpu.jsonl"
    else
      grep -q "^compare: no GPU run (.*): running the CPU side only" "$dir/compare.log" || fail "no reason for no GPU"
    fi
    grep -q "^\[cpu\] final test accuracy" "$dir/compare.log" || fail "the CPU run's output was not relayed"
    for f in table.md curves.svg cpu.jsonl cpu.log; do [ -s "$out/$f" ] || fail "no $out/$f"; done
    grep -qF "| training images per epoch |" "$out/table.md" || fail "no table in table.md"
    grep -qF " 128 (--cpu-limit) |" "$out/table.md" || fail "the limited CPU run is not marked"
    head -c 4 "$out/curves.svg" | grep -q "<svg" || fail "curves.svg does not start with <svg"
    tail -n 1 "$out/curves.svg" | grep -q "</svg>" || fail "curves.svg does not end with </svg>"
    grep -qF '>time (s)</text>' "$out/curves.svg" || fail "curves.svg is not drawn against time"

    # plot: two runs of different lengths (1 and 2 epochs), against epoch and against step.
    "$mnist" train --device cpu --data "$dir/mnist" --epochs 2 --limit 128 --batch 32 --metrics "$dir/long.jsonl" \
      >"$dir/long.log" 2>&1 || fail "mnist train exited $?"
    expect 0 "plot: wrote $dir/two.svg" "$minidl" plot "$out/cpu.jsonl" "$dir/long.jsonl" -o "$dir/two.svg" \
      --label short --label long
    grep -qF ">short: train_loss</text>" "$dir/two.svg" || fail "no legend entry for the first run"
    grep -qF ">long: test_accuracy</text>" "$dir/two.svg" || fail "no legend entry for the second run"
    expect 0 "plot: wrote" "$minidl" plot "$out/cpu.jsonl" "$dir/long.jsonl" -o "$dir/steps.svg" --x step \
      --y loss,images_per_second
    grep -qF ">long: images_per_second</text>" "$dir/steps.svg" || fail "--y images_per_second not drawn"

    # Bad input: named, non-zero.
    : >"$dir/empty.jsonl"
    expect 1 "empty.jsonl: no metrics in it" "$minidl" plot "$dir/empty.jsonl" -o "$dir/x.svg"
    echo '{"epoch":1,"train_loss":0.5}' >"$dir/old.jsonl"
    expect 1 "old.jsonl: no 'step' in its records" "$minidl" plot "$dir/old.jsonl" -o "$dir/x.svg" --x step
    expect 1 "--y bleu: no run has 'bleu'" "$minidl" plot "$dir/old.jsonl" -o "$dir/x.svg" --y bleu
    expect 1 "cannot write '$dir/no/x.svg'" "$minidl" plot "$dir/old.jsonl" -o "$dir/no/x.svg" --y loss
    # Flag errors exit 2, as mnist's and captcha's do: CLI11's own, and those compare and bench check after it.
    expect 2 "minidl: compare: --device is set by compare itself and cannot follow \`--\` (it runs cuda, then cpu)" \
      "$minidl" compare --out "$dir/o2" -- --device cpu
    expect 2 "nope" "$minidl" compare --example nope
    expect 2 "--bogus" "$minidl" bench --bogus
    expect 2 "minidl: bench --shape conv2d:2x3x7x6,4x3x3x2,s0: stride 's0' must be at least 1" \
      "$minidl" bench --shape conv2d:2x3x7x6,4x3x3x2,s0
    # Every numeric flag through the one validator (examples/flags.h), named with its range; a repeated flag named.
    expect 2 "minidl: --repeat: must be a whole number from 1 to 1000000, got 0" "$minidl" bench --repeat 0
    expect 2 "minidl: --budget: must be a finite number above 0 (seconds), got nan" "$minidl" bench --budget nan
    expect 2 "minidl: --seed: must be a whole number from 0 to 18446744073709551615, got -1" \
      "$minidl" compare --seed -1
    expect 2 "minidl: --epochs: must be a whole number from 1 to 2147483647, got 0" "$minidl" compare --epochs 0
    expect 2 "minidl: --epochs was given twice: give it once" "$minidl" compare --epochs 1 --epochs 2
    expect 2 "MINIDL_PROFILE='maybe' is not valid" env MINIDL_PROFILE=maybe "$minidl" kernels
    # An output never replaces an input (nn/files.h): plot's -o onto one of its metrics files, through a
    # hard link too; compare's --out inside --data; bench's --json onto a file that is not a metrics log.
    cp "$out/cpu.jsonl" "$dir/keep.jsonl"
    ln "$dir/keep.jsonl" "$dir/keep-link.jsonl"
    expect 2 "-o '$dir/keep-link.jsonl' is the same file as METRICS '$dir/keep.jsonl': refusing to overwrite an input" \
      "$minidl" plot "$dir/keep.jsonl" -o "$dir/keep-link.jsonl"
    cmp -s "$out/cpu.jsonl" "$dir/keep.jsonl" || fail "plot -o onto its input changed the input"
    expect 2 "--out '$dir/mnist/o' is inside the folder --data '$dir/mnist'" \
      "$minidl" compare --data "$dir/mnist" --out "$dir/mnist/o"
    printf 'not a metrics log\n' >"$dir/model.ckpt"
    expect 2 "--json" "$minidl" bench --op relu --json "$dir/model.ckpt"
    [ "$(cat "$dir/model.ckpt")" = "not a metrics log" ] || fail "bench --json changed a file that is not a metrics log"
    # A FIFO is refused, not read (reading it would block forever): timeout makes a hang a failure.
    mkfifo "$dir/fifo.jsonl"
    expect 1 "minidl: metrics log: '$dir/fifo.jsonl' is a FIFO (named pipe), not a file" \
      timeout 10 "$minidl" plot "$dir/fifo.jsonl" -o "$dir/x.svg"
    [ -e "$dir/x.svg" ] && fail "plot wrote an SVG from a FIFO"
    expect 1 "minidl: metrics log: '$dir/mnist' is a directory, not a file" "$minidl" plot "$dir/mnist" -o "$dir/x.svg"
    # A run that fails: compare stops with exit 1 and names the run's log.
    expect 1 "run failed (exit status 1); its output is in $dir/o3/" "$minidl" compare --data "$dir/none" \
      --out "$dir/o3"
    ;;

  interrupt)
    out=$dir/out
    # Long enough that it is still training when the signal comes: 1000 epochs.
    "$minidl" compare --data "$dir/mnist" --epochs 1000 --cpu-limit 128 --out "$out" -- --batch 32 --schedule none \
      >"$dir/compare.log" 2>&1 &
    compare_pid=$!
    for _ in $(seq 600); do  # until the first run has started training (at most 120 s)
      grep -q "mnist: model" "$dir/compare.log" && break
      sleep 0.2
    done
    grep -q "mnist: model" "$dir/compare.log" || fail "the first run never started training"
    child_pid=$(sed -n 's/^compare: \[[a-z]*\] pid \([0-9]*\): .*/\1/p' "$dir/compare.log" | head -n 1)
    [ -n "$child_pid" ] || fail "compare did not name the child's pid"
    kill -INT "$compare_pid"
    wait "$compare_pid"
    rc=$?
    [ "$rc" -eq 130 ] || fail "compare exited $rc after SIGINT (wanted 130)"
    kill -0 "$child_pid" 2>/dev/null && fail "the child $child_pid still runs"
    grep -q "^compare: interrupted (Interrupt)" "$dir/compare.log" || fail "no 'interrupted' message"
    [ -e "$out/table.md" ] && fail "a table was written after the interrupt"
    if grep -q "^\[gpu\] " "$dir/compare.log"; then
      [ -e "$out/cpu.log" ] && fail "the CPU run started after the interrupt"
    fi
    ;;

  *) fail "unknown case $case_name" ;;
esac
echo "PASS: $case_name"
