#!/usr/bin/env bash
# scripts/gemm-ladder-h200.sh — the GEMM ladder's checks and measurements on a GPU, for one device call
# (docs/gemm-ladder.md): the GPU, clocks, driver and library versions; the matmul tests (every kernel,
# odd sizes, transposes, split-K shapes, TF32 tolerance and gating, bit-identity of the FP32 ladder);
# then `minidl bench` of every matmul kernel at 512^3, 1024^3, 2048^3, 4096^3, MNIST fc1
# (64 x 128 x 9216, B^T) and the captcha model's GEMM shapes, with TF32 off and on, printed as one
# compact table per setting (GFLOP/s and the fraction of cuBLAS). Logs go to $OUT (default
# /tmp/minidl-gemm-ladder); each step has a time limit.
#   BUILD=build bash scripts/gemm-ladder-h200.sh [STEP...]
# Steps: info tests bench bench_tf32 (the default, ~5 minutes), and on request memcheck (the matmul GPU
# tests under compute-sanitizer memcheck) and racecheck (shared-memory races of the ladder's pipelines).
# Shapes beyond the bench's built-in ones need `minidl bench --shape matmul:MxNxK` (tools/bench.cpp);
# without that option only the built-in sizes (512^3, 1024^3, fc1) are measured, and the script says so.
set -u
bin=${BUILD:-build}/bin
out=${OUT:-/tmp/minidl-gemm-ladder}
mkdir -p "$out"
: >"$out/summary.log"

run() {  # run NAME SECONDS COMMAND...: output to $out/NAME.log, exit status to the summary
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "step $name: exit $rc after $((SECONDS - start))s" | tee -a "$out/summary.log"
  tail -n 4 "$out/$name.log"
}

# The bench lines of LOG as a table: one row per (shape, kernel), fastest first, with the fraction of the
# cublas row of the same shape. Bench lines end in: device kernel ms GFLOP/s runs.
table() {
  awk '$1 == "matmul" && $(NF-4) ~ /^cuda/ && $(NF-1) ~ /^[0-9.]+$/ {
         size = $2; for (i = 3; i <= NF - 5; ++i) size = size " " $i
         print size "\t" $(NF-3) "\t" $(NF-2) "\t" $(NF-1)
       }' "$1" |
    awk -F'\t' '{ row[NR] = $0; if ($2 == "cublas") ref[$1] = $4 }
         END { for (i = 1; i <= NR; ++i) { split(row[i], f, "\t");
                 pct = (f[1] in ref && ref[f[1]] > 0) ? sprintf("%.1f%%", 100 * f[4] / ref[f[1]]) : "-";
                 print row[i] "\t" pct } }' |
    sort -t$'\t' -k1,1 -k4,4gr |
    awk -F'\t' '{ printf "%-38s %-20s %10s ms %10s GFLOP/s %7s of cublas\n", $1, $2, $3, $4, $5 }'
}

# Every shape of the ladder: the bench's built-in ones (512^3, 1024^3, fc1), then the others through
# --shape when the bench has it. Captcha (batch 128, 12 time steps, GRU hidden 128, 36+1 classes): GRU
# input projections [1536, 512] x [512, 384] and [1536, 256] x [256, 384], the recurrent one
# [128, 128] x [128, 384], the classifier [1536, 256] x [256, 37] (the model's own products use B^T;
# --shape times the plain layout). Each bench call has a time limit; the output is appended to LOG.
bench_all() {  # bench_all LOG
  local log=$1 start=$SECONDS
  : >"$log"
  timeout 200 "$bin/minidl" bench --op matmul --device cuda >>"$log" 2>&1
  echo "bench (built-in sizes): exit $?" | tee -a "$out/summary.log"
  if "$bin/minidl" bench --help 2>&1 | grep -q -- '--shape'; then
    for s in 2048x2048x2048 4096x4096x4096 1536x384x512 1536x384x256 128x384x128 1536x37x256; do
      timeout 120 "$bin/minidl" bench --op matmul --device cuda --shape "matmul:$s" >>"$log" 2>&1
      echo "bench matmul:$s: exit $?" | tee -a "$out/summary.log"
    done
  else
    echo "minidl bench has no --shape option: only its built-in sizes were measured" | tee -a "$log" "$out/summary.log"
  fi
  echo "bench into $log: $((SECONDS - start))s" | tee -a "$out/summary.log"
}

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(info tests bench bench_tf32)
for s in "${steps[@]}"; do
  case $s in
    info)
      run nvidia_smi 30 nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu --format=csv
      run info 30 "$bin/minidl" info ;;
    tests)
      # [matmul]: every matmul test, CPU and GPU (the all-kernel sweeps, split-K shapes, bit-identity, TF32).
      run tests_matmul 300 "$bin/minidl_tests" "[matmul]"
      MINIDL_TF32=1 run tests_tf32_env 60 "$bin/minidl_tests" "[tf32]" ;;
    bench)
      # MINIDL_LOG_DISPATCH=1: v7_autotuned prints the timings behind each tile choice (into the log).
      MINIDL_LOG_DISPATCH=1 bench_all "$out/bench_fp32.txt"
      echo "== TF32 off: cublas is exact FP32 (cublasSgemm); the tf32_* kernels run because the bench selects them" |
        tee "$out/table_fp32.txt"
      table "$out/bench_fp32.txt" | tee -a "$out/table_fp32.txt" ;;
    bench_tf32)
      MINIDL_TF32=1 MINIDL_LOG_DISPATCH=1 bench_all "$out/bench_tf32.txt"
      echo "== MINIDL_TF32=1: cublas uses TF32 tensor cores (CUBLAS_TF32_TENSOR_OP_MATH)" | tee "$out/table_tf32.txt"
      table "$out/bench_tf32.txt" | tee -a "$out/table_tf32.txt" ;;
    memcheck) run memcheck 540 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/minidl_tests" "[cuda][matmul]" ;;
    racecheck) run racecheck 540 compute-sanitizer --tool racecheck --error-exitcode 9 "$bin/minidl_tests" "[cuda][matmul]" ;;
    *) echo "unknown step $s" ;;
  esac
done
cat "$out/summary.log"
