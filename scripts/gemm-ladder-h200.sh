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

# The kernel records of the bench's JSON Lines (minidl bench --json) as a table: one row per (shape,
# kernel), fastest first, with the fraction of the fastest vendor kernel (cuBLAS) of the same shape and
# the max error against the CPU reference.
table() {  # table FILE.jsonl
  python3 - "$1" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
rows = [r for r in rows if r.get("record") == "kernel" and r["status"] == "ok"]
rows.sort(key=lambda r: (r["shape"], -r["gflops"]))
for r in rows:
    vs = "%.1f%%" % (100 * r["vs_vendor"]) if r["vs_vendor"] is not None else "-"
    print("%-24s %-20s %10.3f ms %10.1f GFLOP/s %7s of %-8s err %.1e%s" % (r["shape"], r["kernel"], r["median_ms"],
          r["gflops"], vs, r["vendor"] or "-", r["max_abs_err"], "  WRONG" if r["wrong"] else ""))
PY
}

# Every shape of the ladder: 512^3 to 4096^3, MNIST fc1 (64 x 128 x 9216, B^T), and the captcha model
# (batch 128, 12 time steps, GRU hidden 128, 36+1 classes): GRU input projections [1536, 512] x [512, 384]
# and [1536, 256] x [256, 384], the recurrent one [128, 128] x [128, 384], the classifier
# [1536, 256] x [256, 37] (the model's own products use B^T; these time the plain layout). One bench call
# (every matmul kernel, each selected while it is timed, checked against the CPU reference); its table
# goes to LOG, its JSON Lines to LOG.jsonl.
bench_all() {  # bench_all LOG
  local log=$1 start=$SECONDS shapes=()
  for s in 512x512x512 1024x1024x1024 2048x2048x2048 4096x4096x4096 64x128x9216,tb 1536x384x512 1536x384x256 \
           128x384x128 1536x37x256; do
    shapes+=(--shape "matmul:$s")
  done
  timeout 400 "$bin/minidl" bench --op matmul --device cuda "${shapes[@]}" --json "$log.jsonl" >"$log" 2>&1
  echo "bench: exit $? after $((SECONDS - start))s" | tee -a "$out/summary.log"
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
      table "$out/bench_fp32.txt.jsonl" | tee -a "$out/table_fp32.txt" ;;
    bench_tf32)
      MINIDL_TF32=1 MINIDL_LOG_DISPATCH=1 bench_all "$out/bench_tf32.txt"
      echo "== MINIDL_TF32=1: cublas uses TF32 tensor cores (CUBLAS_TF32_TENSOR_OP_MATH)" | tee "$out/table_tf32.txt"
      table "$out/bench_tf32.txt.jsonl" | tee -a "$out/table_tf32.txt" ;;
    memcheck) run memcheck 540 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/minidl_tests" "[cuda][matmul]" ;;
    racecheck) run racecheck 540 compute-sanitizer --tool racecheck --error-exitcode 9 "$bin/minidl_tests" "[cuda][matmul]" ;;
    *) echo "unknown step $s" ;;
  esac
done
cat "$out/summary.log"
