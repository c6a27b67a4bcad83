#!/usr/bin/env bash
# tests/run_continue_test.sh CASE BINARY — going on with a run and knowing how long it has left
# (examples/run_start.h, examples/run_estimate.h, examples/best_checkpoint.h), on `mnist train` with the
# MNIST fixture (tests/mnist_fixture.pl: 200 training images, 40 test, 7 steps of 32 an epoch), and on
# `captcha train` with a tiny model (case captcha; BINARY is then captcha). No check depends on how fast the
# machine is.
#
# Cases (one ctest entry each):
#   estimate    a 2-epoch run prints the whole run's time left in its progress lines ("ETA epoch M:SS, run
#               ~M:SS") and after epoch 1 ("run ~M:SS left"), not after the last epoch.
#   extend      a finished 2-epoch run resumed with --epochs 3: the log says the run is extended and gives
#               the lr, which is the 3-epoch schedule's at step 14 (a fresh 3-epoch run's lr after epoch 2):
#               the schedule is recomputed; only epoch 3 is trained, its metrics say step 21, and its
#               train loss is below a fresh run's first epoch (the weights were loaded). --epochs 1 is
#               refused naming --epochs; another --lr is refused naming --lr.
#   init_from   --init-from the 2-epoch file, 1 epoch: the log says so; the metrics say step 7 and the lr
#               of a fresh 1-epoch run (a new schedule and position), and the train loss is below the fresh
#               run's (the weights were loaded); another --model is refused naming --model; --init-from
#               with --resume is refused.
#   best        --save-best and --early-stop: with an lr too small to change a float32 weight, epoch 2 ties
#               epoch 1, so --early-stop 1 ends the run after epoch 2, the best file holds epoch 1, and
#               its evaluation is the run's.
#   captcha     (exit 77 without a captcha font) the run's time left after epoch 1; a 2-epoch run resumed
#               with --epochs 3 at the 3-epoch cosine schedule's lr; --rnn lstm refused naming --rnn by
#               --resume and by --init-from; --init-from's log line; --recipe cpu's settings (the slim model
#               of 248,091 parameters); and a CPU run of 10,000,000 epochs (20 million steps: more than an
#               hour at any speed a step can have) warning after 5 steps with its projected time and
#               --recipe cpu.
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

# field FILE LINE KEY: the value of "KEY" in line LINE of a metrics file (JSON Lines).
field() { sed -n "$2p" "$1" | perl -ne 'print $1 if /"'"$3"'":([^,}]*)/'; }
# less A B: A < B as numbers.
less() { perl -e 'exit($ARGV[0] < $ARGV[1] ? 0 : 1)' "$1" "$2"; }
# close A B: A and B agree to 5 significant digits (a number printed with 6).
close() { perl -e 'exit(abs($ARGV[0] - $ARGV[1]) <= 1e-5 * abs($ARGV[1]) ? 0 : 1)' "$1" "$2"; }

if [ "$case_name" != captcha ]; then
  perl "$here/mnist_fixture.pl" "$dir/data" 200 40 || fail "writing the fixture"
fi
flags=(train --data "$dir/data" --device cpu --batch 32 --seed 5)

case $case_name in
estimate)
  "$mnist" "${flags[@]}" --epochs 2 >"$dir/run.log" 2>&1 || fail "the 2-epoch run"
  grep -q "^epoch 1/2 .*ETA epoch [0-9]*:[0-9][0-9], run ~[0-9:]*$" "$dir/run.log" ||
    fail "no whole-run figure in epoch 1's progress lines"
  grep -q "^epoch 1/2: .* images/s, run ~[0-9]*:[0-9][0-9] left$" "$dir/run.log" ||
    fail "epoch 1's summary does not give the run's time left"
  grep "^epoch 2/2: " "$dir/run.log" | grep -q "left" && fail "the last epoch's summary gives a time left"
  echo "OK: the progress lines and epoch 1's summary give the whole run's time left"
  ;;

