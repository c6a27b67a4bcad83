#!/usr/bin/env bash
# tests/captcha_folder_test.sh CAPTCHA_BINARY — training on a labelled folder: augmentation (on by default),
# AdamW (--weight-decay, default 0.01 with --data), --save-best and --early-stop.
#
# Two tiny folders of `captcha gen --style lined` captchas (train and validation). A tiny model trains 3
# epochs straight through, and again in three invocations (stop after epoch 1; resume and stop in the
# middle of epoch 2; resume to the end): the final files must be byte-identical, so the augmented batches,
# AdamW's state and the best epoch survive a resume exactly. --save-best's file must hold the best epoch's
# model (by the rule of examples/best_checkpoint.h, recomputed here from the metrics): `captcha eval` on the
# validation folder reads the accuracy the metrics give for that epoch. A run with --early-stop 1 must stop
# exactly when the metrics say one epoch went without a new best (or run to the end if none did; with these
# flags it stops after epoch 3 on the development machine).
# --no-augment must change the training. Exit 77 (ctest: skipped) when no captcha font is installed.
set -u
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=2

fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log; do echo "--- $f"; tail -n 8 "$f"; done
  exit 1
}

if ! "$bin" gen --out "$dir/probe" --count 1 --style lined --dry-run >"$dir/probe.log" 2>&1; then
  echo "SKIPPED: cannot render lined captchas here:"
  cat "$dir/probe.log"
  exit 77
fi
"$bin" gen --out "$dir/train" --count 24 --seed 1 --style lined --charset 0123456789 --width 160 --height 60 \
  --threads 1 >"$dir/gen.log" 2>&1 || fail "gen train"
"$bin" gen --out "$dir/val" --count 8 --seed 2 --style lined --charset 0123456789 --width 160 --height 60 \
  --threads 1 >>"$dir/gen.log" 2>&1 || fail "gen val"

model=(train --device cpu --data "$dir/train" --val-data "$dir/val" --width 160 --height 60 --channels 4,4,4,4,4
       --convs-per-block 1 --hidden 8 --batch 8 --threads 1 --seed 7)
flags=("${model[@]}" --lr 0.02 --epochs 3)

"$bin" "${flags[@]}" --save "$dir/straight.ckpt" --save-best "$dir/best.ckpt" --metrics "$dir/straight.jsonl" \
  >"$dir/straight.log" 2>&1 || fail "the straight run"
grep -q "^captcha: augmentation of training images: all (nn/augment.h)" "$dir/straight.log" ||
  fail "augmentation is not on by default for --data"
grep -q "AdamW lr 0.02 (cosine), weight decay 0.01;" "$dir/straight.log" || fail "no AdamW with decay 0.01 by default"
"$bin" "${flags[@]}" --save "$dir/resumed.ckpt" --save-best "$dir/best2.ckpt" --stop-after-epochs 1 \
  >"$dir/part1.log" 2>&1 || fail "part 1"
"$bin" "${flags[@]}" --resume "$dir/resumed.ckpt" --save-best "$dir/best2.ckpt" --stop-after-steps 1 \
  >"$dir/part2.log" 2>&1 || fail "part 2"
grep -q "stopped as asked (--stop-after-steps 1) in epoch 2 after step 1 of 3" "$dir/part2.log" ||
  fail "part 2 did not stop in the middle of epoch 2"
"$bin" "${flags[@]}" --resume "$dir/resumed.ckpt" --save-best "$dir/best2.ckpt" >"$dir/part3.log" 2>&1 ||
  fail "part 3"
cmp "$dir/straight.ckpt" "$dir/resumed.ckpt" || fail "the resumed run's file differs from the straight run's"
cmp "$dir/best.ckpt" "$dir/best2.ckpt" || fail "the resumed run's best file differs from the straight run's"
if "$bin" "${flags[@]}" --no-augment --resume "$dir/resumed.ckpt" >"$dir/other.log" 2>&1; then
  fail "a resume without the augmentation was accepted"
