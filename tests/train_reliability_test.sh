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
#   captcha_flags      --threads -1, --lr inf, --dropout 1, --save "", a --save folder that does not exist;
#                      --cuda-graph on the CPU (train and bench), and with --no-cuda-graph
#   determinism_cuda   two runs of each program with --device cuda --deterministic save identical files
#   mnist_outputs      an output never replaces an input (exit 2, both flags named, the input unchanged):
#                      predict --out = --model (also through a symbolic and a hard link), --out = --csv;
#                      train --save = the --data CSV, --save inside the --data folder, --metrics = --resume;
#                      --metrics or bench --json onto a checkpoint is refused (exit 1); --save = --resume is
#                      fine; a resumed run appends to its metrics log, a fresh one replaces it
#   captcha_outputs    the same for captcha: --save and --metrics inside --data or --val-data, --save-best =
#                      --save, --metrics = --resume, --metrics onto a checkpoint, gen --out = --font
#   mnist_diverged     --lr 1e4 (a loss of 1e17, finite) stops with exit 3 and keeps the --save file; eval,
#                      predict and predict --csv refuse a model whose outputs are NaN (a weight of 3e38)
#   captcha_diverged   --lr 1e30 --save-every 1: the state after the first update (weights of 1e30) is not
#                      saved; eval and predict refuse a model whose outputs are NaN
#   mnist_resume_data  --resume on a CSV with every label changed, or on an IDX folder with one byte
#                      changed, is refused naming --data; --resume-other-data goes on and says so
#   captcha_resume_data  the same for a captcha folder whose images were replaced (--data, --val-data)
#   captcha_val_data   generated training validated on --val-data DIR (it was ignored); a missing folder
#                      fails; --val-count with --val-data is refused
#   mnist_flags_all, captcha_flags_all  every numeric flag of every subcommand (read from --help) refuses
#                      nan with exit 2, naming the flag, and an unsigned one -1; plain bounds; a repeated flag
#                      says so; --weight-decay nan is refused by the flag check, not the optimizer
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

# A Kaggle-style CSV (nn/image_csv.h): $1 file, $2 rows, $3 1 with a label column (label = row mod 10).
write_csv() {
  perl -e '
    my ($path, $n, $labelled) = @ARGV;
    my $s = 7;
    open(my $f, ">", $path) or die "$path: $!";
    print $f join(",", ($labelled ? ("label") : ()), map { "pixel$_" } 0 .. 783), "\n";
    for my $i (0 .. $n - 1) {
      my $c = $i % 10;
      my @p = map { $s = ($s * 69069 + 1) % 4294967296; (($_ * 7 + $c * 97) % 13) < 4 ? 160 + ($s >> 16) % 64 : ($s >> 16) % 64 } 0 .. 783;
      print $f join(",", ($labelled ? ($c) : ()), @p), "\n";
    }
    close $f or die;
  ' "$1" "$2" "$3" || fail "could not write $1"
}