extend)
  "$mnist" "${flags[@]}" --epochs 3 --metrics "$dir/fresh3.jsonl" >"$dir/fresh3.log" 2>&1 || fail "the fresh 3-epoch run"
  "$mnist" "${flags[@]}" --epochs 2 --save "$dir/a.ckpt" --metrics "$dir/a.jsonl" >"$dir/a.log" 2>&1 ||
    fail "the 2-epoch run"
  "$mnist" "${flags[@]}" --epochs 1 --resume "$dir/a.ckpt" >"$dir/short.log" 2>&1 && fail "--epochs 1 was accepted"
  grep -q -- "the saved run has done 2 epoch(s), 14 steps, more than this run's --epochs 1 (7 steps)" "$dir/short.log" ||
    fail "the refusal of --epochs 1 does not name --epochs and what is done"
  "$mnist" "${flags[@]}" --epochs 3 --lr 0.5 --resume "$dir/a.ckpt" >"$dir/lr.log" 2>&1 && fail "--lr 0.5 was accepted"
  grep -q -- "(--lr: saved 0.002, asked 0.5)" "$dir/lr.log" || fail "the refusal does not name --lr"

  "$mnist" "${flags[@]}" --epochs 3 --resume "$dir/a.ckpt" --metrics "$dir/a.jsonl" >"$dir/ext.log" 2>&1 ||
    fail "resuming with --epochs 3"
  grep -q "extending the run from 2 epoch(s) (14 steps) to 3 (21 steps): the learning-rate schedule is recomputed for 21 steps; lr now " \
    "$dir/ext.log" || fail "the log does not say the run is extended"
  lr_now=$(sed -n 's/.*; lr now \([0-9.e+-]*\)$/\1/p' "$dir/ext.log")
  close "$lr_now" "$(field "$dir/fresh3.jsonl" 2 lr)" ||
    fail "lr now $lr_now is not the 3-epoch schedule's at step 14 ($(field "$dir/fresh3.jsonl" 2 lr))"
  grep -q "^epoch [12]/3:" "$dir/ext.log" && fail "the extended run trained epoch 1 or 2 again"
  grep -q "^epoch 3/3:" "$dir/ext.log" || fail "the extended run did not train epoch 3"
  [ "$(wc -l <"$dir/a.jsonl")" -eq 3 ] || fail "the metrics do not have one line per epoch"
  [ "$(field "$dir/a.jsonl" 3 epoch)" = 3 ] && [ "$(field "$dir/a.jsonl" 3 step)" = 21 ] ||
    fail "the extended epoch's metrics do not say epoch 3, step 21"
  less "$(field "$dir/a.jsonl" 3 train_loss)" "$(field "$dir/fresh3.jsonl" 1 train_loss)" ||
    fail "epoch 3's train loss is not below a fresh first epoch's: the weights were not loaded"
  "$mnist" "${flags[@]}" --epochs 3 --resume "$dir/a.ckpt" >"$dir/done.log" 2>&1 || fail "resuming the extended run"
  grep -q "already holds the whole run (after epoch 3 (step 21)" "$dir/done.log" || fail "the extended file is not 3 epochs"
  echo "OK: a finished 2-epoch run went on to 3 epochs with the recomputed schedule; fewer epochs and another --lr refused"
  ;;

init_from)
  "$mnist" "${flags[@]}" --epochs 2 --save "$dir/a.ckpt" >"$dir/a.log" 2>&1 || fail "the 2-epoch run"
  "$mnist" "${flags[@]}" --epochs 1 --metrics "$dir/fresh.jsonl" >"$dir/fresh.log" 2>&1 || fail "the fresh run"
  "$mnist" "${flags[@]}" --epochs 1 --init-from "$dir/a.ckpt" --save "$dir/b.ckpt" --metrics "$dir/b.jsonl" \
    >"$dir/b.log" 2>&1 || fail "--init-from"
  grep -q "^mnist: --init-from $dir/a.ckpt: the weights after epoch 2 of a run on .*; a new optimizer, learning-rate schedule and position (step 0)" \
    "$dir/b.log" || fail "the log does not say what --init-from took"
  [ "$(field "$dir/b.jsonl" 1 step)" = 7 ] || fail "the run from --init-from did not start at step 0"
  [ "$(field "$dir/b.jsonl" 1 lr)" = "$(field "$dir/fresh.jsonl" 1 lr)" ] ||
    fail "the run from --init-from does not have a fresh run's schedule"
  less "$(field "$dir/b.jsonl" 1 train_loss)" "$(field "$dir/fresh.jsonl" 1 train_loss)" ||
    fail "the train loss is not below a fresh run's: the weights were not loaded"
  "$mnist" "${flags[@]}" --epochs 1 --init-from "$dir/a.ckpt" --model mnist_cnn_bn >"$dir/model.log" 2>&1 &&
    fail "--init-from with another --model was accepted"
  grep -q -- "(--model: saved mnist_cnn, asked mnist_cnn_bn)" "$dir/model.log" || fail "the refusal does not name --model"
  "$mnist" "${flags[@]}" --epochs 1 --init-from "$dir/a.ckpt" --resume "$dir/b.ckpt" >"$dir/both.log" 2>&1 &&
    fail "--init-from with --resume was accepted"
  grep -q "give one of them" "$dir/both.log" || fail "no message for --init-from with --resume"
  echo "OK: --init-from took the weights with a new schedule and position; another --model and --resume refused"
  ;;

