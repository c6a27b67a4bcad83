#!/usr/bin/env bash
# scripts/gpu-check.sh — checks a CUDA build of minidl on a machine with a GPU. Run it from the repo root
# after building (or carrying) build-cuda/:
#
#   scripts/gpu-check.sh [--rebuild] [--memcheck] [--racecheck] [--build DIR]
#
# --rebuild configures and builds DIR first (for when a carried build does not run there). Before the
# steps, shared libraries the binaries cannot find (cuDNN, cuBLAS) are looked for in the usual places,
# Python's nvidia-* wheels included, and added to LD_LIBRARY_PATH. Steps: nvidia-smi, `minidl info`, `minidl kernels`, the whole test binary (CPU and GPU cases), and on
# request compute-sanitizer: memcheck over the GPU tests, racecheck over the kernels that use shared
# memory. Every step runs even when an earlier one failed; a summary at the end lists the failures and the
# exit status is the number of failed steps. When $OUT is set, each step's output is also written to
# $OUT/<step>.log. STEP_TIMEOUT (seconds, default 540) bounds each step.
set -u

build=build-cuda
memcheck=0
racecheck=0
rebuild=0
while [ $# -gt 0 ]; do
  case "$1" in
    --memcheck) memcheck=1 ;;
    --racecheck) racecheck=1 ;;
    --rebuild) rebuild=1 ;;
    --build) shift; build=${1:?--build needs a directory} ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

log_dir=${OUT:-}
if [ -n "$log_dir" ]; then mkdir -p "$log_dir"; fi
step_timeout=${STEP_TIMEOUT:-540}
passed=()
failed=()

# step NAME COMMAND...: runs the command (under `timeout` when available), tees its output to the log.
step() {
  local name=$1
  shift
  echo
  echo "==== [$name] $*"
  local start=$SECONDS rc
  local runner=()
  if command -v timeout >/dev/null 2>&1; then runner=(timeout "$step_timeout"); fi
  if [ -n "$log_dir" ]; then
    "${runner[@]}" "$@" 2>&1 | tee "$log_dir/$name.log"
    rc=${PIPESTATUS[0]}
  else
    "${runner[@]}" "$@"
    rc=$?
  fi
  local took=$((SECONDS - start))
  if [ "$rc" -eq 0 ]; then
    passed+=("$name (${took}s)")
  else
    local why="exit $rc"
    [ "$rc" -eq 124 ] && why="timed out after ${step_timeout}s"
    failed+=("$name ($why, ${took}s)")
  fi
  echo "==== [$name] exit $rc after ${took}s"
}

if [ "$rebuild" -eq 1 ]; then
  step configure cmake -S . -B "$build"
  step build cmake --build "$build" -j "$(nproc)"
fi

bin="$build/bin"
if [ ! -x "$bin/minidl" ] || [ ! -x "$bin/minidl_tests" ]; then
  echo "gpu-check: $bin/minidl or $bin/minidl_tests is missing; build first:" >&2
  echo "  cmake -S . -B $build && cmake --build $build -j" >&2
fi

# Libraries the loader cannot find: look for them and extend LD_LIBRARY_PATH.
missing=$(ldd "$bin/minidl_tests" 2>/dev/null | awk '/not found/ {print $1}')
if [ -n "$missing" ]; then
  echo "gpu-check: the loader cannot find: $(echo $missing | tr '\n' ' ')"
  search=(/usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu)
  if command -v python3 >/dev/null 2>&1; then
    for site in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
      for d in "$site"/nvidia/*/lib; do [ -d "$d" ] && search+=("$d"); done
    done
  fi
  for lib in $missing; do
    for d in "${search[@]}"; do
      if [ -e "$d/$lib" ]; then
        echo "gpu-check: found $lib in $d"
        export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        break
      fi
    done
  done
  still=$(ldd "$bin/minidl_tests" 2>/dev/null | awk '/not found/ {print $1}')
  [ -n "$still" ] && echo "gpu-check: still missing: $(echo $still | tr '\n' ' ')"
fi

# compute-sanitizer ships with the toolkit, which is not always on PATH.
sanitizer=$(command -v compute-sanitizer || true)
[ -z "$sanitizer" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] && sanitizer=/usr/local/cuda/bin/compute-sanitizer
[ -z "$sanitizer" ] && sanitizer=compute-sanitizer  # not found: the step fails and says so

step nvidia-smi nvidia-smi
step info "$bin/minidl" info
step kernels "$bin/minidl" kernels
step tests "$bin/minidl_tests" --durations yes
if [ "$memcheck" -eq 1 ]; then
  step memcheck "$sanitizer" --tool memcheck --error-exitcode 1 --leak-check no "$bin/minidl_tests" "[cuda]"
fi
if [ "$racecheck" -eq 1 ]; then
  # The kernels with shared memory (block reductions): reductions, gather, softmax, cross-entropy.
  step racecheck "$sanitizer" --tool racecheck --error-exitcode 1 "$bin/minidl_tests" \
    "cuda reductions*,cuda softmax*,cuda cross_entropy*"
fi

echo
echo "==== summary"
for s in "${passed[@]+"${passed[@]}"}"; do echo "  ok      $s"; done
for s in "${failed[@]+"${failed[@]}"}"; do echo "  FAILED  $s"; done
[ -n "$log_dir" ] && echo "  logs in $log_dir"
exit "${#failed[@]}"
