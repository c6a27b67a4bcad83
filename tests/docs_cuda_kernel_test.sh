#!/usr/bin/env bash
# tests/docs_cuda_kernel_test.sh BIN_DIR — runs the commands of docs/adding-a-kernel.md's CUDA section that
# need no GPU, taken from the page itself (its "$ " lines), and checks their outputs against the page:
#   - the ptxas report of cuda/matmul_v1_naive.cu (`nvcc ... -Xptxas -v`): registers and no spills for
#     each instantiation (when nvcc is installed);
#   - `minidl kernels --op matmul --device cuda` lists v1_naive at priority 0 (a build with CUDA kernels);
#   - `minidl_tests "[cuda][matmul]"` passes on a GPU, or exits 77 listing its cases as skipped;
#   - `mnist bench --device cpu ... --kernel matmul=v1_naive` prints the page's warning line;
#   - scripts/gpu-check.sh takes the page's flags.
# Exit 77 (ctest: skipped) when neither nvcc nor a build with CUDA kernels is there. The listing of the
# kernel file is checked by the [guide] case of tests/test_kernel_lab.cpp.
set -u
bin=${1:?usage: docs_cuda_kernel_test.sh BIN_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
page=$root/docs/adding-a-kernel.md
cd "$root"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=1
ran=0

fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log; do [ -e "$f" ] && { echo "--- $f"; tail -n 12 "$f"; }; done
  exit 1
}

# The page's command starting with PREFIX (after "$ "), with build/bin/ replaced by BIN_DIR.
command_of() {
  local line
  line=$(grep -m1 -F "\$ $1" "$page") || fail "the page has no command starting with '$1'"
  line=${line#\$ }
  echo "${line//build\/bin\//$bin/}"
}

# 1. The register and spill report.
[ -x /usr/local/cuda/bin/nvcc ] && PATH=$PATH:/usr/local/cuda/bin
if command -v nvcc >/dev/null 2>&1; then
  bash -c "$(command_of "nvcc ")" >"$dir/ptxas.log" 2>&1 || fail "the nvcc command of the page"
  [ "$(grep -c "Compiling entry function 'void minidl::(anonymous namespace)::matmul_naive_kernel<" "$dir/ptxas.log")" -eq 8 ] ||
    fail "ptxas did not report the 8 instantiations of matmul_naive_kernel"
  [ "$(grep -c "Used [0-9]* registers" "$dir/ptxas.log")" -eq 8 ] || fail "no register count for each instantiation"
  [ "$(grep -c " 0 bytes spill stores, 0 bytes spill loads" "$dir/ptxas.log")" -eq 8 ] || fail "a spill, or no spill line"
  ran=1
else
  echo "note: no nvcc here: the ptxas report is not checked"
fi

# 2. to 4.: a build with CUDA kernels (no GPU needed).
if "$bin/minidl" kernels --op matmul --device cuda | grep -q " v1_naive "; then
  bash -c "$(command_of "build/bin/minidl kernels --op matmul --device cuda")" >"$dir/kernels.log" 2>&1 ||
    fail "minidl kernels"
  grep -Eq "^matmul +forward +cuda +v1_naive +0 " "$dir/kernels.log" || fail "v1_naive is not listed at priority 0"
  grep -Fq "$(grep -m1 "^matmul .* v1_naive " "$page")" "$dir/kernels.log" || fail "the page's v1_naive row differs"

  bash -c "$(command_of "build/bin/minidl_tests \"[cuda][matmul]\"")" >"$dir/tests.log" 2>&1
  rc=$?
  if [ "$rc" -eq 77 ]; then
    grep -q "^SKIPPED.*no usable GPU" "$dir/tests.log" || fail "the GPU tests exited 77 without saying why"
    grep -q "^  cuda matmul kernels match the naive CPU kernel" "$dir/tests.log" || fail "the skipped cases are not listed"
  elif [ "$rc" -ne 0 ]; then
    fail "minidl_tests \"[cuda][matmul]\" exited $rc"
  fi

  bash -c "$(command_of "build/bin/mnist bench --device cpu")" >"$dir/bench.log" 2>&1 || fail "mnist bench"
  warning=$(grep -m1 "^mnist bench: warning: --kernel matmul=v1_naive" "$page") || fail "the page shows no warning line"
  grep -qxF "$warning" "$dir/bench.log" || fail "the warning differs from the page's: $warning"
  ran=1
else
  echo "note: this build has no CUDA kernels: the table, the tests and the warning are not checked"
fi

# 5. The page's gpu-check.sh flags exist.
help=$(bash scripts/gpu-check.sh --help) || fail "scripts/gpu-check.sh --help"
for flag in $(command_of "scripts/gpu-check.sh" | grep -o -- "--[a-z]*"); do
  echo "$help" | grep -q -- "$flag" || fail "scripts/gpu-check.sh has no $flag"
done

if [ "$ran" -eq 0 ]; then
  echo "SKIPPED: no nvcc and no CUDA kernels in this build: nothing of the CUDA section can run here"
  exit 77
fi
echo "docs_cuda_kernel: ok"
