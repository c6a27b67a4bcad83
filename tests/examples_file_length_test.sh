#!/usr/bin/env bash
# No file of examples/ is longer than 400 lines (issue 24): the examples are read top to bottom, as the
# course's programs, so a file that grows past that is split by concern into files named after what they
# hold (as examples/mnist/ and examples/captcha/ are). Every .cpp, .h and .cu below examples/ counts; a
# failure names each file that is too long and its length. First checks itself on a small tree.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
limit=400

# "examples/PATH: N lines (limit 400)" for every file below TREE/examples longer than the limit.
too_long() {
  local tree="$1" file lines
  while IFS= read -r -d '' file; do
    lines="$(awk 'END { print NR }' "$file")"  # counts a last line without a newline too
    if (( lines > limit )); then echo "${file#"$tree"/}: $lines lines (limit $limit)"; fi
  done < <(find "$tree/examples" -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' \) -print0 | sort -z)
}

# The check itself: a file of exactly 400 lines passes, one of 401 in a subfolder is named, other files
# are not counted.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/examples/a/b"
seq 400 > "$tmp/examples/a/at_limit.cpp"
seq 401 > "$tmp/examples/a/b/over.h"
seq 401 > "$tmp/examples/a/notes.md"
self="$(too_long "$tmp")"
if [[ "$self" != "examples/a/b/over.h: 401 lines (limit $limit)" ]]; then
  echo "FAIL: the check itself reports the wrong files in a test tree:"; echo "$self"; exit 1
fi

report="$(too_long "$root")"
if [[ -n "$report" ]]; then
  echo "FAIL: files of examples/ longer than $limit lines (split them by concern):"
  echo "$report"
  exit 1
fi
echo "examples_file_length_test: every .cpp, .h and .cu of examples/ has at most $limit lines"
