#!/usr/bin/env bash
# tests/train_reliability_test.sh CASE MNIST_BINARY CAPTCHA_BINARY — the training programs fail early,
# clearly and without damage (docs/checkpoint-format.md, examples/train_guard.h).
#
# Cases (one ctest entry each):
#   mnist_nan          a diverging run (--lr 1e38) stops with exit status 3, naming the step and the
#                      learning rate, and leaves the existing --save file byte for byte (and its mode)
#   mnist_save         a bad --save path fails before training: missing folder, a folder, a FIFO, "";
#                      a symbolic link's target is updated and the link kept; the file's mode is kept;
#                      a temporary file left by a killed save is removed by the next run
#   mnist_flags        bad flags, data and MINIDL_* values fail up front and name the flag, file or
#                      variable: --limit too small for the schedule, an empty test set, --lr inf,
#                      MINIDL_CUDA_MEMORY_LIMIT=garbage on a CPU run, MINIDL_CHECK_NUMERICS=maybe,
#                      MINIDL_LOG_DISPATCH=5abc
#   mnist_determinism  the same seed and threads give byte-identical checkpoints and metrics (CPU)
#   captcha_nan        as mnist_nan, for `captcha train --lr 1e30`
#   captcha_flags      --threads -1, --lr inf, --dropout 1, --save "", a --save folder that does not exist
#   determinism_cuda   two runs of each program with --device cuda --deterministic save identical files
# MNIST data is a small synthetic IDX set written by this script. Exit 77 (ctest: skipped, with the
# reason) without a GPU for determinism_cuda, and without a captcha font for the captcha cases.
set -u
case_name=$1
mnist=$2
captcha=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=2  # the same thread count for every run: reductions split the same way
unset MINIDL_CUDA_MEMORY_LIMIT MINIDL_CHECK_NUMERICS

fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log; do [ -e "$f" ] && { echo "--- $f"; tail -n 8 "$f"; }; done
  exit 1
}

# Synthetic MNIST in IDX format (uncompressed): class c lights a fixed pattern of pixels, plus noise from
# a linear congruential generator. $1: folder, $2: training images, $3: test images.
make_mnist() {
  mkdir -p "$1"
  perl -e '
    my ($dir, $n_train, $n_test) = @ARGV;
    sub write_set {
      my ($images, $labels, $n, $seed) = @_;
      open(my $fi, ">:raw", $images) or die "$images: $!";
      open(my $fl, ">:raw", $labels) or die "$labels: $!";
      print $fi pack("NNNN", 0x803, $n, 28, 28);
      print $fl pack("NN", 0x801, $n);
      my $s = $seed;
      for my $i (0 .. $n - 1) {
        my $c = $i % 10;
        print $fl pack("C", $c);
        my $img = "";
        for my $p (0 .. 783) {
          $s = ($s * 69069 + 1) % 4294967296;
          my $noise = ($s >> 16) % 64;
          $img .= pack("C", (($p * 7 + $c * 97) % 13) < 4 ? 160 + $noise : $noise);
        }
        print $fi $img;
      }
      close $fi;
      close $fl;
    }
    write_set("$dir/train-images-idx3-ubyte", "$dir/train-labels-idx1-ubyte", $n_train, 1);
    write_set("$dir/t10k-images-idx3-ubyte", "$dir/t10k-labels-idx1-ubyte", $n_test, 2);
  ' "$1" "$2" "$3" || fail "could not write the synthetic MNIST files"
}

# Copies checkpoint $1 to $2 with the first element of its first model tensor set to NaN and the CRC-32
# recomputed (docs/checkpoint-format.md; gzip's trailer holds the CRC-32 of its input, little-endian).
make_nan_checkpoint() {
  perl -e '
    my ($in, $out) = @ARGV;
    open(my $f, "<:raw", $in) or die "$in: $!";
    local $/;
    my $b = <$f>;
    close $f;
    my $name = index($b, "model/");
    die "no model tensor in $in" if $name < 0;
    my $pos = $name + unpack("V", substr($b, $name - 4, 4));  # past the name
    my $ndim = ord(substr($b, $pos + 1, 1));                  # after the dtype code
    substr($b, $pos + 2 + 8 * $ndim + 8, 4) = pack("V", 0x7fc00000);
    open(my $o, ">:raw", $out) or die "$out: $!";
    print $o substr($b, 0, length($b) - 4);
    close $o;
  ' "$1" "$2.body" || fail "could not edit $1"
  { cat "$2.body"; gzip -c "$2.body" | tail -c 8 | head -c 4; } >"$2"
  rm -f "$2.body"
}

