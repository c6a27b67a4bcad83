#!/usr/bin/env bash
# scripts/compare-torch.sh — training-step time of minidl against PyTorch at its strongest settings on the
# same model and the same GPU (PyTorch eager NCHW, channels_last, channels_last + torch.compile and, for
# MNIST, the whole step in a CUDA graph; the table reports minidl's fastest against the fastest of
# them): the captcha model (batch 128) and
# the MNIST CNN (batch 64), in strict FP32 (minidl's default;
# torch with TF32 off), with TF32 (MINIDL_TF32=1; torch --tf32 1) and in BF16 mixed precision (minidl
# --precision bf16; torch --amp bf16, i.e. torch.autocast), plus MNIST on the CPU. Both sides
# are timed the same way (examples/bench_steps.h, scripts/torch_bench_common.py). Logs and one JSON file
# per run go to $OUT; a markdown table of the mean ms/step (one sync per pass) goes to stdout and
# $OUT/table.md.
#
#   BUILD=build-cuda OUT=/tmp/minidl-vs-torch bash scripts/compare-torch.sh [PAIR...]
#
# PAIR: captcha_fp32 captcha_tf32 captcha_bf16 mnist_fp32 mnist_tf32 mnist_bf16 mnist_cpu (default: all of
# them), mnist_cpu2 (the CPU pair with OMP_NUM_THREADS=2 on both sides), and the whole
# training epochs mnist_epoch_64 and mnist_epoch_1024 (asked for by name): `mnist train --epochs 3` with
# the images resident on the GPU (CUDA graphs, the default), with --host-data and with --no-cuda-graph
# (eager steps), against scripts/torch_mnist_train.py with its data
# on the GPU and in a pinned DataLoader; the second table compares the steady epochs' training seconds
# (the mean of epochs 2 and 3: the first holds cuDNN's algorithm search and the allocators' warm-up).
# Environment:
#   BUILD    build folder holding bin/captcha and bin/mnist (default build-cuda)
#   OUT      where logs, JSON and table.md go (default /tmp/minidl-vs-torch)
#   PYTHON   the Python that has torch (default python3)
#   DEVICE   the GPU for the GPU pairs (default cuda); DEVICE=cpu runs every pair on the CPU, which is
#            how the script's own logic is tried on a machine without a GPU
#   STEPS, WARMUP, CPU_STEPS  timed and warm-up steps (default 100, 20; 10 and 2 on the CPU; 1,000 and 100 for
#            the MNIST pairs on the GPU, whose sub-millisecond steps make 100 of them too short a run to give the
#            same ratio twice)
#   CAPTCHA_BATCH, MNIST_BATCH  batch sizes (default 128 and 64, the issues' and `mnist train`'s)
#   TORCH_FLAGS  extra flags for every torch step run
#   MINIDL_FLAGS extra flags for every minidl step run (e.g. MINIDL_FLAGS="--activations bf16" with captcha_bf16)
#   TORCH_ADAM   the Adam of the torch GPU runs (default fused, the fastest)
#   TORCH_COMPILE=0  skip the channels_last + torch.compile column (50 warm-up steps and twice the time
#            limit, for the compilation; where torch.compile fails the cell shows "-", its log says why)
#   DATA     the MNIST folder for the epoch pairs (default data/mnist)
#   DRY_RUN=1    print the commands instead of running them (then the table says "not run")
# Each command runs under `timeout`; a run that fails or times out shows "-" in the table and its log
# says why. Wall time on an H100: docs/results/README.md.
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
minidl_flags=${MINIDL_FLAGS:-}
dry_run=${DRY_RUN:-0}
torch_compile=${TORCH_COMPILE:-1}
data=${DATA:-data/mnist}
mkdir -p "$out"

rows=()  # "model|batch|precision|device|minidl json|torch json|torch.compile json"
epoch_rows=()  # "batch|minidl metrics|minidl --host-data metrics|torch device json|torch loader json"

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