# Copies checkpoint $1 to $2 with the first element of its first model tensor set to NaN (or every element
# of its last weight matrix, the output layer's, to the float32 $3: 3e38 makes the outputs infinite and
# the softmax of them NaN, while the file holds finite numbers only) and the CRC-32 recomputed
# (docs/checkpoint-format.md; gzip's trailer holds the CRC-32 of its input, little-endian).
make_nan_checkpoint() {
  perl -e '
    my ($in, $out, $value) = @ARGV;
    open(my $f, "<:raw", $in) or die "$in: $!";
    local $/;
    my $b = <$f>;
    close $f;
    my $name = index($b, "model/");
    die "no model tensor in $in" if $name < 0;
    if (defined $value) {  # the last matrix: the output layer
      for (my $at = $name; $at >= 0; $at = index($b, "model/", $at + 1)) {
        my $end = $at + unpack("V", substr($b, $at - 4, 4));
        $name = $at if substr($b, $at, $end - $at) =~ /weight$/ && ord(substr($b, $end + 1, 1)) == 2;
      }
    }
    my $pos = $name + unpack("V", substr($b, $name - 4, 4));  # past the name
    my $ndim = ord(substr($b, $pos + 1, 1));                  # after the dtype code
    my $data = $pos + 2 + 8 * $ndim + 8;
    if (defined $value) {  # every element of the tensor
      my $length = unpack("V", substr($b, $data - 8, 4));
      substr($b, $data, $length) = pack("f<", $value) x ($length / 4);
    } else {
      substr($b, $data, 4) = pack("V", 0x7fc00000);
    }
    open(my $o, ">:raw", $out) or die "$out: $!";
    print $o substr($b, 0, length($b) - 4);
    close $o;
  ' "$1" "$2.body" ${3:+"$3"} || fail "could not edit $1"
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

# Every INT, UINT or FLOAT option CLI11 lists in the --help of each subcommand ($3...) of program $1
# (binary $2) must refuse nan with exit 2 and a message naming it (a flag without the shared check would
# let CLI11 say "could not be converted", or take the value), and an unsigned one -1. Sets $checked.
check_numeric_flags() {
  local program=$1 bin=$2 sub flag type
  shift 2
  checked=0
  for sub in "$@"; do
    while read -r flag type; do
      expect_refusal 2 "^$program: $flag: " "got nan\|'nan' is not a" -- "$bin" "$sub" "$flag=nan"
      if [ "$type" = UINT ]; then
        expect_refusal 2 "^$program: $flag: must be a whole number from 0 to [0-9]*, got -1$" -- "$bin" "$sub" "$flag=-1"
      fi
      checked=$((checked + 1))
    done < <("$bin" "$sub" --help | perl -ne 'print "$1 $2\n" if /^\s+(--[a-z0-9-]+) (INT|UINT|FLOAT)\b/')
  done
}

data="$dir/mnist"
train=(train --data "$data" --device cpu --batch 32 --seed 3)
captcha_base=(train --device cpu --charset 0123456789 --channels 4,4,4,4,4 --convs-per-block 1 --hidden 8
              --batch 4 --epoch-size 8 --val-count 8 --seed 7)
captcha_train=("${captcha_base[@]}" --threads 1)
# The same small model without the generated data's flags (for --data, --val-data).
captcha_small=(train --device cpu --charset 0123456789 --channels 4,4,4,4,4 --convs-per-block 1 --hidden 8 --batch 4
               --seed 7 --threads 1)

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
  expect_refusal 2 "--lr: must be a finite number above 0, got inf" -- "$mnist" "${train[@]}" --lr inf
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
  expect_refusal 2 "--target-accuracy: must be a number in (0, 1\] (a fraction, e.g. 0.99), got 99" -- "$mnist" "${train[@]}" --target-accuracy 99
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
  expect_refusal 2 "--threads: must be a whole number from 0 to 1024, got -1" -- "$captcha" "${captcha_base[@]}" --threads -1
  expect_refusal 2 "--lr: must be a finite number above 0, got inf" -- "$captcha" "${captcha_train[@]}" --lr inf
  expect_refusal 2 "--dropout: must be a number in \[0, 1), got 1" -- "$captcha" "${captcha_train[@]}" --dropout 1
  expect_refusal 2 "--save: needs a file name" -- "$captcha" "${captcha_train[@]}" --save ""
  expect_refusal 1 "--save '$dir/nope/c.ckpt': the folder '$dir/nope' does not exist" -- \
    "$captcha" "${captcha_train[@]}" --save "$dir/nope/c.ckpt"
  expect_refusal 1 "MINIDL_CUDA_MEMORY_LIMIT: cannot parse 'garbage'" -- \
    env MINIDL_CUDA_MEMORY_LIMIT=garbage "$captcha" "${captcha_train[@]}"
  expect_refusal 1 "--cuda-graph needs a CUDA device; this run is on cpu" -- "$captcha" "${captcha_train[@]}" --cuda-graph
  expect_refusal 1 "--cuda-graph needs a CUDA device; this run is on cpu" -- \
    "$captcha" bench --device cpu --steps 1 --warmup 0 --cuda-graph
  expect_refusal 2 "--cuda-graph excludes --no-cuda-graph" -- "$captcha" "${captcha_train[@]}" --cuda-graph --no-cuda-graph
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

mnist_outputs)
  make_mnist "$data" 64 32
  short=("${train[@]}" --epochs 1 --schedule none)
  "$mnist" "${short[@]}" --save "$dir/m.ckpt" >"$dir/good.log" 2>&1 || fail "the good run"
  cp "$dir/m.ckpt" "$dir/good.ckpt"
  write_csv "$dir/test.csv" 20 0
  cp "$dir/test.csv" "$dir/test.csv.orig"
  log="$dir/refused.log"
  # The issue's case: `predict --out` onto the model it reads printed "wrote 200 predictions to m.ckpt".
  expect_refusal 2 "^mnist: --out '$dir/m.ckpt' is the same file as --model '$dir/m.ckpt': refusing to overwrite an input$" -- \
    "$mnist" predict --model "$dir/m.ckpt" --csv "$dir/test.csv" --out "$dir/m.ckpt" --device cpu
  ln -s m.ckpt "$dir/link.ckpt"
  ln "$dir/m.ckpt" "$dir/hard.ckpt"
  expect_refusal 2 "--out '$dir/hard.ckpt' is the same file as --model '$dir/link.ckpt'" -- \
    "$mnist" predict --model "$dir/link.ckpt" --csv "$dir/test.csv" --out "$dir/hard.ckpt" --device cpu
  expect_refusal 2 "--out '$dir/./test.csv' is the same file as --csv '$dir/test.csv'" -- \
    "$mnist" predict --model "$dir/m.ckpt" --csv "$dir/test.csv" --out "$dir/./test.csv" --device cpu
  cmp "$dir/m.ckpt" "$dir/good.ckpt" || fail "predict changed the model it read"
  cmp "$dir/test.csv" "$dir/test.csv.orig" || fail "predict changed the CSV it read"
  # train: --metrics onto a checkpoint truncated it to a few hundred bytes; --save onto its --data CSV.
  cp "$dir/good.ckpt" "$dir/m2.ckpt"
  expect_refusal 1 "--metrics '$dir/m2.ckpt' holds something other than a metrics log (line 1 is not a JSON object)" -- \
    "$mnist" "${short[@]}" --metrics "$dir/m2.ckpt"
  cmp "$dir/m2.ckpt" "$dir/good.ckpt" || fail "--metrics changed a checkpoint"
  expect_refusal 2 "--metrics '$dir/m.ckpt' is the same file as --resume '$dir/m.ckpt': refusing to overwrite an input" -- \
    "$mnist" "${train[@]}" --epochs 2 --schedule none --resume "$dir/m.ckpt" --metrics "$dir/m.ckpt"
  cmp "$dir/m.ckpt" "$dir/good.ckpt" || fail "--metrics changed the --resume file"
  write_csv "$dir/train.csv" 60 1
  cp "$dir/train.csv" "$dir/train.csv.orig"
  expect_refusal 2 "--save '$dir/train.csv' is the same file as --data '$dir/train.csv'" -- \
    "$mnist" train --data "$dir/train.csv" --device cpu --epochs 1 --batch 10 --save "$dir/train.csv"
  cmp "$dir/train.csv" "$dir/train.csv.orig" || fail "--save changed the --data CSV"
  expect_refusal 2 "--save '$data/m.ckpt' is inside the folder --data '$data': refusing to write into an input folder" -- \
    "$mnist" "${short[@]}" --save "$data/m.ckpt"
  [ ! -e "$data/m.ckpt" ] || fail "a file was written into the --data folder"
  mkdir "$dir/sub"
  expect_refusal 2 "--metrics '$dir/sub/../m.ckpt' is the same file as --save '$dir/m.ckpt': give each output its own file" -- \
    "$mnist" "${short[@]}" --save "$dir/m.ckpt" --metrics "$dir/sub/../m.ckpt"
  expect_refusal 1 "--json '$dir/m2.ckpt' holds something other than a metrics log" -- \
    "$mnist" bench --device cpu --warmup 0 --steps 1 --json "$dir/m2.ckpt"
  cmp "$dir/m2.ckpt" "$dir/good.ckpt" || fail "bench --json changed a checkpoint"
  # --save = --resume is a resumed run saving where it always did; its metrics log grows, a fresh run's is new.
  two=("${train[@]}" --epochs 2 --schedule none)
  "$mnist" "${two[@]}" --stop-after-epochs 1 --save "$dir/r.ckpt" --metrics "$dir/r.jsonl" >"$dir/r1.log" 2>&1 ||
    fail "the first half"
  "$mnist" "${two[@]}" --save "$dir/r.ckpt" --resume "$dir/r.ckpt" --metrics "$dir/r.jsonl" >"$dir/r2.log" 2>&1 ||
    fail "--save = --resume was refused"
  [ "$(wc -l <"$dir/r.jsonl")" -eq 2 ] || fail "the resumed run did not append to its metrics log"
  "$mnist" "${short[@]}" --metrics "$dir/r.jsonl" >"$dir/r3.log" 2>&1 || fail "a fresh run onto a metrics log"
  [ "$(wc -l <"$dir/r.jsonl")" -eq 1 ] || fail "a fresh run did not replace the metrics log"
  echo "OK: no output of mnist replaces an input; --metrics and --json refuse what is not a metrics log"
  ;;

