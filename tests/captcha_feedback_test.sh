#!/usr/bin/env bash
# tests/captcha_feedback_test.sh CAPTCHA_BINARY MINIDL_BINARY — what `captcha` tells a user about its
# readings and its run (issue 27): a tiny model that cannot learn in 4 epochs stays at 0% and gets the
# blank-plateau hint once (after epoch 3); --metrics-every 1 writes a per-step record per step, with
# seconds_since_start in every record, and `minidl plot --x time` draws them (SVG, and PNG when cairo is
# built in); `captcha eval --show-mistakes 2` says it cut the list; `captcha predict` prints the text's
# probability (and the weakest character when it reads any). Exit 77 (ctest: skipped) without a font.
set -u
bin=$1
minidl=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=2

fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log; do echo "--- $f"; tail -n 8 "$f"; done
  exit 1
}

if ! "$bin" gen --out "$dir/images" --count 2 --seed 5 --charset 0123456789 >"$dir/gen.log" 2>&1; then
  echo "SKIPPED: cannot render captchas here:"
  cat "$dir/gen.log"
  exit 77
fi

"$bin" train --device cpu --charset 0123456789 --channels 4,4,4,4,4 --convs-per-block 1 --hidden 8 --batch 4 \
  --epoch-size 8 --epochs 4 --val-count 8 --threads 1 --seed 7 --metrics "$dir/train.jsonl" --metrics-every 1 \
  --save "$dir/tiny.ckpt" >"$dir/train.log" 2>&1 || fail "train"
grep -q "whole-captcha accuracy 0.00%" "$dir/train.log" || fail "the tiny model read a captcha right: no plateau to test"
[ "$(grep -c "captcha: hint: validation has read no captcha right for 3 epochs" "$dir/train.log")" -eq 1 ] ||
  fail "no hint, or more than one, after 4 epochs at 0%"
hint_line=$(grep -n "captcha: hint:" "$dir/train.log" | cut -d: -f1)
epoch3_line=$(grep -n "^epoch 3/4" "$dir/train.log" | tail -n 1 | cut -d: -f1)
[ "$hint_line" -gt "$epoch3_line" ] || fail "the hint came before epoch 3 ended"
grep -q "blank plateau" "$dir/train.log" || fail "the hint does not name the blank plateau"

# 4 epochs of 2 steps: 8 per-step records and 4 per-epoch ones, every one with seconds_since_start.
[ "$(grep -c '"every_steps":1' "$dir/train.jsonl")" -eq 8 ] || fail "not 8 per-step records"
[ "$(wc -l <"$dir/train.jsonl")" -eq 12 ] || fail "not 12 records"
[ "$(grep '"every_steps":1' "$dir/train.jsonl" | grep -c '"loss":')" -eq 8 ] || fail "a per-step record without its loss"
grep -q '"epoch":2.5,' "$dir/train.jsonl" || fail "no per-step record half-way through epoch 3 (epoch 2.5)"
[ "$(grep -c '"seconds_since_start"' "$dir/train.jsonl")" -eq 12 ] || fail "a record without seconds_since_start"
"$minidl" plot "$dir/train.jsonl" -o "$dir/t.svg" --x time >"$dir/plot.log" 2>&1 || fail "plot --x time"
grep -qF '>time (s)</text>' "$dir/t.svg" || fail "no time axis"
if "$minidl" plot "$dir/train.jsonl" -o "$dir/t.png" --x time >"$dir/png.log" 2>&1; then
  [ "$(head -c 8 "$dir/t.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "t.png is not a PNG"
else
  grep -q "libcairo2-dev" "$dir/png.log" || fail "PNG refused without naming the package"
fi

"$bin" eval --model "$dir/tiny.ckpt" --count 8 --threads 1 --device cpu --show-mistakes 2 >"$dir/eval.log" 2>&1 ||
  fail "eval"
[ "$(grep -c "  mistake: " "$dir/eval.log")" -eq 2 ] || fail "eval listed other than 2 mistakes"
grep -q "showing 2 of 8 mistakes (--show-mistakes N for more)" "$dir/eval.log" || fail "eval did not say it cut the list"

"$bin" predict --model "$dir/tiny.ckpt" --device cpu "$dir"/images/*.png >"$dir/predict.log" 2>&1 || fail "predict"
[ "$(grep -cE '\.png: .+  p=([01]\.[0-9][0-9]|[0-9]e-[0-9]+)' "$dir/predict.log")" -eq 2 ] || fail "predict printed no probability"
if grep -v "(nothing)" "$dir/predict.log" | grep -q '\.png: '; then
  grep -qE "weakest: '.' [01]\.[0-9][0-9]" "$dir/predict.log" || fail "a reading without its weakest character"
fi
echo "PASS: the plateau hint once, per-step metrics plotted against time, eval's cut list, predict's probability"
