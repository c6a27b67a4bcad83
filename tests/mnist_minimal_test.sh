#!/usr/bin/env bash
# tests/mnist_minimal_test.sh MNIST_MINIMAL_BINARY — examples/mnist/minimal.cpp, the course's one-page
# program, runs to the end on a small stand-in for MNIST (tests/mnist_fixture.pl, found through
# MINIDL_DATA as the program has no flags): it exits 0, its train loss falls from the first epoch to the
# last, and its test accuracy is well above chance (10%).
set -u
minimal=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # absolute: it runs in a scratch folder
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=2

fail() {
  echo "FAIL: $*"
  [ -e "$dir/out.log" ] && { echo "--- output"; cat "$dir/out.log"; }
  exit 1
}

perl "$here/mnist_fixture.pl" "$dir/mnist" 1000 200 || fail "writing the fixture"
(cd "$dir" && MINIDL_DATA="$dir" "$minimal") > "$dir/out.log" 2>&1 || fail "exit status $? (expected 0)"
first=$(perl -ne 'print "$1\n" if /^epoch 1: train loss ([0-9.]+)$/' "$dir/out.log")
last=$(perl -ne 'print "$1\n" if /^epoch 3: train loss ([0-9.]+)$/' "$dir/out.log")
accuracy=$(perl -ne 'print "$1\n" if /^test accuracy: ([0-9.]+)%$/' "$dir/out.log")
[ -n "$first" ] && [ -n "$last" ] && [ -n "$accuracy" ] || fail "no epoch 1, epoch 3 or test accuracy line"
perl -e "exit !($last < $first)" || fail "the train loss did not fall: $first at epoch 1, $last at epoch 3"
perl -e "exit !($accuracy > 30)" || fail "test accuracy $accuracy% is not above chance (10%) by a margin"
echo "PASS: train loss $first -> $last, test accuracy $accuracy%"
