#!/usr/bin/env bash
# tests/captcha_resume_test.sh CAPTCHA_BINARY — `captcha train --resume` continues a run exactly.
#
# A tiny model (dropout on, so the random stream matters) trains 3 epochs on generated captchas straight
# through, and again in three invocations: --stop-after-epochs 1, then --resume twice. The last saved
# files must be byte-identical: weights, batch-norm statistics, Adam's moments and step counts, the
# random-stream position and the metadata. Then a resume with different flags must be refused, naming
# the setting. Exit 77 (ctest: skipped, with the reason) when no captcha font is installed.
set -u
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=2  # the same thread count for every invocation: reductions split the same way

fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log; do echo "--- $f"; tail -n 5 "$f"; done
  exit 1
}

if ! "$bin" gen --out "$dir/probe" --count 1 --dry-run >"$dir/probe.log" 2>&1; then
  echo "SKIPPED: cannot render captchas here:"
  cat "$dir/probe.log"
  exit 77
fi

flags=(train --device cpu --charset 0123456789 --channels 4,4,4,4,4 --convs-per-block 1 --hidden 8
       --batch 4 --epoch-size 8 --epochs 3 --val-count 8 --threads 1 --seed 7)

"$bin" "${flags[@]}" --save "$dir/straight.ckpt" >"$dir/straight.log" 2>&1 || fail "the straight run"
"$bin" "${flags[@]}" --save "$dir/resumed.ckpt" --stop-after-epochs 1 >"$dir/part1.log" 2>&1 || fail "part 1"
grep -q "stopped after 1 epoch" "$dir/part1.log" || fail "part 1 did not stop after one epoch"
"$bin" "${flags[@]}" --resume "$dir/resumed.ckpt" --stop-after-epochs 1 >"$dir/part2.log" 2>&1 || fail "part 2"
grep -q "resuming .* after epoch 1 (step 2)" "$dir/part2.log" || fail "part 2 did not resume after epoch 1"
"$bin" "${flags[@]}" --resume "$dir/resumed.ckpt" >"$dir/part3.log" 2>&1 || fail "part 3"
grep -q "after epoch 2 (step 4)" "$dir/part3.log" || fail "part 3 did not resume after epoch 2"
cmp "$dir/straight.ckpt" "$dir/resumed.ckpt" || fail "the resumed run's file differs from the straight run's"

if "$bin" "${flags[@]}" --lr 0.5 --resume "$dir/resumed.ckpt" >"$dir/other.log" 2>&1; then
  fail "a resume with another --lr was accepted"
fi
grep -q "run.lr: saved" "$dir/other.log" || fail "the refusal does not name the setting"
"$bin" "${flags[@]}" --resume "$dir/resumed.ckpt" >"$dir/done.log" 2>&1 || fail "resuming a finished run"
grep -q "nothing to do" "$dir/done.log" || fail "resuming a finished run did not say there is nothing to do"
echo "OK: stopped and resumed twice, the final file is byte-identical to the uninterrupted run's"