captcha_outputs)
  need_captcha_font
  "$captcha" gen --out "$dir/folder" --count 8 --seed 3 --charset 0123456789 >"$dir/gen.log" 2>&1 || fail "gen"
  folder_train=("${captcha_small[@]}" --data "$dir/folder" --epochs 1)
  log="$dir/refused.log"
  expect_refusal 2 "--save '$dir/folder/c.ckpt' is inside the folder --data '$dir/folder'" -- \
    "$captcha" "${folder_train[@]}" --save "$dir/folder/c.ckpt"
  expect_refusal 2 "--metrics '$dir/folder/labels.csv' is inside the folder --data '$dir/folder'" -- \
    "$captcha" "${folder_train[@]}" --metrics "$dir/folder/labels.csv"
  [ ! -e "$dir/folder/labels.csv" ] && [ ! -e "$dir/folder/c.ckpt" ] || fail "a file was written into --data"
  expect_refusal 2 "--save-best '$dir/c.ckpt' is the same file as --save '$dir/c.ckpt': give each output its own file" -- \
    "$captcha" "${captcha_train[@]}" --save "$dir/c.ckpt" --save-best "$dir/c.ckpt"
  expect_refusal 2 "--metrics '$dir/folder/m.jsonl' is inside the folder --val-data '$dir/folder'" -- \
    "$captcha" "${captcha_small[@]}" --epoch-size 8 --val-data "$dir/folder" --metrics "$dir/folder/m.jsonl"
  "$captcha" "${captcha_train[@]}" --epochs 1 --save "$dir/c.ckpt" >"$dir/good.log" 2>&1 || fail "the good run"
  cp "$dir/c.ckpt" "$dir/good.ckpt"
  expect_refusal 2 "--metrics '$dir/c.ckpt' is the same file as --resume '$dir/c.ckpt'" -- \
    "$captcha" "${captcha_train[@]}" --epochs 2 --resume "$dir/c.ckpt" --metrics "$dir/c.ckpt"
  expect_refusal 1 "--metrics '$dir/c.ckpt' holds something other than a metrics log" -- \
    "$captcha" "${captcha_train[@]}" --epochs 1 --save "$dir/other.ckpt" --metrics "$dir/c.ckpt"
  cmp "$dir/c.ckpt" "$dir/good.ckpt" || fail "a refused run changed the checkpoint"
  printf 'not a font' >"$dir/font.ttf"
  expect_refusal 2 "--out '$dir/font.ttf' is the same file as --font '$dir/font.ttf'" -- \
    "$captcha" gen --out "$dir/font.ttf" --font "$dir/font.ttf" --count 1
  echo "OK: no output of captcha replaces an input or lands in an input folder"
  ;;

