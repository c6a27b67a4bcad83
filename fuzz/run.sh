#!/usr/bin/env bash
# fuzz/run.sh [SECONDS] — `make fuzz`: builds the fuzz targets in build-fuzz (clang, libFuzzer,
# AddressSanitizer + UndefinedBehaviorSanitizer, CPU only, without MPI: no reader uses it) and runs
# each for SECONDS (default 60), one after the other, from its seeds (fuzz/corpus/<target>/) and the
# regression inputs (tests/fixtures/fuzz/<target>/). What a run adds to the corpus stays in
# build-fuzz/corpus/<target>/ (the next run starts from there); an input that crashes, hangs (over 20 s)
# or takes over 2 GB is written to build-fuzz/artifacts/ and the run fails, showing the report.
# fuzz/run.sh --corpus   rewrites the committed seeds, fuzz/corpus/, with fuzz_make_corpus.
# Environment: FUZZ_TARGETS (default: all six), JOBS (build threads), FUZZ_SEED (libFuzzer's -seed:
# a fixed seed replays the same mutations, as CI does; unset, each run explores new ones).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-fuzz
read -r -a targets <<<"${FUZZ_TARGETS:-idx image checkpoint image_csv captcha_folder bench_spec font}"

if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMINIDL_WITH_CUDA=OFF -DMINIDL_WITH_MPI=OFF \
    -DMINIDL_FUZZ=ON
fi
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target fuzz_make_corpus "${targets[@]/#/fuzz_}"

if [ "${1:-}" = "--corpus" ]; then
  rm -rf fuzz/corpus
  "$build/bin/fuzz_make_corpus" fuzz/corpus
  exit 0
fi

seconds=${1:-60}
export OMP_NUM_THREADS=1  # one thread per target: the readers are serial, and the machine may be shared
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
seed_flag=()
[ -n "${FUZZ_SEED:-}" ] && seed_flag=(-seed="$FUZZ_SEED")
failed=()
for t in "${targets[@]}"; do
  mkdir -p "$build/corpus/$t" "$build/artifacts"
  inputs=("$build/corpus/$t" "fuzz/corpus/$t")
  [ -d "tests/fixtures/fuzz/$t" ] && inputs+=("tests/fixtures/fuzz/$t")
  log="$build/fuzz-$t.log"
  echo "fuzz: $t for ${seconds} s (log: $log)"
  if "$build/bin/fuzz_$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 "${seed_flag[@]}" \
       -artifact_prefix="$build/artifacts/$t-" "${inputs[@]}" >"$log" 2>&1; then
    execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
    echo "fuzz: $t: ${execs:-?} executions, nothing found; corpus $(find "$build/corpus/$t" -type f | wc -l) inputs"
  else
    tail -n 40 "$log"
    echo "fuzz: $t: FOUND A BUG; the input is in $build/artifacts/ (replay: $build/bin/fuzz_$t FILE)"
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]}"
  exit 1
fi