# A pid no process has: that of a shell that has exited.
dead_pid() { sh -c 'echo $$'; }

# The metrics without their timing fields (seconds, seconds_since_start, train_seconds, images_per_second).
untimed() { perl -pe 's/"(seconds|seconds_since_start|train_seconds|images_per_second)":[^,}]*,?//g' "$1"; }

mode_of() { stat -c %a "$1"; }

# Runs a command that must fail before training: status $1 (or any non-zero for "fail"), output matching
# each further pattern, and no epoch started. $log is the log file, the command follows "--".
expect_refusal() {
  local want=$1; shift
  local patterns=()
  while [ "$1" != "--" ]; do patterns+=("$1"); shift; done
  shift
  "$@" >"$log" 2>&1
  local rc=$?
  if [ "$want" = fail ]; then [ $rc -ne 0 ] || fail "accepted: $*"; else [ $rc -eq "$want" ] || fail "exit $rc (wanted $want): $*"; fi
  for p in "${patterns[@]}"; do grep -q -- "$p" "$log" || fail "no '$p' in the output of: $*"; done
  if grep -q "^epoch 1/" "$log"; then fail "training started before the refusal: $*"; fi
}

need_captcha_font() {
  if ! "$captcha" gen --out "$dir/probe" --count 1 --dry-run >"$dir/probe.log" 2>&1; then
    echo "SKIPPED: cannot render captchas here:"
    cat "$dir/probe.log"
    exit 77
  fi
}

data="$dir/mnist"
train=(train --data "$data" --device cpu --batch 32 --seed 3)
captcha_base=(train --device cpu --charset 0123456789 --channels 4,4,4,4,4 --convs-per-block 1 --hidden 8
              --batch 4 --epoch-size 8 --val-count 8 --seed 7)
captcha_train=("${captcha_base[@]}" --threads 1)

case $case_name in
mnist_nan)
  make_mnist "$data" 256 64
  "$mnist" "${train[@]}" --epochs 1 --save "$dir/m.ckpt" >"$dir/good.log" 2>&1 || fail "the good run"
  chmod 600 "$dir/m.ckpt"
  cp -p "$dir/m.ckpt" "$dir/good.ckpt"
  "$mnist" "${train[@]}" --epochs 2 --lr 1e38 --schedule none --save "$dir/m.ckpt" >"$dir/nan.log" 2>&1
  rc=$?
  [ $rc -eq 3 ] || fail "a diverging run exited with status $rc, not 3"
  grep -q "training diverged: the loss is nan at step [0-9]* (learning rate 1e+38)" "$dir/nan.log" ||
    fail "the message does not name the step, the loss and the learning rate"
  grep -q "m.ckpt was not written by this run" "$dir/nan.log" || fail "the message does not say what the file holds"
  cmp "$dir/m.ckpt" "$dir/good.ckpt" || fail "the diverging run changed the saved model"
  [ "$(mode_of "$dir/m.ckpt")" = 600 ] || fail "the saved model's mode changed"
  ls "$dir" | grep -q "tmp-" && fail "temporary files were left: $(ls "$dir")"
  # A run that diverges in its first epoch saves nothing.
  "$mnist" "${train[@]}" --epochs 2 --lr 1e38 --schedule none --save "$dir/fresh.ckpt" >"$dir/fresh.log" 2>&1
  [ ! -e "$dir/fresh.ckpt" ] || fail "a run that diverged in its first epoch saved a model"
  # A model file holding NaN (saved by an older minidl, say) is refused by eval and predict.
  log="$dir/refused.log"
  make_nan_checkpoint "$dir/good.ckpt" "$dir/nan.ckpt"
  expect_refusal 1 "holds nan in '" "saved by a run that diverged" -- \
    "$mnist" eval --model "$dir/nan.ckpt" --data "$data" --device cpu
  expect_refusal 1 "holds nan in '" -- "$mnist" predict --model "$dir/nan.ckpt" --device cpu "$dir/any.png"
  echo "OK: the diverging run stopped with status 3 and left the saved model as it was"
  ;;

