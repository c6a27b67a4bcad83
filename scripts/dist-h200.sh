#!/usr/bin/env bash
# scripts/dist-h200.sh — the GPU side of minidl::dist (docs/distributed.md), for one device call on an
# H200 host: the nccl backend with a real NCCL communicator of one rank, what --distributed costs on one
# GPU, the per-GPU-batch step times and (with several GPUs and PyTorch) NCCL's all-reduce bandwidth that
# the scaling model needs, then the model's table. Logs go to $OUT/<step>.log, a summary to $OUT/summary.log.
#
#   BUILD=build-h200 DATA=data/mnist bash scripts/dist-h200.sh [STEP...]
# steps (default: all): info tests overhead batches allreduce model. REPEATS (3): bench processes per
# overhead measurement (each alternates plain and data-parallel blocks itself: --overhead-rounds).
#
# The build: a host without Open MPI cannot start binaries linked with libmpi, so build them without MPI
# (the nccl backend needs no MPI for one rank; NCCL itself is loaded at run time):
#   cmake -S . -B build-h200 -DMINIDL_WITH_MPI=OFF && cmake --build build-h200 -j
# NCCL: $MINIDL_NCCL_LIBRARY when set; otherwise libnccl.so.2 is looked for where the loader finds it, in
# /usr/local/cuda/lib64 and in Python's nvidia-nccl-cu* wheels (site-packages/nvidia/nccl/lib).
set -u
bin=${BUILD:-build-h200}/bin
out=${OUT:-/tmp/minidl-dist-h200}
mkdir -p "$out"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-16}
repeats=${REPEATS:-3}

run() {  # run NAME SECONDS COMMAND...
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "step $name: exit $rc after $((SECONDS - start))s" | tee -a "$out/summary.log"
  tail -n 3 "$out/$name.log"
  return $rc
}

# libnccl.so.2 for the nccl backend's dlopen.
if [ -z "${MINIDL_NCCL_LIBRARY:-}" ] && ! "$bin/minidl" info 2>/dev/null | grep -q "nccl backend .*: NCCL [0-9]"; then
  candidates=(/usr/local/cuda/lib64/libnccl.so.2 /usr/lib/x86_64-linux-gnu/libnccl.so.2)
  if command -v python3 >/dev/null 2>&1; then
    for site in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
      candidates+=("$site/nvidia/nccl/lib/libnccl.so.2")
    done
  fi
  for c in "${candidates[@]}"; do
    if [ -e "$c" ]; then export MINIDL_NCCL_LIBRARY=$c; break; fi
  done
fi
echo "MINIDL_NCCL_LIBRARY=${MINIDL_NCCL_LIBRARY:-(not set: the dynamic loader searches)}" | tee -a "$out/summary.log"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU")
echo "GPUs: $gpus" | tee -a "$out/summary.log"

# bench NAME SECONDS FILE COMMAND...: runs a bench command with --json NAME.json (which the bench writes
# afresh) and appends that line to the JSON-lines FILE.
bench() {
  local name=$1 limit=$2 file=$3
  shift 3
  run "$name" "$limit" "$@" --json "$out/$name.json" && cat "$out/$name.json" >>"$file"
}

overhead() {  # overhead MODEL BATCH STEPS ROUNDS: plain and --distributed (one rank, NCCL) steps alternated
  # in blocks inside one process (`bench --overhead-rounds`), REPEATS processes; then with one bucket.
  local model=$1 batch=$2 steps=$3 rounds=$4 json=$out/overhead_$1.jsonl
  local common=(bench --device cuda --batch "$batch" --steps "$steps" --distributed --overhead-rounds "$rounds")
  rm -f "$json" "$json.one"
  for i in $(seq "$repeats"); do
    bench "overhead_${model}_$i" 150 "$json" "$bin/$model" "${common[@]}"
    MINIDL_DIST_BUCKET_MB=64 bench "overhead_${model}_one_bucket_$i" 150 "$json.one" "$bin/$model" "${common[@]}"
  done
  python3 - "$model" "$batch" "$json" "$json.one" <<'EOF' | tee -a "$out/summary.log"
import json, sys
model, batch, buckets, one = sys.argv[1:]
for label, path in (("buckets as laid out", buckets), ("one bucket", one)):
    try:
        rows = [json.loads(l) for l in open(path) if l.strip()]
    except OSError:
        rows = []
    cells = ", ".join(f"{r['plain_median_ms']:.4f} -> {r['parallel_median_ms']:.4f} ms ({100 * r['overhead']:+.2f}%)"
                      for r in rows)
    print(f"overhead {model} batch {batch}, {label}: {cells or 'no run'}")
EOF
}

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(info tests overhead batches allreduce model)
for s in "${steps[@]}"; do
  case $s in
    info) run info 30 "$bin/minidl" info ;;
    tests)
      run tests_dist 120 "$bin/minidl_tests" "[dist]"
      run tests_nccl 180 "$bin/minidl_tests" "nccl: a real communicator*" ;;
    overhead)
      overhead mnist 64 200 15
      overhead captcha 128 20 8
      run train_mnist_plain 120 "$bin/mnist" train --device cuda --epochs 1 --data "${DATA:-data/mnist}" \
        --metrics "$out/train_plain.jsonl"
      run train_mnist_dist 120 "$bin/mnist" train --device cuda --epochs 1 --data "${DATA:-data/mnist}" --distributed \
        --metrics "$out/train_dist.jsonl" ;;
    batches)  # T_c(b): the plain step at the per-GPU batches of 1, 2, 4 and 8 GPUs
      rm -f "$out/batches.jsonl"
      for b in 64 32 16 8; do
        bench "batch_mnist_$b" 60 "$out/batches.jsonl" "$bin/mnist" bench --device cuda --batch $b --steps 300
      done
      for b in 128 64 32 16; do
        bench "batch_captcha_$b" 90 "$out/batches.jsonl" "$bin/captcha" bench --device cuda --batch $b --steps 60
      done ;;
    allreduce)  # needs several GPUs (nvidia-h200-x2/x4/x8) and PyTorch
      if [ "$gpus" -lt 2 ] || ! python3 -c "import torch" 2>/dev/null; then
        echo "step allreduce: skipped ($gpus GPU(s); it needs 2 or more, and PyTorch)" | tee -a "$out/summary.log"
        continue
      fi
      rm -f "$out/allreduce.jsonl"
      for n in 2 4 8; do
        [ "$n" -le "$gpus" ] || break
        run "allreduce_$n" 180 torchrun --standalone --nproc_per_node=$n scripts/allreduce_bw.py --json "$out/allreduce.jsonl"
      done ;;
    model)
      args=()
      for m in mnist captcha; do
        o=$(python3 - "$out/overhead_$m.jsonl" <<'EOF' 2>/dev/null
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(max(0.0, statistics.median(r["overhead"] for r in rows)))
EOF
)
        [ -n "$o" ] && args+=(--overhead "$m=$o")
      done
      [ -s "$out/allreduce.jsonl" ] && args+=(--allreduce "$out/allreduce.jsonl")
      [ -s "$out/batches.jsonl" ] && args+=(--bench "$out/batches.jsonl")
      run model 30 python3 scripts/scaling_model.py "${args[@]}"
      cat "$out/model.log" ;;
    *) echo "unknown step $s" ;;
  esac
done
cat "$out/summary.log"
