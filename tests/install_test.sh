#!/usr/bin/env bash
# tests/install_test.sh BUILD_DIR CXX — minidl as an installed library, used the two ways a user would:
#   1. `cmake --install BUILD_DIR` into a fresh temporary prefix, which is then moved (nothing installed
#      may point back into the source or build tree);
#   2. examples/standalone/ configured against it with find_package(minidl) (CMAKE_PREFIX_PATH), built
#      and run: it trains a two-layer network and exits non-zero unless it learned its toy problem;
#   3. with nothing but `pkg-config --cflags --libs minidl`: every installed header compiled as
#      <minidl/...> (none may need a file that was not installed, or include one outside minidl/), and a
#      one-file program that includes <minidl/minidl.h> compiled, linked and run (a 2x2 matmul with
#      known values, checked with eq).
# CXX is the compiler minidl was built with; $MINIDL_TEST_CXXFLAGS and $MINIDL_TEST_LDFLAGS, the options
# its build gave every target (a sanitizer build's), are given to these programs too. Everything is
# removed afterwards.
set -euo pipefail

build=$(cd "$1" && pwd)
cxx=$2
read -r -a extra_cxxflags <<<"${MINIDL_TEST_CXXFLAGS:-}"
read -r -a extra_ldflags <<<"${MINIDL_TEST_LDFLAGS:-}"
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/minidl-install-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Runs a command quietly; on failure prints what it said and stops.
quiet() {
  local log=$work/step.log
  if ! "$@" >"$log" 2>&1; then
    echo "FAILED: $*"
    cat "$log"
    exit 1
  fi
}
fail() {
  echo "FAILED: $*"
  exit 1
}

# ---- 1. install, then move the tree
quiet cmake --install "$build" --prefix "$work/installed"
mv "$work/installed" "$work/prefix"
prefix=$work/prefix
library=$(find "$prefix" -name libminidl.a)
[ -n "$library" ] || fail "no libminidl.a under the prefix"
libdir=$(dirname "$library")
for f in include/minidl/minidl.h include/minidl/core/tensor.h include/minidl/ops/ops.h include/minidl/nn/layers.h \
         bin/minidl; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
for f in cmake/minidl/minidlConfig.cmake cmake/minidl/minidlConfigVersion.cmake pkgconfig/minidl.pc; do
  [ -e "$libdir/$f" ] || fail "not installed: $(basename "$libdir")/$f"
done
if grep -rlF -e "$src" -e "$build" "$libdir/cmake" "$libdir/pkgconfig" "$prefix/include"; then
  fail "the files above name the source or build tree"
fi
# Installed headers name each other under minidl/ (the include path is <prefix>/include alone).
if grep -rnE '#include "(core|ops|nn|dist)/' "$prefix/include"; then
  fail "the installed headers above include a path outside minidl/"
fi
echo "installed: $(find "$prefix" -type f | wc -l) files"

# ---- 2. find_package(minidl): examples/standalone
quiet cmake -S "$src/examples/standalone" -B "$work/standalone" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="${MINIDL_TEST_CXXFLAGS:-}" -DCMAKE_EXE_LINKER_FLAGS="${MINIDL_TEST_LDFLAGS:-}"
quiet cmake --build "$work/standalone"
"$work/standalone/two_layer" || fail "examples/standalone: two_layer exited with status $?"

# ---- 3. pkg-config: every public header alone, then a program
export PKG_CONFIG_PATH=$libdir/pkgconfig
read -r -a flags <<<"$(pkg-config --cflags --libs minidl)"
(cd "$prefix/include/minidl" && find . -name '*.h' | sort) | while read -r header; do
  echo "#include <minidl/${header#./}>"
done >"$work/all_headers.cpp"
quiet "$cxx" -std=c++17 -fsyntax-only "${extra_cxxflags[@]}" "$work/all_headers.cpp" "${flags[@]}"
echo "headers: all $(wc -l <"$work/all_headers.cpp") compile with the installed include directory alone"
cat >"$work/matmul.cpp" <<'EOF'
#include <cstdio>
#include <minidl/minidl.h>
int main() {
  using namespace minidl;
  const Tensor a = from_vector({1, 2, 3, 4}, {2, 2}, Device::cpu());
  const Tensor product = matmul(a, a);
  const std::vector<float> c = product.to_vector<float>();  // [[7, 10], [15, 22]]
  const std::vector<float> want{7, 10, 15, 22};
  const double agree = mean(eq(product, from_vector(want, {2, 2}))).item<double>();  // 1: all four equal
  std::printf("pkg-config program: [[%g, %g], [%g, %g]], %g of them as expected\n", c[0], c[1], c[2], c[3], agree);
  return c == want && agree == 1.0 ? 0 : 1;
}
EOF
quiet "$cxx" -std=c++17 -O1 "${extra_cxxflags[@]}" "$work/matmul.cpp" -o "$work/matmul" "${flags[@]}" \
  "${extra_ldflags[@]}"
"$work/matmul" || fail "the pkg-config program printed a wrong product"
echo "PASSED: installed minidl used through find_package and pkg-config"