mnist_save)
  make_mnist "$data" 64 32
  short=("${train[@]}" --epochs 1 --schedule none)
  log="$dir/refused.log"
  expect_refusal fail "--save '$dir/nope/m.ckpt': the folder '$dir/nope' does not exist" -- \
    "$mnist" "${short[@]}" --save "$dir/nope/m.ckpt"
  expect_refusal fail "--save '$dir': '$dir' is a folder" -- "$mnist" "${short[@]}" --save "$dir"
  mkfifo "$dir/fifo"
  expect_refusal fail "is a FIFO" -- "$mnist" "${short[@]}" --save "$dir/fifo"
  expect_refusal 2 "--save: needs a file name" -- "$mnist" "${short[@]}" --save ""

  # A symbolic link (dangling at first): its target gets the file, the link stays a link.
  mkdir "$dir/store"
  ln -s store/real.ckpt "$dir/link.ckpt"
  "$mnist" "${short[@]}" --save "$dir/link.ckpt" >"$dir/link.log" 2>&1 || fail "saving through a symbolic link"
  [ -L "$dir/link.ckpt" ] || fail "the symbolic link was replaced by a file"
  [ -f "$dir/store/real.ckpt" ] || fail "the link's target was not written"
  "$mnist" eval --model "$dir/link.ckpt" --data "$data" --device cpu >"$dir/eval.log" 2>&1 ||
    fail "the saved model does not load through the link"

  # The file's mode is kept.
  chmod 600 "$dir/store/real.ckpt"
  "$mnist" "${short[@]}" --save "$dir/link.ckpt" >"$dir/mode.log" 2>&1 || fail "saving again"
  [ "$(mode_of "$dir/store/real.ckpt")" = 600 ] || fail "mode $(mode_of "$dir/store/real.ckpt") after a save, not 600"

  # A killed save's temporary file (its process is gone) is removed by the next run, which says so.
  pid=$(dead_pid)
  head -c 1000 /dev/zero >"$dir/store/real.ckpt.tmp-$pid-AbC123"
  "$mnist" "${short[@]}" --save "$dir/link.ckpt" >"$dir/stale.log" 2>&1 || fail "the run after a killed save"
  [ ! -e "$dir/store/real.ckpt.tmp-$pid-AbC123" ] || fail "the stale temporary file is still there"
  grep -q "removed 1 temporary file(s) $dir/store/real.ckpt.tmp-\* left by interrupted saves" "$dir/stale.log" ||
    fail "the run did not say it removed the stale file"
  ls "$dir/store" | grep -q "tmp-" && fail "temporary files were left: $(ls "$dir/store")"
  echo "OK: bad --save paths are refused before training; links, modes and stale files are handled"
  ;;

mnist_flags)
  make_mnist "$data" 64 32
  log="$dir/refused.log"
  expect_refusal 1 "--schedule onecycle needs at least 4 training steps" "--limit 64" -- \
    "$mnist" train --data "$data" --device cpu --epochs 1 --batch 64 --limit 64
  make_mnist "$dir/no_test" 64 0
  expect_refusal 1 "the test set in $dir/no_test (t10k-images-idx3-ubyte) has no images" -- \
    "$mnist" train --data "$dir/no_test" --device cpu --epochs 1 --schedule none
  expect_refusal 2 "--lr: must be a finite positive number, got inf" -- "$mnist" "${train[@]}" --lr inf
  expect_refusal 1 "MINIDL_CUDA_MEMORY_LIMIT: cannot parse 'garbage'" -- \
    env MINIDL_CUDA_MEMORY_LIMIT=garbage "$mnist" "${train[@]}" --epochs 1
  expect_refusal 1 "MINIDL_CHECK_NUMERICS='maybe' is not valid; expected 1 or 0 (also yes/no, on/off, true/false)" -- \
    env MINIDL_CHECK_NUMERICS=maybe "$mnist" "${train[@]}" --epochs 1
  expect_refusal 1 "MINIDL_LOG_DISPATCH='5abc' is not valid: not a whole number" -- \
    env MINIDL_LOG_DISPATCH=5abc "$mnist" "${train[@]}" --epochs 1
  echo "OK: bad flags, data and variables are refused before training, naming what is wrong"
  ;;

