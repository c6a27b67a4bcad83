#!/usr/bin/env bash
# Puts the four MNIST files (gzip-compressed IDX) into DEST:
#   bash scripts/get-mnist.sh DEST        (`make data` runs it with DEST = data/mnist)
#
# Where they come from, in order: a local copy in $MINIDL_DATA/mnist or ../shared/data/mnist (relative to
# the repository root), else a download from a public mirror. Each file is checked by its *decompressed*
# size (the local copy's train-images file is recompressed, so its .gz differs from the original in
# size; the content is what matters). Files already in DEST that pass the check are left alone, so the
# script can be run any number of times.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: bash scripts/get-mnist.sh DEST" >&2
  exit 2
fi
dest=$1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# name -> decompressed size in bytes (16-byte header + 28*28 bytes per image; 8-byte header + 1 per label)
declare -A expected=(
  [train-images-idx3-ubyte.gz]=47040016
  [train-labels-idx1-ubyte.gz]=60008
  [t10k-images-idx3-ubyte.gz]=7840016
  [t10k-labels-idx1-ubyte.gz]=10008
)
files=(train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz)
mirrors=(
  https://ossci-datasets.s3.amazonaws.com/mnist
  https://storage.googleapis.com/cvdf-datasets/mnist
  https://yann.lecun.com/exdb/mnist
)

local_dirs=()
[ -n "${MINIDL_DATA:-}" ] && local_dirs+=("$MINIDL_DATA/mnist")
local_dirs+=("$root/../shared/data/mnist")

# Prints why `path` is not a good copy of `name`, or nothing when it is.
problem() {
  local path=$1 name=$2 size
  if [ ! -f "$path" ]; then echo "missing"; return; fi
  size=$( (gzip -dc "$path" 2>/dev/null || true) | wc -c)
  if ! gzip -t "$path" 2>/dev/null; then
    echo "not a valid gzip file (damaged or truncated; it decompresses to $size bytes before the error)"
    return
  fi
  if [ "$size" -ne "${expected[$name]}" ]; then
    echo "the wrong file: it decompresses to $size bytes, expected ${expected[$name]}"
  fi
}

# Downloads url to out; on failure prints the tool's one-line reason and returns non-zero.
download() {
  local url=$1 out=$2 err
  if command -v curl >/dev/null 2>&1; then
    err=$(curl -fsSL --retry 1 --connect-timeout 20 -o "$out" "$url" 2>&1) && return 0
  elif command -v wget >/dev/null 2>&1; then
    err=$(wget -q --tries=2 --timeout=20 -O "$out" "$url" 2>&1) && return 0
  else
    err="neither curl nor wget is installed"
  fi
  echo "get-mnist: download failed: ${err:-unknown error}" | head -n 1 >&2
  return 1
}

mkdir -p "$dest"
declare -A unreachable=()
failed=0
for name in "${files[@]}"; do
  target="$dest/$name"
  why=$(problem "$target" "$name")
  if [ -z "$why" ]; then
    echo "get-mnist: $target is already good (${expected[$name]} bytes decompressed)"
    continue
  fi
  [ "$why" != "missing" ] && echo "get-mnist: $target is $why; fetching it again"

  got=""
  for dir in "${local_dirs[@]}"; do
    [ -f "$dir/$name" ] || continue
    why=$(problem "$dir/$name" "$name")
    if [ -n "$why" ]; then
      echo "get-mnist: ignoring the local copy $dir/$name: $why" >&2
      continue
    fi
    cp "$dir/$name" "$target.part" && chmod 644 "$target.part" && mv "$target.part" "$target"
    echo "get-mnist: copied $name from $dir"
    got=yes
    break
  done

  if [ -z "$got" ]; then
    for mirror in "${mirrors[@]}"; do
      if [ -n "${unreachable[$mirror]:-}" ]; then continue; fi
      echo "get-mnist: downloading $mirror/$name"
      if ! download "$mirror/$name" "$target.part"; then
        unreachable[$mirror]=yes  # don't try it again for the other files
        rm -f "$target.part"
        continue
      fi
      why=$(problem "$target.part" "$name")
      if [ -n "$why" ]; then
        echo "get-mnist: the file from $mirror is $why; trying the next mirror" >&2
        rm -f "$target.part"
        continue
      fi
      mv "$target.part" "$target"
      got=yes
      break
    done
  fi

  if [ -z "$got" ]; then
    echo "get-mnist: could not get $name: no good local copy (looked in: ${local_dirs[*]}) and no mirror could provide it" >&2
    failed=1
  fi
done

if [ "$failed" -ne 0 ]; then
  echo "get-mnist: FAILED; put the four files (${files[*]}) into $dest by hand, or set MINIDL_DATA" >&2
  exit 1
fi
echo "get-mnist: the four MNIST files in $dest are good"
