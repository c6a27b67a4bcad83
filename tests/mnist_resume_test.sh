#!/usr/bin/env bash
# tests/mnist_resume_test.sh CASE MNIST_BINARY — `mnist train` stops and continues exactly
# (examples/run_state.h). MNIST data: tests/mnist_fixture.pl.
#
# Cases (one ctest entry each):
#   resume          3 epochs of 7 steps straight through, and again in three invocations:
#                   --stop-after-epochs 1, then --resume --stop-after-steps 3 (which stops in the middle of
#                   epoch 2), then --resume --save-every 4 to the end: the final files must be byte-identical
#                   (weights, Adam's state, the random-stream position, the metadata) and the metrics equal
#                   but for their timings (the mid-epoch file carries the epoch's running sums). The same with
#                   --schedule step (a per-epoch schedule) stopped in the middle of epoch 2. Then: a resume
#                   with another --lr is refused naming --lr; a finished run has nothing to do;
#                   --stop-after-steps without a file is refused.
#   interrupt       SIGINT while training: exit status 130, a message with the position, the file and the
#                   command that resumes; running that very command finishes the run byte-identical to an
#                   uninterrupted one. SIGTERM: 143, and the file loads. SIGINT without --save: 130, "nothing
#                   was saved". A second SIGINT after the first was noted: 130, no temporary file left, and
#                   the file loads. An ignored SIGINT stays ignored.
#   dist_interrupt  mpirun -np 2 mnist train --distributed: SIGINT to one rank's process stops every rank
#                   after the same step (no rank left waiting), rank 0 saves, mpirun exits 130; 2 processes
#                   resume it to a file byte-identical to the uninterrupted 2-process run's, and 1 process
#                   resumes a copy to the end. Exit 77 (skipped) without mpirun (tests/mpirun.sh).
# A script's background job starts with SIGINT ignored, which the program respects (a shell's Ctrl-C is
# not meant for it); the tests give it the default action back with a small perl wrapper.
set -u
case_name=$1
mnist=$2
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=2  # the same thread count for every run: reductions split the same way

fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log; do [ -e "$f" ] && { echo "--- $f"; tail -n 8 "$f"; }; done
  exit 1
}

# The metrics without their timing fields.
untimed() { perl -pe 's/"(seconds|seconds_since_start|train_seconds|images_per_second)":[^,}]*,?//g' "$1"; }

