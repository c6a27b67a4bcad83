#!/usr/bin/env bash
# tests/captcha_lstm_test.sh CAPTCHA_BINARY — `captcha train --rnn lstm` end to end on the CPU (a smoke
# test of captcha_break's recipe at toy size): a tiny LSTM model trains two epochs in two invocations
# (--stop-after-epochs 1, then --resume), says it has an LSTM, records "rnn": "lstm" in its metrics, and
# its file is read back by `captcha eval` and `captcha predict`; the same file resumed as a GRU run is
# refused. Exit 77 (ctest: skipped, with the reason) when no captcha font is installed.
set -u
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=2

fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log; do echo "--- $f"; tail -n 5 "$f"; done
  exit 1
}

if ! "$bin" gen --out "$dir/images" --count 2 --seed 5 --charset 0123456789 >"$dir/gen.log" 2>&1; then
  echo "SKIPPED: cannot render captchas here:"
  cat "$dir/gen.log"
  exit 77
fi

flags=(train --device cpu --rnn lstm --charset 0123456789 --channels 4,4,4,4,4 --convs-per-block 1 --hidden 8
       --batch 4 --epoch-size 8 --epochs 2 --val-count 8 --threads 1 --seed 7 --metrics "$dir/train.jsonl")

"$bin" "${flags[@]}" --save "$dir/lstm.ckpt" --stop-after-epochs 1 >"$dir/part1.log" 2>&1 || fail "part 1"
grep -q "time steps, LSTM auto: fused" "$dir/part1.log" || fail "the run does not say it trains an LSTM (fused on the CPU)"
grep -q '"rnn":"lstm"' "$dir/train.jsonl" || fail "the metrics do not record the LSTM"
"$bin" "${flags[@]}" --resume "$dir/lstm.ckpt" >"$dir/part2.log" 2>&1 || fail "part 2 (the resume)"
grep -q "resuming .* after epoch 1 (step 2)" "$dir/part2.log" || fail "part 2 did not resume after epoch 1"

"$bin" eval --model "$dir/lstm.ckpt" --count 8 --threads 1 --device cpu >"$dir/eval.log" 2>&1 || fail "eval"
grep -q "whole-captcha accuracy" "$dir/eval.log" || fail "eval printed no accuracy"
"$bin" predict --model "$dir/lstm.ckpt" --device cpu "$dir"/images/*.png >"$dir/predict.log" 2>&1 || fail "predict"
[ "$(grep -c '\.png: ' "$dir/predict.log")" -eq 2 ] || fail "predict did not read both images"

gru_flags=("${flags[@]/lstm/gru}")
if "$bin" "${gru_flags[@]}" --resume "$dir/lstm.ckpt" >"$dir/as_gru.log" 2>&1; then
  fail "an LSTM run was resumed as a GRU run"
fi
echo "OK: an LSTM captcha model trained, stopped, resumed, evaluated and read images on the CPU"
