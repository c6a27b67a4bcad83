#!/usr/bin/env bash
# scripts/conv-ladder-h200.sh — the measurements of the convolution ladder (docs/conv-ladder.md), for one
# device call on the H200: the machine and library versions, the conv tests (every conv2d kernel of every
# stage against the naive CPU reference), optionally the same under compute-sanitizer, then every conv2d
# kernel timed per stage (GFLOP/s and fraction of cuDNN's best algorithm) at the MNIST and captcha shapes,
# in strict FP32 and with MINIDL_TF32=1, and the MNIST / captcha training steps with each conv kernel.
#
#   BUILD=build OUT=/tmp/conv-ladder bash scripts/conv-ladder-h200.sh [STEP...]
#
# Steps (default: env tests bench shapes models; memcheck, racecheck and profile only by name):
#   env       nvidia-smi (GPU, driver, clocks) and `minidl info` (CUDA, cuDNN, cuBLAS versions)
#   tests     minidl_tests "[conv2d]" (GPU sweeps, TF32 declines, split-K reproducibility) and "[conv]"
#   memcheck  compute-sanitizer --tool memcheck on minidl_tests "[conv2d]"
#   racecheck compute-sanitizer --tool racecheck on the same, instrumenting the implicit GEMM kernels only
#   bench     minidl bench --op conv2d --device cuda at its fixed shapes (MNIST conv1, conv2,
#             [16,64,32,32]*[128,64,3,3] pad 1), strict FP32, then MINIDL_TF32=1
#   shapes    the captcha model's convolutions at batch 128 (and MNIST conv2 again), through
#             `minidl bench --shape conv2d:NxCxHxW,OxCxKHxKW,sSpP` when this build's bench has --shape;
#             otherwise the profile step instead
#   models    `mnist bench` (batch 64) and `captcha bench` (batch 128): ms per training step with each
#             conv2d kernel, strict FP32 and MINIDL_TF32=1
#   profile   MINIDL_PROFILE=1 captcha bench per conv2d kernel: time per stage summed over the model's ten
#             convolutions (the profiler synchronises after each kernel)
# Each step writes $OUT/<step>*.log; the bench steps also print a table (ms, GFLOP/s, cuDNN / kernel
# time per stage, and forward + both backward stages per shape) into $OUT/<step>_table.txt, and a summary
# goes to $OUT/summary.log. Only steps whose numbers are needed cost device time: pick them by name. The
# default steps may take more than one 10-minute device call: split them, e.g. `env tests bench`, then
# `shapes models`.
set -u
bin=${BUILD:-build}/bin
out=${OUT:-/tmp/conv-ladder}
mkdir -p "$out"
kernels=(cudnn implicit_gemm_tf32 implicit_gemm im2col_gemm)
repeat=${REPEAT:-20}

run() {  # run NAME SECONDS COMMAND...   (environment assignments go before `run`)
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "step $name: exit $rc after $((SECONDS - start))s" | tee -a "$out/summary.log"
  return $rc
}

# Reads `minidl bench` output on stdin, prints per (stage, shape) each kernel's ms, GFLOP/s and
# cuDNN's time over its time, then per shape the three stages added up.
table() {
  awk '
    $1 ~ /^conv2d/ {
      key = $1
      if ($0 ~ / declined /) next
      n = NF; ms = $(n-2); gf = $(n-1); k = $(n-3)
      size = $2; for (i = 3; i <= n - 5; ++i) size = size " " $i
      if (!(size in seen)) { seen[size] = 1; sizes[++ns] = size }
      if (!((size, k) in kseen)) { kseen[size, k] = 1; ks[size, ++nk[size]] = k }
      t[key, size, k] = ms; g[key, size, k] = gf
    }
    END {
      split("conv2d conv2d.backward_input conv2d.backward_weight", keys, " ")
      for (s = 1; s <= ns; ++s) {
        size = sizes[s]
        printf "\n%s\n", size
        printf "  %-24s %-20s %10s %10s %9s\n", "stage", "kernel", "ms", "GFLOP/s", "cudnn/it"
        for (j = 1; j <= 3; ++j) {
          key = keys[j]; ref = t[key, size, "cudnn"]
          for (i = 1; i <= nk[size]; ++i) {
            k = ks[size, i]
            if (!((key, size, k) in t)) continue
            frac = (ref != "" && t[key, size, k] > 0) ? sprintf("%8.0f%%", 100 * ref / t[key, size, k]) : "        -"
            printf "  %-24s %-20s %10.3f %10.1f %s\n", key, k, t[key, size, k], g[key, size, k], frac
          }
        }
        for (i = 1; i <= nk[size]; ++i) {
          k = ks[size, i]; total = 0; ref = 0; complete = 1
          for (j = 1; j <= 3; ++j) {
            if (!((keys[j], size, k) in t) || !((keys[j], size, "cudnn") in t)) complete = 0
            else { total += t[keys[j], size, k]; ref += t[keys[j], size, "cudnn"] }
          }
          if (complete && total > 0)
            printf "  %-24s %-20s %10.3f %10s %8.0f%%\n", "forward+backward", k, total, "", 100 * ref / total
        }
      }
    }'
}