# Which settings each side runs (the table reports each, and the fastest of each side against the other's):
#   minidl        its bench with its defaults (eager steps)
#   minidl_graph  --cuda-graph: the step replayed from a CUDA graph, as `train` runs it on a GPU by default
#                 (only where the program's bench has the flag)
#   torch         eager, NCHW (PyTorch's default memory format)
#   torch_cl      eager, channels_last (NHWC convolutions)
#   torch_cl_compile  channels_last + torch.compile (50 warm-up steps for the compilation, twice the limit)
#   torch_graph, torch_cl_graph  (MNIST) the whole step, fused capturable Adam included, in one CUDA graph,
#                 NCHW and channels_last
# Every PyTorch GPU run uses fused Adam (TORCH_ADAM, default fused) and cuDNN's benchmark mode; on the CPU
# PyTorch runs eager with its default Adam, NCHW and channels_last.
torch_adam=${TORCH_ADAM:-fused}
has_flag() {  # has_flag PROGRAM FLAG: whether `PROGRAM bench --help` lists FLAG
  [ "$dry_run" = 1 ] && return 0
  "$bin/$1" bench --help 2>/dev/null | grep -q -- "$2"
}

# pair NAME MODEL BATCH PRECISION DEVICE LIMIT [VAR=VALUE...]: minidl's bench, then torch's, on the same
# settings; the VAR=VALUE pairs (e.g. OMP_NUM_THREADS=2) go to both sides' environment.
pair() {
  local name=$1 model=$2 batch=$3 precision=$4 device=$5 limit=$6
  shift 6
  local env_both=("$@")
  local n=$steps w=$warmup tf32=0 minidl_precision=() amp=off adam=(--adam "$torch_adam")
  [ "$device" = cpu ] && n=$cpu_steps && w=2 && adam=()
  [ "$device" != cpu ] && [ "$model" = mnist ] && n=${STEPS:-1000} && w=${WARMUP:-100}
  [ "$precision" = tf32 ] && tf32=1
  [ "$precision" = bf16 ] && minidl_precision=(--precision bf16) && amp=bf16
  rm -f "$out/${name}"_minidl*.json "$out/${name}"_torch*.json
  # shellcheck disable=SC2206  # MINIDL_FLAGS is a list of flags
  local minidl_cmd=("$bin/$model" bench --device "$device" --batch "$batch" --warmup "$w" --steps "$n"
                    "${minidl_precision[@]}" $minidl_flags)
  run "${name}_minidl" "$limit" "${env_both[@]}" MINIDL_TF32=$tf32 "${minidl_cmd[@]}" --json "$out/${name}_minidl.json"
  if [ "$device" != cpu ] && has_flag "$model" --cuda-graph; then
    run "${name}_minidl_graph" "$limit" MINIDL_TF32=$tf32 "${minidl_cmd[@]}" --cuda-graph \
      --json "$out/${name}_minidl_graph.json"
  fi
  local torch_cmd=("$python" "$here/torch_${model}_bench.py" --device "$device" --batch "$batch" --tf32 $tf32
                   --amp $amp "${adam[@]}")
  # shellcheck disable=SC2086  # TORCH_FLAGS is a list of flags
  run "${name}_torch" "$limit" "${env_both[@]}" "${torch_cmd[@]}" --warmup "$w" --steps "$n" \
    --json "$out/${name}_torch.json" $torch_flags
  # shellcheck disable=SC2086
  run "${name}_torch_cl" "$limit" "${env_both[@]}" "${torch_cmd[@]}" --warmup "$w" --steps "$n" --channels-last \
    --json "$out/${name}_torch_cl.json" $torch_flags
  if [ "$device" != cpu ]; then
    if [ "$torch_compile" = 1 ]; then
      # shellcheck disable=SC2086
      run "${name}_torch_cl_compile" "$((2 * limit))" "${torch_cmd[@]}" --warmup 50 --steps "$n" --channels-last \
        --compile --json "$out/${name}_torch_cl_compile.json" $torch_flags
    fi
    if [ "$model" = mnist ]; then
      # shellcheck disable=SC2086
      run "${name}_torch_graph" "$limit" "${torch_cmd[@]}" --warmup "$w" --steps "$n" --cuda-graph \
        --json "$out/${name}_torch_graph.json" $torch_flags
      # shellcheck disable=SC2086
      run "${name}_torch_cl_graph" "$limit" "${torch_cmd[@]}" --warmup "$w" --steps "$n" --channels-last \
        --cuda-graph --json "$out/${name}_torch_cl_graph.json" $torch_flags
    fi
  fi
  rows+=("$model|$batch|$precision|$device${env_both[*]:+ (${env_both[*]})}|$out/$name")
}