mnist_target)
  make_mnist "$data" 128 32
  log="$dir/refused.log"
  expect_refusal 2 "--target-accuracy: must be a fraction in (0, 1\], e.g. 0.99, got 99" -- "$mnist" "${train[@]}" --target-accuracy 99
  # Reached: the run stops after that evaluation, says when, and exits 0; the metrics hold the time.
  "$mnist" "${train[@]}" --epochs 3 --target-accuracy 0.05 --metrics "$dir/reached.jsonl" >"$dir/reached.log" 2>&1 ||
    fail "a run whose target is reached exited with status $?"
  grep -q "test accuracy .* reached --target-accuracy 0.05 after epoch 1 (step 4), .* s after the model was created" \
    "$dir/reached.log" || fail "no line saying where the target was reached"
  [ "$(wc -l <"$dir/reached.jsonl")" -eq 1 ] || fail "the run went on after reaching its target"
  grep -q '"seconds_since_start":' "$dir/reached.jsonl" || fail "no seconds_since_start in the metrics"
  # Not reached (a learning rate too small to learn anything): every epoch runs, then exit 4.
  "$mnist" "${train[@]}" --epochs 2 --lr 1e-12 --target-accuracy 0.95 >"$dir/missed.log" 2>&1
  rc=$?
  [ $rc -eq 4 ] || fail "a run that missed its target exited with status $rc, not 4"
  grep -q "^epoch 2/2: " "$dir/missed.log" || fail "the run that missed its target did not run every epoch"
  grep -q "target-accuracy 0.95 not reached in 2 epoch(s)" "$dir/missed.log" || fail "no line saying the target was missed"
  # --recipe fast: its settings where no flag is given, the flags where they are.
  "$mnist" train --data "$data" --device cpu --seed 3 --recipe fast --schedule none >"$dir/recipe.log" 2>&1 ||
    fail "--recipe fast"
  grep -q "^mnist: --recipe fast: --epochs 2 --batch 256 --lr 0.008 --model mnist_cnn_bn (on a GPU: --kernel conv2d=implicit_gemm)$" \
    "$dir/recipe.log" || fail "the recipe's settings not shown"
  grep -q "^mnist: model mnist_cnn_bn, 225226 parameters; Adam lr 0.008 (schedule none); 2 epoch(s) of 1 batches of 256$" \
    "$dir/recipe.log" || fail "the recipe's settings not used"
  "$mnist" "${train[@]}" --epochs 1 --lr 1e-3 --model mnist_cnn --kernel conv2d=naive --recipe fast \
    >"$dir/recipe_flags.log" 2>&1 || fail "--recipe fast with flags"
  grep -q "^mnist: --recipe fast: nothing (every setting given as a flag)$" "$dir/recipe_flags.log" ||
    fail "flags did not win over the recipe"
  echo "OK: --target-accuracy stops when reached (exit 0) and says so when missed (exit 4); --recipe fast fills in unset flags"
  ;;

mnist_determinism)
  make_mnist "$data" 128 32
  for run in a b; do
    "$mnist" "${train[@]}" --epochs 2 --save "$dir/$run.ckpt" --metrics "$dir/$run.jsonl" >"$dir/$run.log" 2>&1 ||
      fail "run $run"
  done
  cmp "$dir/a.ckpt" "$dir/b.ckpt" || fail "two runs with the same seed saved different checkpoints"
  [ "$(untimed "$dir/a.jsonl")" = "$(untimed "$dir/b.jsonl")" ] || fail "two runs logged different metrics"
  echo "OK: the same seed and thread count gave byte-identical checkpoints and metrics"
  ;;

