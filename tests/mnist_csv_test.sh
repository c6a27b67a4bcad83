#!/usr/bin/env bash
# tests/mnist_csv_test.sh MNIST_BINARY — Kaggle's digit-recognizer CSV files, end to end: `mnist train
# --data train.csv` (a stratified --val-split), `mnist predict --csv test.csv --out submission.csv`, and
# malformed files refused with FILE:LINE before anything is written (nn/image_csv.h).
#
# Fixtures written here (perl): train.csv, 300 labelled rows (image i has label (i * 7) mod 10: a bright
# 5x5 square at a place that depends on the label, on dim noise, as in tests/mnist_fixture.pl), and
# test.csv, 37 rows of pixels only. Checks:
#   - train 1 epoch: exit 0, 270 training and 30 validation images (10% of each class), val_* metrics,
#     a checkpoint; --val-split 0 trains on every row and evaluates nothing (--early-stop is refused);
#   - predict: submission.csv is "ImageId,Label" and one "i,digit" line per row, i = 1..37 in order;
#     a labelled file also prints the accuracy against its labels, and `eval --data train.csv` prints
#     that accuracy with a loss (a missing CSV file is named);
#   - each malformed train.csv (wrong column count, a non-numeric pixel, a pixel of 256, a label of 10,
#     a wrong header, test.csv given to train, an empty file, a blank line between rows): exit 1, the
#     message names the file and the line, and neither --save nor --metrics file is created;
#   - a malformed test.csv: exit 1, FILE:LINE, the existing submission.csv unchanged, no temporary file;
#     an --out in a folder that does not exist fails before any work.
set -u
mnist=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=2

fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log; do [ -e "$f" ] && { echo "--- $f"; tail -n 6 "$f"; }; done
  exit 1
}

# write_csv FILE ROWS LABELLED(0|1)
write_csv() {
  perl -e '
    my ($path, $n, $labelled) = @ARGV;
    my $state = 12345;
    sub next_random { $state = (1103515245 * $state + 12345) % 2147483648; return $state; }
    open(my $f, ">", $path) or die "$path: $!\n";
    print $f join(",", ($labelled ? ("label") : ()), map { "pixel$_" } 0 .. 783), "\n";
    for my $i (0 .. $n - 1) {
      my $label = ($i * 7) % 10;
      my $x0 = 1 + ($label % 5) * 5 + next_random() % 3;
      my $y0 = 3 + int($label / 5) * 12 + next_random() % 3;
      my @pixels;
      for my $y (0 .. 27) {
        for my $x (0 .. 27) {
          my $inside = $x >= $x0 && $x < $x0 + 5 && $y >= $y0 && $y < $y0 + 5;
          push @pixels, $inside ? 70 + next_random() % 120 : next_random() % 110;
        }
      }
      print $f join(",", ($labelled ? ($label) : ()), @pixels), "\n";
    }
    close($f) or die;
  ' "$1" "$2" "$3" || fail "could not write $1"
}

write_csv "$dir/train.csv" 300 1
write_csv "$dir/test.csv" 37 0
train=(train --data "$dir/train.csv" --device cpu --epochs 1 --batch 30 --seed 4)

# ---- train and predict
"$mnist" "${train[@]}" --save "$dir/m.ckpt" --metrics "$dir/m.jsonl" >"$dir/train.log" 2>&1 || fail "training on train.csv"
grep -q "train.csv: 270 training images, 30 held out for validation (--val-split 0.1, stratified, seed 4)" \
  "$dir/train.log" || fail "the data line does not describe the split"
grep -q "| validation loss .*, accuracy " "$dir/train.log" || fail "no validation in the epoch's summary"
grep -q '"val_accuracy":' "$dir/m.jsonl" || fail "no val_accuracy in the metrics"
[ -s "$dir/m.ckpt" ] || fail "no checkpoint"

"$mnist" predict --model "$dir/m.ckpt" --device cpu --csv "$dir/test.csv" --out "$dir/submission.csv" \
  >"$dir/predict.log" 2>&1 || fail "predict --csv"
grep -q "wrote 37 predictions to $dir/submission.csv" "$dir/predict.log" || fail "predict did not say what it wrote"
[ "$(head -n 1 "$dir/submission.csv")" = "ImageId,Label" ] || fail "the submission's header is not ImageId,Label"
[ "$(wc -l <"$dir/submission.csv")" -eq 38 ] || fail "the submission does not have a line per row"
perl -ne 'next if $. == 1; die "line $.: $_" unless /^(\d+),([0-9])$/ && $1 == $. - 1' "$dir/submission.csv" ||
  fail "the submission's lines are not 'ImageId,digit' with ImageId 1..37"
"$mnist" predict --model "$dir/m.ckpt" --device cpu --csv "$dir/train.csv" --out "$dir/scored.csv" \
  >"$dir/scored.log" 2>&1 || fail "predict --csv on a labelled file"
grep -q "accuracy against the labels in $dir/train.csv: .* (.*/300)" "$dir/scored.log" ||
  fail "a labelled file's accuracy was not printed"
# eval --data FILE.csv scores the labelled file: the same accuracy as predict's, and a loss.
"$mnist" eval --model "$dir/m.ckpt" --device cpu --data "$dir/train.csv" >"$dir/eval.log" 2>&1 ||
  fail "eval --data train.csv"
