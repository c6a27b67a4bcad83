#!/usr/bin/env bash
# scripts/compare-torch.sh — training-step time of minidl against PyTorch eager on the same model and the
# same GPU: the captcha model (batch 128) and the MNIST CNN (batch 64), in strict FP32 (minidl's default;
# torch with TF32 off) and with TF32 (MINIDL_TF32=1; torch --tf32 1), plus MNIST on the CPU. Both sides
# are timed the same way (examples/bench_steps.h, scripts/torch_bench_common.py). Logs and one JSON file
# per run go to $OUT; a markdown table of the mean ms/step (one sync per pass) goes to stdout and
# $OUT/table.md.
#
#   BUILD=build-cuda OUT=/tmp/minidl-vs-torch bash scripts/compare-torch.sh [PAIR...]
#
# PAIR: captcha_fp32 captcha_tf32 mnist_fp32 mnist_tf32 mnist_cpu (default: all of them). Environment:
#   BUILD    build folder holding bin/captcha and bin/mnist (default build-cuda)
#   OUT      where logs, JSON and table.md go (default /tmp/minidl-vs-torch)
#   PYTHON   the Python that has torch (default python3)
#   DEVICE   the GPU for the GPU pairs (default cuda); DEVICE=cpu runs every pair on the CPU, which is
#            how the script's own logic is tried on a machine without a GPU
#   STEPS, WARMUP, CPU_STEPS  timed and warm-up steps (default 100, 20; 10 and 2 on the CPU)
#   CAPTCHA_BATCH, MNIST_BATCH  batch sizes (default 128 and 64, the issues' and `mnist train`'s)
#   TORCH_FLAGS  extra flags for both torch scripts (e.g. "--channels-last" or "--adam fused")
#   DRY_RUN=1    print the commands instead of running them (then the table says "not run")
# Each command runs under `timeout`; a run that fails or times out shows "failed" in the table and its
# log says why. Wall time on the H200: 96 s.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${BUILD:-build-cuda}/bin
out=${OUT:-/tmp/minidl-vs-torch}
python=${PYTHON:-python3}
gpu=${DEVICE:-cuda}
steps=${STEPS:-100}
warmup=${WARMUP:-20}
cpu_steps=${CPU_STEPS:-10}
captcha_batch=${CAPTCHA_BATCH:-128}
mnist_batch=${MNIST_BATCH:-64}
torch_flags=${TORCH_FLAGS:-}
dry_run=${DRY_RUN:-0}
mkdir -p "$out"

rows=()  # "model|batch|precision|device|minidl json|torch json"

run() {  # run NAME SECONDS [VAR=VALUE...] COMMAND...: logs to $out/NAME.log
  local name=$1 limit=$2
  shift 2
  if [ "$dry_run" = 1 ]; then
    echo "timeout $limit env $*  > $out/$name.log"
    return 0
  fi
  local start=$SECONDS
  timeout "$limit" env "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc after $((SECONDS - start))s ($out/$name.log)"
  [ $rc -eq 0 ] || tail -n 5 "$out/$name.log"
  return $rc
}

# pair NAME MODEL BATCH PRECISION DEVICE LIMIT: minidl's bench, then torch's, on the same settings.
pair() {
  local name=$1 model=$2 batch=$3 precision=$4 device=$5 limit=$6
  local n=$steps w=$warmup tf32=0
  [ "$device" = cpu ] && n=$cpu_steps && w=2
  [ "$precision" = tf32 ] && tf32=1
  rm -f "$out/${name}_minidl.json" "$out/${name}_torch.json"
  run "${name}_minidl" "$limit" MINIDL_TF32=$tf32 "$bin/$model" bench --device "$device" --batch "$batch" \
    --warmup "$w" --steps "$n" --json "$out/${name}_minidl.json"
  # shellcheck disable=SC2086  # TORCH_FLAGS is a list of flags
  run "${name}_torch" "$limit" "$python" "$here/torch_${model}_bench.py" --device "$device" --batch "$batch" \
    --warmup "$w" --steps "$n" --tf32 $tf32 --json "$out/${name}_torch.json" $torch_flags
  rows+=("$model|$batch|$precision|$device|$out/${name}_minidl.json|$out/${name}_torch.json")
}

pairs=("$@")
[ ${#pairs[@]} -eq 0 ] && pairs=(captcha_fp32 captcha_tf32 mnist_fp32 mnist_tf32 mnist_cpu)
if [ "$dry_run" != 1 ] && command -v nvidia-smi >/dev/null; then nvidia-smi -L; fi
for p in "${pairs[@]}"; do
  case $p in
    captcha_fp32) pair captcha_fp32 captcha "$captcha_batch" fp32 "$gpu" 60 ;;
    captcha_tf32) pair captcha_tf32 captcha "$captcha_batch" tf32 "$gpu" 60 ;;
    mnist_fp32) pair mnist_fp32 mnist "$mnist_batch" fp32 "$gpu" 40 ;;
    mnist_tf32) pair mnist_tf32 mnist "$mnist_batch" tf32 "$gpu" 40 ;;
    mnist_cpu) pair mnist_cpu mnist "$mnist_batch" fp32 cpu 60 ;;
    *) echo "unknown pair '$p' (known: captcha_fp32 captcha_tf32 mnist_fp32 mnist_tf32 mnist_cpu)" >&2 ;;
  esac
done

# The table: mean ms/step of each side and minidl / torch (below 1: minidl is faster).
"$python" - "${rows[@]}" <<'EOF' | tee "$out/table.md"
import json
import sys


def mean_ms(path):
    try:
        with open(path) as f:
            return json.loads(f.readline())["mean_ms"]
    except (OSError, ValueError, KeyError):
        return None


def cell(ms):
    return "%.2f" % ms if ms is not None else "failed / not run"


print("| model | batch | precision | device | minidl ms/step | torch ms/step | minidl / torch |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for row in sys.argv[1:]:
    model, batch, precision, device, ours_path, theirs_path = row.split("|")
    ours, theirs = mean_ms(ours_path), mean_ms(theirs_path)
    ratio = "%.2f" % (ours / theirs) if ours is not None and theirs else "-"
    print("| %s | %s | %s | %s | %s | %s | %s |" % (model, batch, precision, device, cell(ours), cell(theirs), ratio))
EOF