# The captcha model's convolutions at batch 128 (examples/captcha/model.h: 3x3, padding 1, channels
# 32, 64, 128, 256, 256, two per block, 2x2 pooling between blocks, a 64x192 input), then MNIST conv2.
captcha_shapes=(
  "conv2d:128x3x64x192,32x3x3x3,s1p1" "conv2d:128x32x64x192,32x32x3x3,s1p1"
  "conv2d:128x32x32x96,64x32x3x3,s1p1" "conv2d:128x64x32x96,64x64x3x3,s1p1"
  "conv2d:128x64x16x48,128x64x3x3,s1p1" "conv2d:128x128x16x48,128x128x3x3,s1p1"
  "conv2d:128x128x8x24,256x128x3x3,s1p1" "conv2d:128x256x8x24,256x256x3x3,s1p1"
  "conv2d:128x256x4x12,256x256x3x3,s1p1" "conv2d:64x32x26x26,64x32x3x3,s1p0"
)

# MINIDL_PROFILE=1 captcha bench with each conv2d kernel: per stage, the time summed over the model's ten
# convolutions (the profiler synchronises after each kernel call, so these are the kernels' own times).
profile() {
  local pair k tf32
  for pair in cudnn:0 cudnn:1 implicit_gemm:0 implicit_gemm_tf32:1 im2col_gemm:0; do
    k=${pair%:*}
    tf32=${pair#*:}
    MINIDL_TF32=$tf32 MINIDL_PROFILE=1 run "profile_${k}_tf32_$tf32" 120 "$bin/captcha" bench --device cuda --batch 128 \
      --steps 20 --warmup 5 --kernel "conv2d=$k"
    grep "conv2d" "$out/profile_${k}_tf32_$tf32.log"
  done | tee "$out/profile_table.txt"
}

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(env tests bench shapes models)
for s in "${steps[@]}"; do
  case $s in
    env)
      run env_gpu 30 nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit,persistence_mode --format=csv
      nvidia-smi -q -d CLOCK >>"$out/env_gpu.log" 2>&1
      run env_minidl 30 "$bin/minidl" info
      cat "$out/env_gpu.log" "$out/env_minidl.log" ;;
    tests)
      run tests_conv2d 300 "$bin/minidl_tests" "[conv2d]"
      tail -n 3 "$out/tests_conv2d.log"
      run tests_conv 300 "$bin/minidl_tests" "[conv]"
      tail -n 3 "$out/tests_conv.log" ;;
    memcheck)
      run memcheck 540 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/minidl_tests" "[conv2d]"
      tail -n 5 "$out/memcheck.log" ;;
    racecheck)  # shared-memory hazards of the double-buffered tiles; only the implicit GEMM kernels instrumented
      run racecheck 540 compute-sanitizer --tool racecheck --kernel-regex kns=implicit_gemm --error-exitcode 9 \
        "$bin/minidl_tests" "[conv2d]"
      tail -n 5 "$out/racecheck.log" ;;
    bench)
      run bench_fp32 240 "$bin/minidl" bench --op conv2d --device cuda --repeat "$repeat"
      MINIDL_TF32=1 run bench_tf32 240 "$bin/minidl" bench --op conv2d --device cuda --repeat "$repeat"
      for p in fp32 tf32; do
        { echo "== minidl bench --op conv2d --device cuda ($p; cudnn/it = cuDNN time / kernel time)"; table <"$out/bench_$p.log"; } \
          >"$out/bench_${p}_table.txt"
        cat "$out/bench_${p}_table.txt"
      done ;;
    shapes)
      if ! "$bin/minidl" bench --help 2>&1 | grep -q -- "--shape"; then
        echo "step shapes: this build's minidl bench has no --shape option; the profile step instead" |
          tee -a "$out/summary.log"
        profile
        continue
      fi
      for p in fp32 tf32; do
        tf32=0
        [ $p = tf32 ] && tf32=1
        : >"$out/shapes_$p.log"
        for shape in "${captcha_shapes[@]}"; do
          MINIDL_TF32=$tf32 timeout 120 "$bin/minidl" bench --op conv2d --device cuda --repeat "$repeat" \
            --shape "$shape" >>"$out/shapes_$p.log" 2>&1 || echo "shape $shape: exit $?" | tee -a "$out/summary.log"
        done
        { echo "== captcha shapes ($p; cudnn/it = cuDNN time / kernel time)"; table <"$out/shapes_$p.log"; } \
          >"$out/shapes_${p}_table.txt"
        cat "$out/shapes_${p}_table.txt"
      done ;;
    models)
      for k in "${kernels[@]}"; do
        for p in fp32 tf32; do
          tf32=0
          [ $p = tf32 ] && tf32=1
          [ $k = implicit_gemm_tf32 ] && [ $p = fp32 ] && continue  # runs with TF32 whatever the switch
          MINIDL_TF32=$tf32 run "mnist_${k}_$p" 60 "$bin/mnist" bench --device cuda --batch 64 --steps 100 --kernel "conv2d=$k"
          MINIDL_TF32=$tf32 run "captcha_${k}_$p" 120 "$bin/captcha" bench --device cuda --batch 128 --steps 30 --warmup 10 --kernel "conv2d=$k"
        done
      done
      grep -H "ms/step mean" "$out"/mnist_*_fp32.log "$out"/mnist_*_tf32.log "$out"/captcha_*_fp32.log "$out"/captcha_*_tf32.log |
        grep "ms/step mean" | tee "$out/models_table.txt" ;;
    profile) profile ;;
    *) echo "unknown step $s (known: env tests memcheck racecheck bench shapes models profile)" ;;
  esac
done
cat "$out/summary.log"