scored=$(sed -n "s|^accuracy against the labels in $dir/train.csv: \(.*\)$|\1|p" "$dir/scored.log")
grep -qx "$dir/train.csv: loss [0-9.]*, accuracy $scored" "$dir/eval.log" ||
  fail "eval --data train.csv does not print predict's accuracy ($scored) with a loss"
"$mnist" eval --model "$dir/m.ckpt" --device cpu --data "$dir/missing.csv" >"$dir/eval_missing.log" 2>&1 &&
  fail "eval of a missing CSV file succeeded"
grep -q "missing.csv" "$dir/eval_missing.log" || fail "eval of a missing CSV file does not name it"
echo "OK: train.csv trained with a stratified validation split; submission.csv has ImageId,Label for every row; eval --data train.csv scores it"

"$mnist" "${train[@]}" --val-split 0 --schedule none >"$dir/all.log" 2>&1 || fail "--val-split 0"
grep -q "300 training images, no validation (--val-split 0)" "$dir/all.log" || fail "--val-split 0: the data line"
grep -q "validation" <(grep "^epoch 1/1:" "$dir/all.log") && fail "--val-split 0 evaluated something"
"$mnist" "${train[@]}" --val-split 0 --early-stop 1 >"$dir/noval.log" 2>&1 && fail "--early-stop without an evaluation"
grep -q -- "--save-best and --early-stop need an evaluation after each epoch" "$dir/noval.log" ||
  fail "no message for --early-stop with --val-split 0"
echo "OK: --val-split 0 trains on every row (and refuses --early-stop)"

# ---- malformed training files: FILE:LINE, exit 1, nothing written
header=$(head -n 1 "$dir/train.csv")
row=$(sed -n 2p "$dir/train.csv")
bad() {  # bad NAME EXPECTED-MESSAGE (the file's contents on stdin)
  cat >"$dir/$1"
  "$mnist" train --data "$dir/$1" --device cpu --epochs 1 --save "$dir/bad.ckpt" --metrics "$dir/bad.jsonl" \
    >"$dir/bad.log" 2>&1
  local rc=$?
  [ $rc -eq 1 ] || fail "$1: exit $rc (wanted 1)"
  grep -qF -- "$2" "$dir/bad.log" || fail "$1: no '$2' in: $(cat "$dir/bad.log")"
  [ ! -e "$dir/bad.ckpt" ] && [ ! -e "$dir/bad.jsonl" ] || fail "$1: a file was written"
}
printf '%s\n%s\n%s\n' "$header" "$row" "${row%,*}" | bad columns.csv "columns.csv:3: 784 column(s), but the header has 785"
printf '%s\n%s\n' "$header" "${row%%,*},abc,${row#*,*,}" | bad text.csv "text.csv:2: column 2 (pixel0): 'abc' is not a whole number"
printf '%s\n%s\n' "$header" "${row%,*},256" | bad range.csv "range.csv:2: column 785 (pixel783): 256 is outside 0..255"
printf '%s\n%s\n%s\n' "$header" "$row" "10,${row#*,}" | bad label.csv "label.csv:3: column 1 (label): 10 is outside 0..9"
printf '%s\n%s\n' "${header/pixel5,/pixel_5,}" "$row" | bad header.csv "header.csv:1: column 7 of the header is 'pixel_5', expected 'pixel5'"
bad unlabelled.csv "unlabelled.csv:1: the header has no 'label' column" <"$dir/test.csv"
bad empty.csv "empty.csv:1: the file is empty" </dev/null
printf '%s\n%s\n\n%s\n' "$header" "$row" "$row" | bad blank.csv "blank.csv:3: an empty line, with rows after it (line 4)"
echo "OK: 8 kinds of malformed train.csv refused with FILE:LINE before anything was written"

# ---- a malformed test file: the previous submission stays as it was
cp "$dir/submission.csv" "$dir/before.csv"
{ head -n 20 "$dir/test.csv"; echo "1,2,3"; } >"$dir/bad_test.csv"
"$mnist" predict --model "$dir/m.ckpt" --device cpu --csv "$dir/bad_test.csv" --out "$dir/submission.csv" \
  >"$dir/bad_predict.log" 2>&1 && fail "a malformed test file was accepted"
grep -qF "bad_test.csv:21: 3 column(s), but the header has 784 (pixels)" "$dir/bad_predict.log" ||
  fail "the malformed test file's error does not name the file and line"
cmp "$dir/submission.csv" "$dir/before.csv" || fail "a failed predict changed submission.csv"
ls "$dir" | grep -q "tmp-" && fail "temporary files were left: $(ls "$dir")"
"$mnist" predict --model "$dir/m.ckpt" --device cpu --csv "$dir/test.csv" --out "$dir/nope/s.csv" \
  >"$dir/nope.log" 2>&1 && fail "--out in a missing folder was accepted"
grep -qF -- "--out '$dir/nope/s.csv': the folder '$dir/nope' does not exist" "$dir/nope.log" ||
  fail "--out in a missing folder: no clear message"
echo "OK: a malformed test.csv changes nothing; a bad --out fails first"
echo "PASS"