# epochs NAME BATCH LIMIT: three epochs of `mnist train` (resident, then --host-data) and of the PyTorch
# script (data on the GPU, then a pinned DataLoader; fused Adam and cuDNN benchmark, its defaults).
epochs() {
  local name=$1 batch=$2 limit=$3 lr=2e-3
  [ "$batch" -ge 512 ] && lr=4e-3  # a larger batch takes a larger step (both sides the same)
  rm -f "$out/${name}"_*.jsonl
  run "${name}_minidl" "$limit" "$bin/mnist" train --device "$gpu" --epochs 3 --batch "$batch" --lr "$lr" \
    --data "$data" --metrics "$out/${name}_minidl.jsonl"
  run "${name}_minidl_host" "$limit" "$bin/mnist" train --device "$gpu" --epochs 3 --batch "$batch" --lr "$lr" \
    --data "$data" --host-data --metrics "$out/${name}_minidl_host.jsonl"
  run "${name}_minidl_eager" "$limit" "$bin/mnist" train --device "$gpu" --epochs 3 --batch "$batch" --lr "$lr" \
    --data "$data" --no-cuda-graph --metrics "$out/${name}_minidl_eager.jsonl"
  run "${name}_torch" "$limit" "$python" "$here/torch_mnist_train.py" --device "$gpu" --epochs 3 --batch "$batch" \
    --lr "$lr" --data "$data" --data-mode device --json "$out/${name}_torch.jsonl"
  run "${name}_torch_loader" "$limit" "$python" "$here/torch_mnist_train.py" --device "$gpu" --epochs 3 \
    --batch "$batch" --lr "$lr" --data "$data" --data-mode loader --json "$out/${name}_torch_loader.jsonl"
  epoch_rows+=("$batch|$out/${name}_minidl.jsonl|$out/${name}_minidl_host.jsonl|$out/${name}_minidl_eager.jsonl|$out/${name}_torch.jsonl|$out/${name}_torch_loader.jsonl")
}

pairs=("$@")
[ ${#pairs[@]} -eq 0 ] && pairs=(captcha_fp32 captcha_tf32 captcha_bf16 mnist_fp32 mnist_tf32 mnist_bf16 mnist_cpu)
if [ "$dry_run" != 1 ] && command -v nvidia-smi >/dev/null; then nvidia-smi -L; fi
for p in "${pairs[@]}"; do
  case $p in
    captcha_fp32) pair captcha_fp32 captcha "$captcha_batch" fp32 "$gpu" 60 ;;
    captcha_tf32) pair captcha_tf32 captcha "$captcha_batch" tf32 "$gpu" 60 ;;
    captcha_bf16) pair captcha_bf16 captcha "$captcha_batch" bf16 "$gpu" 60 ;;
    mnist_fp32) pair mnist_fp32 mnist "$mnist_batch" fp32 "$gpu" 40 ;;
    mnist_tf32) pair mnist_tf32 mnist "$mnist_batch" tf32 "$gpu" 40 ;;
    mnist_bf16) pair mnist_bf16 mnist "$mnist_batch" bf16 "$gpu" 40 ;;
    mnist_cpu) pair mnist_cpu mnist "$mnist_batch" fp32 cpu 60 ;;
    mnist_cpu2) pair mnist_cpu2 mnist "$mnist_batch" fp32 cpu 60 OMP_NUM_THREADS=2 ;;
    mnist_epoch_64) epochs mnist_epoch_64 64 60 ;;
    mnist_epoch_1024) epochs mnist_epoch_1024 1024 60 ;;
    *) echo "unknown pair '$p' (known: captcha_fp32 captcha_tf32 captcha_bf16 mnist_fp32 mnist_tf32 mnist_bf16 mnist_cpu mnist_cpu2" \
            "mnist_epoch_64 mnist_epoch_1024)" >&2 ;;
  esac
