#!/usr/bin/env bash
# tests/run_environment_test.sh MNIST CAPTCHA MINIDL — `train` and `bench` of both programs say what they
# measure with, and warn when the run cannot be measured honestly (examples/run_environment.h):
#   - a first line "<program>: measured with device cpu, strict FP32, N OpenMP thread(s); load average ...";
#   - OMP_NUM_THREADS = cores + 1 always exceeds the free cores (cores minus the load, never above the
#     cores), so the warning appears whatever the machine's load: "<program>: warning: N OpenMP thread(s)
#     but C cores ... set OMP_NUM_THREADS=... or run on an idle machine" (minidl bench's "machine:" line too);
#   - --device auto without a GPU: one short line pointing to `minidl info`, which gives the reason;
#   - in a build with CUDA kernels, --kernel matmul=cublas in a CPU run: "... selects a cuda kernel; this run
#     uses cpu only", also from MINIDL_KERNELS.
# Without threads above the cores the warning depends on the load: tests/test_run_environment.cpp checks
# that side with fixed numbers. captcha train is left out when no captcha font is installed.
set -u
mnist=$1
captcha=$2
minidl=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cores=$(getconf _NPROCESSORS_ONLN)
threads=$((cores + 1))
export OMP_NUM_THREADS=$threads

fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log; do [ -e "$f" ] && { echo "--- $f"; tail -n 8 "$f"; }; done
  exit 1
}

# check PROGRAM LOG: the line and the warning of PROGRAM ("mnist bench") in LOG.
check() {
  local program=$1 log=$2
  grep -qx "$program: measured with device cpu, strict FP32, $threads OpenMP thread(s); load average [0-9.]* [0-9.]* [0-9.]* on $cores cores" "$log" ||
    fail "$program: no 'measured with' line for $threads threads on $cores cores"
  grep -qx "$program: warning: $threads OpenMP thread(s) but $cores cores with a 1-minute load of [0-9.]* ([0-9.]* free): threads wait for cores, so times measured now vary and understate this code; set OMP_NUM_THREADS=[0-9]* or run on an idle machine" "$log" ||
    fail "$program: no warning about $threads threads on $cores cores"
  [ "$(grep -n "measured with" "$log" | cut -d: -f1)" -lt "$(grep -n "warning: $threads OpenMP" "$log" | cut -d: -f1)" ] ||
    fail "$program: the warning comes before the line it qualifies"
}

"$mnist" bench --device cpu --batch 2 --steps 1 --warmup 0 >"$dir/mnist_bench.log" 2>&1 || fail "mnist bench"
check "mnist bench" "$dir/mnist_bench.log"
"$captcha" bench --device cpu --batch 2 --steps 1 --warmup 0 >"$dir/captcha_bench.log" 2>&1 || fail "captcha bench"
check "captcha bench" "$dir/captcha_bench.log"

# mnist train on 40 blank images of a Kaggle CSV file (label,pixel0..pixel783), one epoch.
perl -e 'print join(",", "label", map { "pixel$_" } 0 .. 783), "\n";
         for my $i (0 .. 39) { print join(",", $i % 10, (0) x 784), "\n" }' >"$dir/train.csv"
"$mnist" train --device cpu --data "$dir/train.csv" --val-split 0 --epochs 1 --batch 8 --schedule none \
  >"$dir/mnist_train.log" 2>&1 || fail "mnist train"
check "mnist train" "$dir/mnist_train.log"

if "$captcha" gen --out "$dir/images" --count 1 --seed 5 --charset 0123456789 >"$dir/gen.log" 2>&1; then
  "$captcha" train --device cpu --charset 0123456789 --channels 4,4,4,4,4 --convs-per-block 1 --hidden 8 \
    --batch 4 --epoch-size 8 --epochs 1 --val-count 8 --threads 1 --seed 7 >"$dir/captcha_train.log" 2>&1 ||
    fail "captcha train"
  check "captcha train" "$dir/captcha_train.log"
else
  echo "note: captcha train left out: no captcha font here"
fi

# minidl bench: the same warning, on its "machine:" line.
"$minidl" bench --device cpu --op relu --kernel naive --shape relu:1000 >"$dir/minidl_bench.log" 2>&1 || fail "minidl bench"
grep -q "^machine: load average .* on $cores cores -- WARNING: $threads OpenMP thread(s) but $cores cores" "$dir/minidl_bench.log" ||
  fail "minidl bench: no warning on its machine line"

# A selection of a kernel only CUDA has, in a CPU run: named, from --kernel and from MINIDL_KERNELS.
if "$minidl" kernels --op matmul --device cuda | grep -q " cublas "; then
  OMP_NUM_THREADS=1 "$mnist" bench --device cpu --batch 2 --steps 1 --warmup 0 --kernel matmul=cublas \
    >"$dir/kernel_flag.log" 2>&1 || fail "mnist bench --kernel matmul=cublas"
  grep -qx "mnist bench: warning: --kernel matmul=cublas selects a cuda kernel; this run uses cpu only, so the selection changes nothing" "$dir/kernel_flag.log" ||
    fail "no warning for --kernel matmul=cublas in a CPU run"
  OMP_NUM_THREADS=1 MINIDL_KERNELS=matmul=cublas "$captcha" bench --device cpu --batch 2 --steps 1 --warmup 0 \
    >"$dir/kernel_env.log" 2>&1 || fail "captcha bench with MINIDL_KERNELS=matmul=cublas"
  grep -qx "captcha bench: warning: MINIDL_KERNELS: matmul=cublas selects a cuda kernel; this run uses cpu only, so the selection changes nothing" "$dir/kernel_env.log" ||
    fail "no warning for MINIDL_KERNELS=matmul=cublas in a CPU run"
else
  echo "note: the --kernel check left out: this build has no CUDA kernels"
fi
# --device auto without a usable GPU: one short line; the whole reason is `minidl info`'s, under CUDA.
OMP_NUM_THREADS=1 "$mnist" bench --batch 2 --steps 1 --warmup 0 >"$dir/auto.log" 2>&1 || fail "mnist bench --device auto"
if grep -q "^mnist: device cpu" "$dir/auto.log"; then
  grep -qxE "mnist: device cpu \(--device auto: (no usable GPU|this build has no CUDA support); \`minidl info\` says why\)" \
    "$dir/auto.log" || fail "--device auto on the CPU: not the short line"
  [ "$(grep -c "^mnist: device cpu" "$dir/auto.log")" -eq 1 ] || fail "--device auto on the CPU: said more than once"
  "$minidl" info | grep -qE "^  (devices           none usable: |not available: )" || fail "minidl info: no reason for the CPU"
else
  echo "note: a GPU is usable here: the no-GPU line is not checked"
fi
# A selection the run does use: no such warning.
grep -q "selects a" "$dir/mnist_bench.log" && fail "a warning about a selection that was not made"
echo "run_environment: ok"
