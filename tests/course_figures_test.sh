#!/usr/bin/env bash
# tests/course_figures_test.sh BIN_DIR — the course's figures that describe the code (marked
# `<!-- checked: ... -->`, scripts/check-course-figures.py) are what the built programs print, and the
# checker does catch a stale one (pages with a wrong count, a missing kernel and a row no run prints, here).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:?usage: course_figures_test.sh BIN_DIR}"
check="$root/scripts/check-course-figures.py"

python3 "$check" "$bin"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/docs/course"
cat > "$tmp/docs/course/01-stale.md" <<'EOF'
<!-- checked: minidl kernels --op copy --device cpu; count: ^copy\s+forward\s+cpu\s; text: {n} kernels serve it -->
Two kernels serve it on the CPU.

<!-- checked: minidl kernels --op copy --device cpu; each: ^copy\s+forward\s+cpu\s+(\S+); text: `\1` -->
`memcpy` and `naive`.

<!-- checked: minidl kernels --op copy --device cpu; lines: ^copy\s+forward\s+cpu\s+(\S+)\s+(\d+) -->
```text
copy           forward          cpu   memcpy                 10 *       CopyKernel
copy           forward          cpu   blocked                 7         CopyKernel
```
EOF
if out="$(python3 "$check" "$bin" --root "$tmp")"; then
  echo "FAIL: stale figures were not reported:"; echo "$out"; exit 1
fi
for want in "01-stale.md:1: .*so the text should say \"3 kernels serve it\"" \
            "01-stale.md:4: .*the text lacks \"\`rows_omp\`\"" \
            "01-stale.md:7: .*the output has no line like:" \
            "3 figures checked, 3 wrong"; do
  grep -q -- "$want" <<< "$out" || { echo "FAIL: the report lacks /$want/:"; echo "$out"; exit 1; }
done
echo "course_figures_test: every marked figure holds; stale ones are caught"