done

# The table: mean ms/step of every setting of each side, then the fastest minidl setting against the
# fastest PyTorch setting (below 1: minidl is faster), naming both.
if [ ${#rows[@]} -gt 0 ]; then
"$python" - "${rows[@]}" <<'EOF' | tee "$out/table.md"
import json
import sys

MINIDL = [("minidl", "minidl eager"), ("minidl_graph", "minidl graph")]
TORCH = [("torch", "torch NCHW"), ("torch_cl", "torch CL"), ("torch_cl_compile", "torch CL+compile"),
         ("torch_graph", "torch graph"), ("torch_cl_graph", "torch CL+graph")]


def mean_ms(path):
    try:
        with open(path) as f:
            return json.loads(f.readline())["mean_ms"]
    except (OSError, ValueError, KeyError):
        return None


def fastest(times, settings):
    ran = [(times[key], label) for key, label in settings if times[key] is not None]
    return min(ran) if ran else (None, "-")


columns = [label for _, label in MINIDL + TORCH]
print("| model | batch | precision | device | " + " | ".join(columns) + " | fastest minidl / fastest torch |")
print("| --- | --- | --- | --- |" + " --- |" * len(columns) + " --- |")
for row in sys.argv[1:]:
    model, batch, precision, device, prefix = row.split("|")
    times = {key: mean_ms("%s_%s.json" % (prefix, key)) for key, _ in MINIDL + TORCH}
    cells = ["%.2f" % times[key] if times[key] is not None else "-" for key, _ in MINIDL + TORCH]
    ours, ours_label = fastest(times, MINIDL)
    theirs, theirs_label = fastest(times, TORCH)
    ratio = "%.2f (%s / %s)" % (ours / theirs, ours_label, theirs_label) if ours and theirs else "-"
    print("| %s | %s | %s | %s | %s | %s |" % (model, batch, precision, device, " | ".join(cells), ratio))
print()
print("(-: not run for this row, or failed: its log in this folder says which)")
EOF
fi

# The epochs' table: the steady epochs' mean training seconds (epochs 2..3), the last test accuracy, and
# minidl (resident) / the faster of torch's two (below 1: minidl is faster).
if [ ${#epoch_rows[@]} -gt 0 ]; then
"$python" - "${epoch_rows[@]}" <<'EOF' | tee "$out/epochs.md"
import json
import sys


def steady(path):
    try:
        with open(path) as f:
            records = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return None, None
    later = [r["train_seconds"] for r in records[1:]]
    if not later:
        return None, None
    return sum(later) / len(later), records[-1].get("test_accuracy")


def cell(result):
    seconds, accuracy = result
    return "failed / not run" if seconds is None else "%.3f s (%.2f%%)" % (seconds, 100 * accuracy)


print("| MNIST epoch, batch | minidl, resident | minidl, --host-data | minidl, --no-cuda-graph | torch, data on GPU"
      " | torch, DataLoader | minidl / faster torch |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for row in sys.argv[1:]:
    batch, *paths = row.split("|")
    results = [steady(p) for p in paths]
    torch_times = [r[0] for r in results[3:] if r[0] is not None]
    ratio = "%.2f" % (results[0][0] / min(torch_times)) if results[0][0] is not None and torch_times else "-"
    print("| %s | %s | %s |" % (batch, " | ".join(cell(r) for r in results), ratio))
EOF
fi