mnist_diverged)
  make_mnist "$data" 256 64
  "$mnist" "${train[@]}" --epochs 1 --save "$dir/m.ckpt" >"$dir/good.log" 2>&1 || fail "the good run"
  cp "$dir/m.ckpt" "$dir/good.ckpt"
  # A finite but huge loss (7.5e17 in the issue) was saved with exit 0.
  "$mnist" "${train[@]}" --epochs 2 --lr 1e4 --save "$dir/m.ckpt" >"$dir/huge.log" 2>&1
  rc=$?
  [ $rc -eq 3 ] || fail "a run whose loss grew to $(grep -o 'train loss [^,]*' "$dir/huge.log" | tail -n 1) exited with status $rc, not 3"
  grep -q "training diverged: the loss is .* at step [0-9]* (learning rate .*), more than 10000 times the run's first loss" \
    "$dir/huge.log" || fail "the message does not give the bound"
  cmp "$dir/m.ckpt" "$dir/good.ckpt" || fail "the diverged run replaced the saved model"
  # A model with finite weights whose outputs are NaN: eval printed "test loss: nan" and exited 0.
  make_nan_checkpoint "$dir/good.ckpt" "$dir/absurd.ckpt" 3e38
  log="$dir/refused.log"
  expect_refusal 1 "gives a test loss of nan: its outputs are NaN or infinite" -- \
    "$mnist" eval --model "$dir/absurd.ckpt" --data "$data" --device cpu
  write_csv "$dir/test.csv" 20 0
  expect_refusal 1 "the model's output for row 1 is -*\(nan\|inf\)" -- \
    "$mnist" predict --model "$dir/absurd.ckpt" --csv "$dir/test.csv" --out "$dir/sub.csv" --device cpu
  [ ! -e "$dir/sub.csv" ] || fail "predict --csv wrote predictions of a model whose outputs are NaN"
  perl -e 'print pack("C*", 0x42, 0x4d, 0x3a, 0, 0, 0, 0, 0, 0, 0, 0x36, 0, 0, 0, 0x28, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,
                      1, 0, 24, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0x13, 0x0b, 0, 0, 0x13, 0x0b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                      255, 255, 255, 0)' >"$dir/one.bmp"
  expect_refusal 1 "one.bmp: the model's probabilities are -*\(nan\|inf\)" -- \
    "$mnist" predict --model "$dir/absurd.ckpt" --device cpu "$dir/one.bmp"
  "$mnist" predict --model "$dir/good.ckpt" --device cpu "$dir/one.bmp" >"$dir/predict.log" 2>&1 ||
    fail "predict on a sound model"
  echo "OK: a huge loss stops the run (status 3) and keeps the file; a model with NaN outputs is refused"
  ;;

