#!/usr/bin/env bash
# The include rules of docs/architecture.md, checked by scripts/check-layering.py: the tree follows them,
# and the checker does catch an include that reaches up (a small tree with one, built here).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
check="$root/scripts/check-layering.py"

python3 "$check"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/core" "$tmp/nn" "$tmp/examples/data"
printf '#include "core/tensor.h"\n' > "$tmp/nn/layers.cpp"
printf '#include "core/tensor.h"\n#include "examples/data/mnist_data.h"\n' > "$tmp/nn/checkpoint.cpp"
if out="$(python3 "$check" --root "$tmp")"; then
  echo "FAIL: nn/ including examples/ was not reported"; exit 1
fi
grep -q "nn/checkpoint.cpp:2: nn/ includes examples/data/mnist_data.h" <<< "$out" || {
  echo "FAIL: the report does not name the file, line and include:"; echo "$out"; exit 1; }
echo "layering_test: the tree follows the rules; an upward include is caught"