captcha_nan)
  need_captcha_font
  "$captcha" "${captcha_train[@]}" --epochs 1 --save "$dir/c.ckpt" >"$dir/good.log" 2>&1 || fail "the good run"
  cp -p "$dir/c.ckpt" "$dir/good.ckpt"
  "$captcha" "${captcha_train[@]}" --epochs 2 --lr 1e30 --save "$dir/c.ckpt" >"$dir/nan.log" 2>&1
  rc=$?
  [ $rc -eq 3 ] || fail "a diverging run exited with status $rc, not 3"
  grep -q "training diverged: .*learning rate" "$dir/nan.log" || fail "the message does not name the learning rate"
  cmp "$dir/c.ckpt" "$dir/good.ckpt" || fail "the diverging run changed the saved model"
  ls "$dir" | grep -q "tmp-" && fail "temporary files were left: $(ls "$dir")"
  echo "OK: the diverging captcha run stopped with status 3 and left the saved model as it was"
  ;;

captcha_flags)
  log="$dir/refused.log"
  expect_refusal 2 "--threads: must be at least 0, got -1" -- "$captcha" "${captcha_base[@]}" --threads -1
  expect_refusal 2 "--lr: must be a finite positive number, got inf" -- "$captcha" "${captcha_train[@]}" --lr inf
  expect_refusal 2 "--dropout: must be in \[0, 1), got 1" -- "$captcha" "${captcha_train[@]}" --dropout 1
  expect_refusal 2 "--save: needs a file name" -- "$captcha" "${captcha_train[@]}" --save ""
  expect_refusal 1 "--save '$dir/nope/c.ckpt': the folder '$dir/nope' does not exist" -- \
    "$captcha" "${captcha_train[@]}" --save "$dir/nope/c.ckpt"
  expect_refusal 1 "MINIDL_CUDA_MEMORY_LIMIT: cannot parse 'garbage'" -- \
    env MINIDL_CUDA_MEMORY_LIMIT=garbage "$captcha" "${captcha_train[@]}"
  echo "OK: bad captcha flags are refused up front, naming the flag"
  ;;

determinism_cuda)
  make_mnist "$data" 256 64
  gpu=(train --data "$data" --device cuda --batch 32 --seed 3 --epochs 2 --deterministic)
  for run in a b; do
    if ! "$mnist" "${gpu[@]}" --save "$dir/$run.ckpt" --metrics "$dir/$run.jsonl" >"$dir/mnist_$run.log" 2>&1; then
      if grep -q "no usable device\|no CUDA support" "$dir/mnist_$run.log"; then
        echo "SKIPPED: no usable GPU:"
        tail -n 1 "$dir/mnist_$run.log"
        exit 77
      fi
      fail "mnist run $run on the GPU"
    fi
  done
  cmp "$dir/a.ckpt" "$dir/b.ckpt" || fail "two --deterministic mnist runs on the GPU saved different checkpoints"
  [ "$(untimed "$dir/a.jsonl")" = "$(untimed "$dir/b.jsonl")" ] || fail "two --deterministic mnist runs logged different metrics"
  # Where the images live changes nothing: batches copied from the host give the resident run's bits.
  "$mnist" "${gpu[@]}" --host-data --save "$dir/host.ckpt" >"$dir/mnist_host.log" 2>&1 || fail "mnist --host-data on the GPU"
  grep -q "images resident on cuda" "$dir/mnist_a.log" || fail "the default run did not say its images are resident"
  cmp "$dir/a.ckpt" "$dir/host.ckpt" || fail "--host-data saved another checkpoint than the resident run"
  echo "OK: mnist --deterministic on the GPU: byte-identical checkpoints and metrics, resident or --host-data"
  need_captcha_font
  for run in a b; do
    "$captcha" train --device cuda --deterministic --charset 0123456789 --channels 8,8,8,8,8 --hidden 16 \
      --batch 16 --epoch-size 64 --epochs 2 --val-count 32 --seed 7 --save "$dir/c$run.ckpt" \
      >"$dir/captcha_$run.log" 2>&1 || fail "captcha run $run on the GPU"
  done
  cmp "$dir/ca.ckpt" "$dir/cb.ckpt" || fail "two --deterministic captcha runs on the GPU saved different checkpoints"
  echo "OK: captcha --deterministic on the GPU: byte-identical checkpoints"
  ;;

*)
  echo "unknown case '$case_name'"
  exit 2
  ;;
esac
