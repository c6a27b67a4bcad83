#!/usr/bin/env bash
# tests/captcha_resume_test.sh CAPTCHA_BINARY — `captcha train --resume` continues a run exactly.
#
# A tiny model (dropout on, so the random stream matters) trains 3 epochs of 2 steps on generated captchas
# straight through, and again in three invocations: --stop-after-epochs 1; then --resume with
# --stop-after-steps 1, which stops in the middle of epoch 2 (step 3); then --resume with --save-every 1
# to the end. The last saved files must be byte-identical: weights, batch-norm statistics, Adam's moments
# and step counts, the random-stream position and the metadata (the validation summary of epoch 2 too,
# which the mid-epoch file carries the sums for: the metrics must match). Then a resume with different
# flags must be refused, naming the setting. Last, SIGINT during a longer run: exit status 130, a saved
# file and the command that resumes it; the file resumes. Exit 77 (ctest: skipped, with the reason) when
# no captcha font is installed.
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

model=(train --device cpu --charset 0123456789 --channels 4,4,4,4,4 --convs-per-block 1 --hidden 8
       --batch 4 --epoch-size 8 --val-count 8 --threads 1 --seed 7)
flags=("${model[@]}" --epochs 3)

"$bin" "${flags[@]}" --save "$dir/straight.ckpt" --metrics "$dir/straight.jsonl" >"$dir/straight.log" 2>&1 ||
  fail "the straight run"
"$bin" "${flags[@]}" --save "$dir/resumed.ckpt" --metrics "$dir/resumed.jsonl" --stop-after-epochs 1 \
  >"$dir/part1.log" 2>&1 || fail "part 1"
grep -q "stopped as asked (--stop-after-epochs 1) after epoch 1 (step 2); saved" "$dir/part1.log" ||
  fail "part 1 did not stop after one epoch"
"$bin" "${flags[@]}" --resume "$dir/resumed.ckpt" --metrics "$dir/resumed.jsonl" --stop-after-steps 1 \
  >"$dir/part2.log" 2>&1 || fail "part 2"
grep -q "resuming .* after epoch 1 (step 2)" "$dir/part2.log" || fail "part 2 did not resume after epoch 1"
grep -q "stopped as asked (--stop-after-steps 1) in epoch 2 after step 1 of 2, step 3 of the run" \
  "$dir/part2.log" || fail "part 2 did not stop in the middle of epoch 2"
"$bin" "${flags[@]}" --resume "$dir/resumed.ckpt" --metrics "$dir/resumed.jsonl" --save-every 1 \
  >"$dir/part3.log" 2>&1 || fail "part 3"
grep -q "resuming .* in epoch 2 after step 1 of 2, step 3 of the run" "$dir/part3.log" ||
  fail "part 3 did not resume in the middle of epoch 2"
grep -q "saved .* (in epoch 3 after step 1 of 2, step 5 of the run)" "$dir/part3.log" ||
  fail "--save-every 1 did not save in the middle of epoch 3"
cmp "$dir/straight.ckpt" "$dir/resumed.ckpt" || fail "the resumed run's file differs from the straight run's"
untimed() { perl -pe 's/"(seconds|seconds_since_start|train_seconds|images_per_second)":[^,}]*,?//g' "$1"; }
[ "$(untimed "$dir/straight.jsonl")" = "$(untimed "$dir/resumed.jsonl")" ] ||
  fail "the resumed run's metrics differ from the straight run's"

if "$bin" "${flags[@]}" --lr 0.5 --resume "$dir/resumed.ckpt" >"$dir/other.log" 2>&1; then
  fail "a resume with another --lr was accepted"
fi
grep -q -- "--lr: saved" "$dir/other.log" || fail "the refusal does not name the flag"
"$bin" "${flags[@]}" --resume "$dir/resumed.ckpt" >"$dir/done.log" 2>&1 || fail "resuming a finished run"
grep -q "nothing to do" "$dir/done.log" || fail "resuming a finished run did not say there is nothing to do"
echo "OK: stopped after an epoch and in the middle of one, resumed twice: the final file and the metrics are the uninterrupted run's"

# Ctrl-C (SIGINT, given its default action back: this script's background jobs start with it ignored):
# the step finishes, the file is saved, exit status 130 and the command that resumes; which resumes.
perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV or die' "$bin" "${model[@]}" --epochs 40 --save "$dir/int.ckpt" \
  >"$dir/int.log" 2>&1 &
pid=$!
for _ in $(seq 600); do grep -q "^captcha: model" "$dir/int.log" && break; sleep 0.2; done
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] || fail "captcha train exited $rc after SIGINT (wanted 130)"
grep -q "^captcha: interrupted by SIGINT .*; saved $dir/int.ckpt; resume with: .* --resume $dir/int.ckpt" \
  "$dir/int.log" || fail "no message saying what was saved and how to resume"
"$bin" "${model[@]}" --epochs 40 --resume "$dir/int.ckpt" --stop-after-steps 1 >"$dir/int2.log" 2>&1 ||
  fail "resuming after SIGINT"
grep -q "^captcha: resuming $dir/int.ckpt " "$dir/int2.log" || fail "the interrupted run did not resume"
echo "OK: SIGINT saved a file that resumes"