captcha_diverged)
  need_captcha_font
  "$captcha" "${captcha_train[@]}" --epochs 1 --save "$dir/c.ckpt" >"$dir/good.log" 2>&1 || fail "the good run"
  cp "$dir/c.ckpt" "$dir/good.ckpt"
  # The state saved after the first update held weights near 1e30, and was called "the last good state".
  "$captcha" "${captcha_train[@]}" --epochs 2 --lr 1e30 --save-every 1 --save "$dir/c.ckpt" >"$dir/nan.log" 2>&1
  rc=$?
  [ $rc -eq 3 ] || fail "a diverging run exited with status $rc, not 3"
  grep -q "training diverged: at step 1 (epoch 1, learning rate .*) the model's '.*' holds .*e+[23][0-9] at .*, beyond the 1e+06" \
    "$dir/nan.log" || fail "the message does not name the absurd weight"
  cmp "$dir/c.ckpt" "$dir/good.ckpt" || fail "the state after a diverging update was saved"
  make_nan_checkpoint "$dir/good.ckpt" "$dir/absurd.ckpt" 3e38
  log="$dir/refused.log"
  expect_refusal 1 "gives a loss of nan: its outputs are NaN or infinite" -- \
    "$captcha" eval --model "$dir/absurd.ckpt" --count 8 --device cpu --threads 1
  "$captcha" gen --out "$dir/img" --count 1 --seed 9 --charset 0123456789 >"$dir/gen.log" 2>&1 || fail "gen"
  expect_refusal 1 "the model's output is -*\(nan\|inf\)" -- "$captcha" predict --model "$dir/absurd.ckpt" --device cpu "$dir"/img/*.png
  echo "OK: an absurd state is never saved; eval and predict refuse a model whose outputs are NaN"
  ;;

mnist_resume_data)
  write_csv "$dir/train.csv" 120 1
  csv=(train --data "$dir/train.csv" --device cpu --epochs 2 --batch 30 --seed 3)
  "$mnist" "${csv[@]}" --stop-after-steps 2 --save "$dir/r.ckpt" >"$dir/part1.log" 2>&1 || fail "part 1"
  cp "$dir/r.ckpt" "$dir/r0.ckpt"
  # The same pixels, every label changed, under the same file name: run.data matches.
  mkdir "$dir/relabelled"
  perl -pe 's/^(\d),/(($1 + 1) % 10) . ","/e if $. > 1' "$dir/train.csv" >"$dir/relabelled/train.csv"
  log="$dir/refused.log"
  expect_refusal 1 "--resume $dir/r.ckpt: the data is not the saved run's (--data gives 110 samples, fnv1a64 [0-9a-f]*, the saved run had 110 samples" \
    "give --resume-other-data" -- \
    "$mnist" train --data "$dir/relabelled/train.csv" --device cpu --epochs 2 --batch 30 --seed 3 --resume "$dir/r.ckpt"
  cmp "$dir/r.ckpt" "$dir/r0.ckpt" || fail "a refused resume changed the file"
  "$mnist" train --data "$dir/relabelled/train.csv" --device cpu --epochs 2 --batch 30 --seed 3 --resume "$dir/r.ckpt" \
    --resume-other-data >"$dir/other.log" 2>&1 || fail "--resume-other-data was refused"
  grep -q "^mnist: --resume-other-data: going on with other data than $dir/r.ckpt was trained on (--data gives" \
    "$dir/other.log" || fail "the log does not say the data changed"
  cp "$dir/r0.ckpt" "$dir/r.ckpt"
  "$mnist" "${csv[@]}" --resume "$dir/r.ckpt" >"$dir/same.log" 2>&1 || fail "resuming on the same data"
  grep -q "fingerprint\|other data" "$dir/same.log" && fail "a resume on the same data says something about it"
  # An IDX folder with one byte of one image changed.
  make_mnist "$data" 64 32
  "$mnist" "${train[@]}" --epochs 2 --schedule none --stop-after-steps 1 --save "$dir/i.ckpt" >"$dir/idx1.log" 2>&1 ||
    fail "the IDX run"
  cp -r "$data" "$dir/other"
  printf '\377' | dd of="$dir/other/train-images-idx3-ubyte" bs=1 seek=1000 conv=notrunc 2>/dev/null
  expect_refusal 1 "the data is not the saved run's (--data gives 64 samples" -- \
    "$mnist" train --data "$dir/other" --device cpu --batch 32 --seed 3 --epochs 2 --schedule none --resume "$dir/i.ckpt"
  echo "OK: --resume refuses other data of the same size, naming --data; --resume-other-data goes on and says so"
  ;;

captcha_resume_data)
  need_captcha_font
  "$captcha" gen --out "$dir/folder" --count 12 --seed 3 --charset 0123456789 >"$dir/gen.log" 2>&1 || fail "gen"
  "$captcha" gen --out "$dir/val" --count 4 --seed 4 --charset 0123456789 >"$dir/gen.log" 2>&1 || fail "gen"
  folder=("${captcha_small[@]}" --data "$dir/folder" --val-data "$dir/val" --epochs 2)
  "$captcha" "${folder[@]}" --stop-after-steps 1 --save "$dir/c.ckpt" >"$dir/part1.log" 2>&1 || fail "part 1"
  # The same folder, the same number of images, other images (and labels).
  rm "$dir"/folder/*.png
  "$captcha" gen --out "$dir/folder" --count 12 --seed 5 --charset 0123456789 >"$dir/gen.log" 2>&1 || fail "gen"
  log="$dir/refused.log"
  expect_refusal 1 "the data is not the saved run's (--data gives 12 samples, fnv1a64" -- \
    "$captcha" "${folder[@]}" --resume "$dir/c.ckpt"
  rm "$dir"/folder/*.png
  "$captcha" gen --out "$dir/folder" --count 12 --seed 3 --charset 0123456789 >"$dir/gen.log" 2>&1 || fail "gen"
  rm "$dir"/val/*.png
  "$captcha" gen --out "$dir/val" --count 4 --seed 6 --charset 0123456789 >"$dir/gen.log" 2>&1 || fail "gen"
  expect_refusal 1 "the data is not the saved run's (--val-data gives 4 samples" -- \
    "$captcha" "${folder[@]}" --resume "$dir/c.ckpt"
  "$captcha" "${folder[@]}" --resume "$dir/c.ckpt" --resume-other-data >"$dir/other.log" 2>&1 ||
    fail "--resume-other-data was refused"
  grep -q "^captcha: --resume-other-data: going on with other data" "$dir/other.log" || fail "the log does not say so"
  echo "OK: captcha --resume refuses replaced images, naming --data or --val-data"
  ;;

captcha_val_data)
  need_captcha_font
  "$captcha" gen --out "$dir/val" --count 5 --seed 11 --charset 0123456789 >"$dir/gen.log" 2>&1 || fail "gen"
  generated=("${captcha_small[@]}" --epoch-size 8 --epochs 1)
  "$captcha" "${generated[@]}" --val-data "$dir/val" --metrics "$dir/m.jsonl" >"$dir/val.log" 2>&1 ||
    fail "generated training validated on --val-data"
  grep -q "validation on 5 images of $dir/val" "$dir/val.log" || fail "the run does not say it validates on --val-data"
  grep -q "^final validation: .*(.*/5)" "$dir/val.log" || fail "the run did not validate on the 5 images of --val-data"
  log="$dir/refused.log"
  expect_refusal 1 "^captcha: --val-data: .*'$dir/nope' is not a folder" -- "$captcha" "${generated[@]}" --val-data "$dir/nope"
  expect_refusal 2 "--val-data excludes --val-count" -- "$captcha" "${captcha_train[@]}" --val-data "$dir/val"
  echo "OK: --val-data without --data validates on the folder"
  ;;