best)
  "$mnist" "${flags[@]}" --epochs 4 --lr 1e-12 --schedule none --early-stop 1 --save-best "$dir/best.ckpt" \
    --save "$dir/last.ckpt" >"$dir/run.log" 2>&1 || fail "the run with --early-stop"
  grep -q "^epoch 1/4: .*accuracy [0-9.]*% (best)" "$dir/run.log" || fail "epoch 1 is not marked best"
  grep -q "^epoch 2/4: .*(best [0-9.]*% at epoch 1)" "$dir/run.log" || fail "epoch 2 does not point to the best"
  grep -q "^mnist: early stop: 1 epochs without a new best (--early-stop 1)" "$dir/run.log" || fail "no early stop"
  grep -q "^epoch 3/4" "$dir/run.log" && fail "epoch 3 ran after the early stop"
  "$mnist" eval --model "$dir/best.ckpt" --device cpu --data "$dir/data" >"$dir/eval.log" 2>&1 || fail "eval of the best file"
  acc=$(sed -n 's/^epoch 1\/4: .* test loss [0-9.]*, accuracy \([0-9.]*%\) (best).*/\1/p' "$dir/run.log")
  grep -q "^test accuracy: $acc " "$dir/eval.log" || fail "the best file's accuracy is not epoch 1's ($acc)"
  echo "OK: --save-best kept epoch 1, --early-stop 1 ended the run after epoch 2"
  ;;

captcha)
  captcha=$mnist
  if ! "$captcha" gen --out "$dir/probe" --count 1 --dry-run >"$dir/probe.log" 2>&1; then
    echo "SKIPPED: cannot render captchas here:"
    cat "$dir/probe.log"
    exit 77
  fi
  model=(train --device cpu --charset 0123456789 --channels 4,4,4,4,4 --convs-per-block 1 --hidden 8
         --batch 4 --epoch-size 8 --val-count 8 --threads 1 --seed 7)  # 2 steps an epoch
  "$captcha" "${model[@]}" --epochs 3 --metrics "$dir/fresh3.jsonl" >"$dir/fresh3.log" 2>&1 || fail "the 3-epoch run"
  grep -q "^epoch 1/3 (step 2): .* images/s, run ~[0-9]*:[0-9][0-9] left$" "$dir/fresh3.log" ||
    fail "epoch 1's summary does not give the run's time left"
  "$captcha" "${model[@]}" --epochs 2 --save "$dir/a.ckpt" >"$dir/a.log" 2>&1 || fail "the 2-epoch run"
  "$captcha" "${model[@]}" --epochs 3 --resume "$dir/a.ckpt" >"$dir/ext.log" 2>&1 || fail "resuming with --epochs 3"
  grep -q "extending the run from 2 epoch(s) (4 steps) to 3 (6 steps): the learning-rate schedule is recomputed for 6 steps; lr now " \
    "$dir/ext.log" || fail "the log does not say the run is extended"
  lr_now=$(sed -n 's/.*; lr now \([0-9.e+-]*\)$/\1/p' "$dir/ext.log")
  close "$lr_now" "$(field "$dir/fresh3.jsonl" 2 lr)" ||
    fail "lr now $lr_now is not the 3-epoch schedule's at step 4 ($(field "$dir/fresh3.jsonl" 2 lr))"
  grep -q "^epoch 3/3 (step 6):" "$dir/ext.log" || fail "the extended run did not train epoch 3"
  for how in --resume --init-from; do
    "$captcha" "${model[@]}" --epochs 3 --rnn lstm $how "$dir/a.ckpt" >"$dir/lstm.log" 2>&1 && fail "$how: --rnn lstm accepted"
    grep -q -- "(--rnn: saved gru, asked lstm)" "$dir/lstm.log" || fail "$how: the refusal does not name --rnn"
  done
  "$captcha" "${model[@]}" --epochs 1 --init-from "$dir/a.ckpt" >"$dir/init.log" 2>&1 || fail "--init-from"
  grep -q "^captcha: --init-from $dir/a.ckpt: the weights after epoch 3 .*position (step 0)" "$dir/init.log" ||
    fail "the log does not say what --init-from took"
  "$captcha" train --device cpu --recipe cpu --threads 1 --stop-after-steps 1 --save "$dir/r.ckpt" >"$dir/recipe.log" 2>&1 ||
    fail "--recipe cpu"
  grep -q "^captcha: --recipe cpu: --charset 0123456789 --channels 16,32,64,64,64 --convs-per-block 1 --hidden 64 --batch 32 --lr 0.005 --dropout 0.25 --epochs 3 --epoch-size 6400 --val-count 1000$" \
    "$dir/recipe.log" || fail "--recipe cpu does not list its settings"
  grep -q "248091 parameters.* 3 epoch(s) of 200 batches of 32, 600 steps" "$dir/recipe.log" ||
    fail "--recipe cpu does not build the slim model for 600 steps"
  "$captcha" "${model[@]}" --epochs 10000000 --stop-after-steps 6 --save "$dir/long.ckpt" >"$dir/long.log" 2>&1 ||
    fail "the long run"
  grep -q "^captcha: warning: on this CPU the run needs about [0-9:]* more (10000000 epoch(s) of 2 steps, .* a step); .*captcha train --recipe cpu$" \
    "$dir/long.log" || fail "no warning for a run of 10,000,000 epochs on the CPU"
  grep -q "warning: on this CPU" "$dir/fresh3.log" && fail "a short run warned"
  echo "OK: captcha: time left, a run extended, --rnn refused by name, --init-from, --recipe cpu, the CPU warning"
  ;;

*)
  echo "unknown case $case_name"
  exit 2
  ;;
esac
echo PASS