fi
grep -q -- "--augment: saved all, asked (none)" "$dir/other.log" || fail "the refusal does not name --augment"
echo "OK: an augmented AdamW run on a folder resumes exactly (last and best files identical)"

# The best epoch by the rule of examples/best_checkpoint.h, from the metrics: "epoch accuracy".
best_of() {
  perl -ne 'if (/"epoch":(\d+).*"val_accuracy":([0-9.e+-]+)/) { my ($e, $a) = ($1, $2); my ($l) = /"val_loss":([0-9.e+-]+)/;
    if (!defined $be || $a > $ba || ($a == $ba && $l < $bl)) { ($be, $ba, $bl) = ($e, $a, $l) } }
    END { print "$be $ba\n" }' "$1"
}
read -r best_epoch best_accuracy < <(best_of "$dir/straight.jsonl")
grep -q "^best validation: whole-captcha accuracy .* at epoch $best_epoch " "$dir/straight.log" ||
  fail "the run's best epoch is not epoch $best_epoch of the metrics"
"$bin" eval --model "$dir/best.ckpt" --data "$dir/val" --device cpu --threads 1 >"$dir/eval.log" 2>&1 ||
  fail "eval of the best file"
want=$(perl -e 'printf "%.2f%%", 100 * $ARGV[0]' "$best_accuracy")
grep -q "^whole-captcha accuracy: $want " "$dir/eval.log" ||
  fail "the best file does not read the validation folder as epoch $best_epoch did ($want)"
echo "OK: --save-best holds epoch $best_epoch's model ($want on the validation folder)"

"$bin" "${model[@]}" --epochs 8 --lr 0.05 --early-stop 1 --metrics "$dir/early.jsonl" >"$dir/early.log" 2>&1 ||
  fail "the --early-stop run"
# Where the rule stops: the first epoch that is not a new best (patience 1).
stop_at=$(perl -ne 'if (/"epoch":(\d+).*"val_accuracy":([0-9.e+-]+)/) { my ($e, $a) = ($1, $2); my ($l) = /"val_loss":([0-9.e+-]+)/;
    if (!defined $be || $a > $ba || ($a == $ba && $l < $bl)) { ($be, $ba, $bl) = ($e, $a, $l) } elsif (!defined $s) { $s = $e } }
    END { print defined $s ? $s : "none" }' "$dir/early.jsonl")
epochs_run=$(grep -c '"epoch"' "$dir/early.jsonl")
if [ "$stop_at" = none ] || [ "$stop_at" = 8 ]; then  # the last epoch ends the run anyway
  [ "$epochs_run" -eq 8 ] || fail "no epoch went without a new best, yet the run ended after $epochs_run"
  ! grep -q "^captcha: early stop:" "$dir/early.log" || fail "an early stop without reason"
  echo "OK: --early-stop 1 ran all 8 epochs (no epoch before the last went without a new best)"
else
  [ "$epochs_run" -eq "$stop_at" ] || fail "--early-stop 1 should have stopped after epoch $stop_at, ran $epochs_run"
  grep -q "^captcha: early stop: 1 epochs without a new best (--early-stop 1)" "$dir/early.log" ||
    fail "no early-stop message"
  echo "OK: --early-stop 1 stopped after epoch $stop_at, the first without a new best"
fi

"$bin" "${model[@]}" --epochs 1 --no-augment --save "$dir/plain.ckpt" >"$dir/plain.log" 2>&1 || fail "--no-augment"
grep -q "^captcha: augmentation of training images: none" "$dir/plain.log" || fail "--no-augment not shown"
"$bin" "${model[@]}" --epochs 1 --save "$dir/augmented.ckpt" >"$dir/augmented.log" 2>&1 || fail "one augmented epoch"
! cmp -s "$dir/plain.ckpt" "$dir/augmented.ckpt" || fail "--no-augment trained exactly as the augmented run"
if "$bin" train --device cpu --augment blur --steps 1 >"$dir/gen_aug.log" 2>&1; then
  fail "--augment was accepted without --data"
fi
echo "OK: --no-augment trains on the images as they are; --augment needs --data"