mnist_flags_all)
  log="$dir/refused.log"
  check_numeric_flags mnist "$mnist" train eval predict bench
  [ "$checked" -ge 15 ] || fail "only $checked numeric flags found in the --help texts"
  # -1 was read into unsigned flags as 2^64 - 1 (`--seed -1` accepted).
  expect_refusal 2 "^mnist: --seed: must be a whole number from 0 to 18446744073709551615, got -1$" -- \
    "$mnist" train --seed=-1
  # `--weight-decay nan` made the optimizer say "Adam: bad hyper-parameters", without the flag.
  expect_refusal 2 "^mnist: --weight-decay: must be a number in \[0, 1\], got nan$" -- "$mnist" train --weight-decay nan
  grep -q "Adam: bad hyper-parameters" "$log" && fail "the optimizer, not the flag check, refused --weight-decay"
  # A repeated flag said "At Most 1 required but received 2".
  expect_refusal 2 "^mnist: --epochs was given twice: give it once$" -- "$mnist" train --epochs 1 --epochs 2
  grep -q "At Most" "$log" && fail "CLI11's message is still there"
  echo "OK: $checked numeric flags of mnist refuse nan (and unsigned ones -1) naming the flag; repeated flags named"
  ;;

captcha_flags_all)
  log="$dir/refused.log"
  check_numeric_flags captcha "$captcha" train eval predict gen bench
  [ "$checked" -ge 30 ] || fail "only $checked numeric flags found in the --help texts"
  # `--count 0` printed a 300-digit bound.
  expect_refusal 2 "^captcha: --count: must be a whole number from 1 to 9223372036854775807, got 0$" -- \
    "$captcha" gen --count 0
  # `--weight-decay nan` ran with 0.01.
  expect_refusal 2 "^captcha: --weight-decay: must be a number in \[0, 1\], got nan$" -- "$captcha" train --weight-decay nan
  expect_refusal 2 "^captcha: --lr was given 3 times: give it once$" -- "$captcha" train --lr 1 --lr 2 --lr 3
  echo "OK: $checked numeric flags of captcha refuse nan (and unsigned ones -1) naming the flag; plain bounds"
  ;;


*)
  echo "unknown case '$case_name'"
  exit 2
  ;;
esac