# A command prefix that runs the rest with SIGINT's default action, whatever this shell gave it (the
# program then has the prefix's pid: `kill $!` reaches it).
with_sigint=(perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV or die "exec $ARGV[0]: $!\n"')

# Waits (at most 120 s) until file $1 holds a line matching $2.
wait_for() {
  for _ in $(seq 600); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  fail "no '$2' in $1 after 120 s"
}

no_temporary_files() { ! ls "$dir" | grep -q "tmp-" || fail "temporary files were left: $(ls "$dir")"; }

case $case_name in
resume)
  perl "$here/mnist_fixture.pl" "$dir/data" 200 40 || fail "writing the fixture"
  flags=(train --data "$dir/data" --device cpu --epochs 3 --batch 32 --seed 5)  # 7 steps per epoch
  "$mnist" "${flags[@]}" --save "$dir/straight.ckpt" --metrics "$dir/straight.jsonl" >"$dir/straight.log" 2>&1 ||
    fail "the straight run"
  "$mnist" "${flags[@]}" --save "$dir/resumed.ckpt" --metrics "$dir/resumed.jsonl" --stop-after-epochs 1 \
    >"$dir/part1.log" 2>&1 || fail "part 1"
  grep -q "stopped as asked (--stop-after-epochs 1) after epoch 1 (step 7); saved" "$dir/part1.log" ||
    fail "part 1 did not stop after epoch 1"
  "$mnist" "${flags[@]}" --resume "$dir/resumed.ckpt" --metrics "$dir/resumed.jsonl" --stop-after-steps 3 \
    >"$dir/part2.log" 2>&1 || fail "part 2"
  grep -q "resuming .* after epoch 1 (step 7)" "$dir/part2.log" || fail "part 2 did not resume after epoch 1"
  grep -q "stopped as asked (--stop-after-steps 3) in epoch 2 after step 3 of 7, step 10 of the run" \
    "$dir/part2.log" || fail "part 2 did not stop in the middle of epoch 2"
  "$mnist" "${flags[@]}" --resume "$dir/resumed.ckpt" --metrics "$dir/resumed.jsonl" --save-every 4 \
    >"$dir/part3.log" 2>&1 || fail "part 3"
  grep -q "resuming .* in epoch 2 after step 3 of 7, step 10 of the run" "$dir/part3.log" ||
    fail "part 3 did not resume in the middle of epoch 2"
  grep -q "saved .* (in epoch 2 after step 5 of 7, step 12 of the run)" "$dir/part3.log" ||
    fail "--save-every 4 did not save at step 12"
  cmp "$dir/straight.ckpt" "$dir/resumed.ckpt" || fail "the resumed run's file differs from the straight run's"
  [ "$(untimed "$dir/straight.jsonl")" = "$(untimed "$dir/resumed.jsonl")" ] ||
    fail "the resumed run's metrics differ from the straight run's"
  [ "$(wc -l <"$dir/resumed.jsonl")" -eq 3 ] || fail "the resumed metrics do not have one line per epoch"
  echo "OK: stopped after an epoch and in the middle of one: the final file and the metrics are the straight run's"

  step=(train --data "$dir/data" --device cpu --epochs 2 --batch 32 --seed 5 --schedule step)
  "$mnist" "${step[@]}" --save "$dir/step_straight.ckpt" >"$dir/step_straight.log" 2>&1 || fail "the --schedule step run"
  "$mnist" "${step[@]}" --save "$dir/step.ckpt" --stop-after-steps 9 >"$dir/step1.log" 2>&1 || fail "step part 1"
  "$mnist" "${step[@]}" --resume "$dir/step.ckpt" >"$dir/step2.log" 2>&1 || fail "step part 2"
  cmp "$dir/step_straight.ckpt" "$dir/step.ckpt" || fail "--schedule step: the resumed file differs"
  echo "OK: --schedule step, resumed in the middle of epoch 2: byte-identical"

  "$mnist" "${flags[@]}" --lr 0.5 --resume "$dir/resumed.ckpt" >"$dir/other.log" 2>&1 &&
    fail "a resume with another --lr was accepted"
  grep -q -- "--lr: saved 0.002.*, asked 0.5" "$dir/other.log" || fail "the refusal does not name the flag"
  "$mnist" "${flags[@]}" --resume "$dir/resumed.ckpt" >"$dir/done.log" 2>&1 || fail "resuming a finished run"
  grep -q "already holds the whole run (after epoch 3 (step 21)): nothing to do" "$dir/done.log" ||
    fail "resuming a finished run did not say there is nothing to do"
  "$mnist" "${flags[@]}" --stop-after-steps 2 >"$dir/nofile.log" 2>&1 && fail "--stop-after-steps without a file"
  grep -q -- "--stop-after-steps needs --save FILE" "$dir/nofile.log" || fail "no message for --stop-after-steps alone"
  echo "OK: another run's flags, a finished run and --stop-after-steps without a file"
  ;;

