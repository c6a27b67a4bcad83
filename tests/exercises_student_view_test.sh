#!/usr/bin/env bash
# tests/exercises_student_view_test.sh — the student's view of the exercises (scripts/check-exercises.py): the
# committed stubs give no answers away, and each exercise's README, stub and checker name the same exercise
# and functions. Then the checker is shown to catch each kind of break, planted in a copy of exercises/.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
check="$root/scripts/check-exercises.py"

python3 "$check"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/exercises" "$tmp/exercises"
ex="$tmp/exercises"
# A stated prediction where the README asks for one (issue 28, error 11).
sed -i 's|^// floats (12n bytes)\..*|// floats (12n bytes), a third of the traffic, so it should take about a third of the time.|' \
  "$ex/10-fused-elementwise/stub/sigmoid_backward.cpp"
# The solution's loop, commented into the stub.
printf '// for (int64_t i = 0; i < n; ++i) out[i] = g[i] * y[i] * (T(1) - y[i]);\n' \
  >> "$ex/10-fused-elementwise/stub/sigmoid_backward.cpp"
# A checker that prints another title than its README (issue 28, error 7).
sed -i 's|{4, "a register- and cache-blocked matmul on the CPU"|{4, "a cache-tiled matmul on the CPU"|' \
  "$ex/04-tiled-matmul/check.cpp"
# A README that no longer names the function the stub asks for.
sed -i 's|`student_hypot`, ||' "$ex/02-gradient-formulas/README.md"
# A bare/ version whose file is not the stub's (the committed bare/ file moved to another name).
mkdir -p "$ex/03-dispatch/bare" && rm -f "$ex/03-dispatch/bare/"* &&
  cp "$ex/03-dispatch/stub/relu_dispatch.cpp" "$ex/03-dispatch/bare/relu.cpp"

if out="$(python3 "$check" --root "$tmp")"; then
  echo "FAIL: the planted breaks were not reported:"; echo "$out"; exit 1
fi
for want in "10-fused-elementwise: stub/sigmoid_backward.cpp states a prediction the README asks the student to make" \
            "10-fused-elementwise: stub/sigmoid_backward.cpp holds a line of the solution" \
            "04-tiled-matmul: check.cpp's title \"a cache-tiled matmul on the CPU\" is not the README's" \
            "02-gradient-formulas: README.md does not name \`student_hypot\`" \
            "03-dispatch: bare/ holds ['relu.cpp'] but stub/ holds ['relu_dispatch.cpp']"; do
  grep -qF -- "$want" <<< "$out" || { echo "FAIL: the report lacks: $want"; echo "$out"; exit 1; }
done
echo "exercises_student_view_test: every exercise passes; each planted break is caught"
