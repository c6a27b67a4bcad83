#!/usr/bin/env bash
# tests/dist_captcha_resume_test.sh CAPTCHA_BINARY — checkpoints of `captcha train --distributed` resume.
#
# A tiny model (batch norm and dropout on) trains 3 epochs of generated captchas over 2 processes (Open MPI,
# CPU; --batch 4 = 2 x 2): straight through, and stopped after epoch 1 then resumed by 2 processes: the
# final files must be byte-identical (rank 0 saved weights, averaged batch-norm statistics, Adam state and
# the random-stream position, which does not depend on the number of processes). A file saved by the
# 2-process job after epoch 1 must resume in one process (without --distributed) from epoch 2, and a
# resume by 3 processes (3 does not divide --batch 4) must be refused. Exit 77 (skipped) without mpirun
# (tests/mpirun.sh) or without a captcha font.
set -u
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=1

fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log; do echo "--- $f"; tail -n 6 "$f"; done
  exit 1
}

bash "$here/mpirun.sh" 1 true >"$dir/probe.log" 2>&1
rc=$?
if [ $rc -eq 77 ]; then cat "$dir/probe.log"; exit 77; fi
[ $rc -eq 0 ] || fail "mpirun cannot start a process here: $(cat "$dir/probe.log")"
if ! "$bin" gen --out "$dir/probe" --count 1 --dry-run >"$dir/font.log" 2>&1; then
  echo "SKIPPED: cannot render captchas here:"
  cat "$dir/font.log"
  exit 77
fi

flags=(train --device cpu --charset 0123456789 --channels 4,4,4,4,4 --convs-per-block 1 --hidden 8
       --batch 4 --epoch-size 8 --epochs 3 --val-count 8 --threads 1 --seed 7)
two() { bash "$here/mpirun.sh" 2 "$bin" "${flags[@]}" --distributed "$@"; }

two --save "$dir/straight.ckpt" >"$dir/straight.log" 2>&1 || fail "the straight 2-process run"
grep -q "distributed: 2 processes" "$dir/straight.log" || fail "the straight run was not distributed"
two --save "$dir/resumed.ckpt" --stop-after-epochs 1 >"$dir/part1.log" 2>&1 || fail "part 1"
grep -q "stopped as asked (--stop-after-epochs 1) after epoch 1" "$dir/part1.log" || fail "part 1 did not stop after one epoch"
cp "$dir/resumed.ckpt" "$dir/epoch1.ckpt"
two --resume "$dir/resumed.ckpt" >"$dir/part2.log" 2>&1 || fail "part 2"
grep -q "resuming .* after epoch 1 (step 2)" "$dir/part2.log" || fail "part 2 did not resume after epoch 1"
cmp "$dir/straight.ckpt" "$dir/resumed.ckpt" || fail "the resumed 2-process file differs from the straight one"
echo "OK: a 2-process run stopped and resumed by 2 processes ends byte-identical to the straight run"

"$bin" "${flags[@]}" --resume "$dir/epoch1.ckpt" >"$dir/alone.log" 2>&1 || fail "resuming in one process"
grep -q "resuming .* after epoch 1 (step 2)" "$dir/alone.log" || fail "one process did not resume after epoch 1"
grep -q "epoch 3/3" "$dir/alone.log" || fail "one process did not finish the run"
"$bin" eval --model "$dir/epoch1.ckpt" --device cpu --count 8 --threads 1 >"$dir/eval.log" 2>&1 ||
  fail "captcha eval of the resumed file"
echo "OK: the 2-process file resumed in one process and ran to the end"

bash "$here/mpirun.sh" 3 "$bin" "${flags[@]}" --distributed --resume "$dir/straight.ckpt" >"$dir/three.log" 2>&1 &&
  fail "3 processes were accepted for --batch 4"
grep -q "cannot be split evenly over 3 processes" "$dir/three.log" || fail "no clear message for 3 processes"
echo "OK: 3 processes (not a divisor of --batch 4) refused"