interrupt)
  perl "$here/mnist_fixture.pl" "$dir/data" 256 40 || fail "writing the fixture"
  flags=(train --data "$dir/data" --device cpu --epochs 4 --batch 16 --seed 5)  # 16 steps per epoch
  "$mnist" "${flags[@]}" --save "$dir/straight.ckpt" >"$dir/straight.log" 2>&1 || fail "the straight run"

  # SIGINT once training has started (the handler is in place before the "mnist: model" line).
  "${with_sigint[@]}" "$mnist" "${flags[@]}" --save "$dir/int.ckpt" >"$dir/int.log" 2>&1 &
  pid=$!
  wait_for "$dir/int.log" "^mnist: model"
  kill -INT $pid
  wait $pid
  rc=$?
  [ $rc -eq 130 ] || fail "exit status $rc after SIGINT (wanted 130)"
  grep -q "SIGINT (Ctrl-C): finishing this step, then saving and stopping" "$dir/int.log" ||
    fail "no notice when the signal came"
  grep -q "^mnist: interrupted by SIGINT \(in epoch [0-9] after step [0-9]* of 16, step [0-9]* of the run\|after epoch [0-9] (step [0-9]*)\); saved $dir/int.ckpt; resume with: " "$dir/int.log" ||
    fail "no message saying where it stopped, what it saved and how to resume"
  resume=$(sed -n 's/^mnist: interrupted by SIGINT .*; resume with: //p' "$dir/int.log")
  eval "$resume" >"$dir/int_resumed.log" 2>&1 || fail "the printed resume command failed: $resume"
  grep -q "^final test accuracy" "$dir/int_resumed.log" || fail "the resumed run did not finish"
  cmp "$dir/straight.ckpt" "$dir/int.ckpt" || fail "the interrupted and resumed run differs from the straight run"
  no_temporary_files
  echo "OK: SIGINT: exit 130, saved; the printed command resumed it to the straight run's bytes"

  "$mnist" "${flags[@]}" --save "$dir/term.ckpt" >"$dir/term.log" 2>&1 &
  pid=$!
  wait_for "$dir/term.log" "^mnist: model"
  kill -TERM $pid
  wait $pid
  rc=$?
  [ $rc -eq 143 ] || fail "exit status $rc after SIGTERM (wanted 143)"
  grep -q "^mnist: interrupted by SIGTERM .*; saved $dir/term.ckpt; resume with: " "$dir/term.log" ||
    fail "no message after SIGTERM"
  "$mnist" eval --model "$dir/term.ckpt" --data "$dir/data" --device cpu >"$dir/term_eval.log" 2>&1 ||
    fail "the file saved after SIGTERM does not load"
  echo "OK: SIGTERM: exit 143, a file that loads"

  "${with_sigint[@]}" "$mnist" "${flags[@]}" >"$dir/nosave.log" 2>&1 &
  pid=$!
  wait_for "$dir/nosave.log" "^mnist: model"
  kill -INT $pid
  wait $pid
  rc=$?
  [ $rc -eq 130 ] || fail "exit status $rc after SIGINT without --save (wanted 130)"
  grep -q "^mnist: interrupted by SIGINT .*; nothing was saved (no --save FILE)" "$dir/nosave.log" ||
    fail "without --save, the message does not say nothing was saved"
  echo "OK: SIGINT without --save: exit 130, nothing saved, and it says so"

  # A second SIGINT once the first was noted acts as if there were no handler: the process ends (at once
  # when it comes before the step ends, which tests/test_run_state.cpp checks without a race; here it may
  # come during the save or after it). Whenever it lands: exit status 130, no temporary file left, and the
  # file, the epoch's or the new one, loads.
  "${with_sigint[@]}" "$mnist" "${flags[@]}" --save "$dir/twice.ckpt" >"$dir/twice.log" 2>&1 &
  pid=$!
  wait_for "$dir/twice.log" "^epoch 2/4"
  kill -INT $pid
  for _ in $(seq 1000); do grep -q "finishing this step" "$dir/twice.log" && break; sleep 0.01; done
  kill -INT $pid 2>/dev/null
  wait $pid
  rc=$?
  [ $rc -eq 130 ] || fail "exit status $rc after two SIGINTs (wanted 130)"
  "$mnist" eval --model "$dir/twice.ckpt" --data "$dir/data" --device cpu >"$dir/twice_eval.log" 2>&1 ||
    fail "the file saved before two SIGINTs does not load"
  no_temporary_files
  echo "OK: a second SIGINT ends the process; the file is whole and nothing is left behind"

  # Started with SIGINT ignored (as this script's background jobs are): the signal changes nothing.
  short=(train --data "$dir/data" --device cpu --epochs 1 --batch 64 --seed 5)
  "$mnist" "${short[@]}" >"$dir/ignored.log" 2>&1 &
  pid=$!
  wait_for "$dir/ignored.log" "^mnist: model"
  kill -INT $pid
  wait $pid
  rc=$?
  [ $rc -eq 0 ] || fail "a run started with SIGINT ignored exited $rc after SIGINT"
  grep -q "^final test accuracy" "$dir/ignored.log" || fail "a run started with SIGINT ignored did not finish"
  echo "OK: an ignored SIGINT stays ignored"
  ;;

dist_interrupt)
  bash "$here/mpirun.sh" 1 true >"$dir/probe.log" 2>&1
  rc=$?
  if [ $rc -eq 77 ]; then cat "$dir/probe.log"; exit 77; fi
  [ $rc -eq 0 ] || fail "mpirun cannot start a process here: $(cat "$dir/probe.log")"
  export OMP_NUM_THREADS=1
  perl "$here/mnist_fixture.pl" "$dir/data" 300 50 || fail "writing the fixture"
  flags=(train --data "$dir/data" --device cpu --epochs 3 --batch 32 --seed 3)  # 10 steps per epoch
  two() { bash "$here/mpirun.sh" 2 "$mnist" "${flags[@]}" --distributed "$@"; }

  two --save "$dir/straight.ckpt" >"$dir/straight.log" 2>&1 || fail "the straight 2-process run"
  # Not through two(): $! must be mpirun itself (mpirun.sh execs it), the parent of the ranks.
  bash "$here/mpirun.sh" 2 "$mnist" "${flags[@]}" --distributed --save "$dir/int.ckpt" >"$dir/int.log" 2>&1 &
  mpirun_pid=$!
  # Both ranks are past their handler's installation after a step. Under mpirun the output is a
  # terminal's: progress lines are redrawn with \r, so no pattern here starts with ^.
  wait_for "$dir/int.log" "epoch 1/3 "
  ranks=$(pgrep -P $mpirun_pid | sort -n)
  [ "$(echo "$ranks" | wc -w)" -eq 2 ] || fail "expected 2 rank processes under mpirun, found: $ranks"
  kill -INT "$(echo "$ranks" | tail -n 1)"  # one rank only: the other must stop with it
  wait $mpirun_pid
  rc=$?
  [ $rc -eq 130 ] || fail "mpirun exited $rc after SIGINT to one rank (wanted 130)"
  grep -q "mnist: interrupted by SIGINT .*; saved $dir/int.ckpt; resume with: mpirun -np 2 " "$dir/int.log" ||
    fail "rank 0 did not say where the job stopped and how to resume it"
  cp "$dir/int.ckpt" "$dir/copy.ckpt"
  two --resume "$dir/int.ckpt" >"$dir/resumed.log" 2>&1 || fail "resuming with 2 processes"
  cmp "$dir/straight.ckpt" "$dir/int.ckpt" || fail "the interrupted and resumed job's file differs from the straight job's"
  echo "OK: SIGINT to one rank stopped the job (exit 130), 2 processes resumed it to the straight job's bytes"
  "$mnist" "${flags[@]}" --resume "$dir/copy.ckpt" >"$dir/alone.log" 2>&1 || fail "resuming in one process"
  grep -q "^final test accuracy" "$dir/alone.log" || fail "one process did not finish the job's run"
  echo "OK: one process resumed the job's file to the end"
  ;;

*)
  echo "unknown case '$case_name'"
  exit 2
  ;;
esac
echo "PASS: $case_name"
