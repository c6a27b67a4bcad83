#!/usr/bin/env bash
# scripts/sgemm-v8-sweep.sh — times every tile configuration of the matmul kernel v8_tuned
# (cuda/matmul_v8_tuned.cu, docs/gemm-ladder.md) at 4096^3 and 2048^3 on a GPU, against cuBLAS and
# v4_warptiled measured in the same bench call, and prints one line per configuration: its GFLOP/s and
# fraction of cuBLAS at each size (and v4's, for comparison). One `minidl bench` call per configuration,
# MINIDL_V8_CONFIG set, each under `timeout 60`; logs and JSON Lines go to $OUT (default /tmp/minidl-v8-sweep).
#   BUILD=build-h200 bash scripts/sgemm-v8-sweep.sh [CONFIG...]
# Without arguments, every configuration below (the names of matmul_v8_tuned.cu's header, in its order:
# an index works too). A configuration the kernel does not know fails its bench call with the valid list.
set -u
bin=${BUILD:-build}/bin
out=${OUT:-/tmp/minidl-v8-sweep}
mkdir -p "$out"

configs=("$@")
if [ ${#configs[@]} -eq 0 ]; then
  configs=(128x128x16_8x8_w64x32_256t_2b 128x128x8_8x8_w64x32_256t_2b_db 128x128x16_8x8_w64x32_256t_1b_db
           128x128x8_8x8_w32x64_256t_2b_db 128x128x16_8x16_w64x64_128t_2b_db 128x128x8_8x16_w64x64_128t_2b_db
           128x256x8_8x16_w64x64_256t_1b_db 128x256x16_8x16_w64x64_256t_1b_db 256x128x8_8x16_w64x64_256t_1b_db)
fi

# One line from a bench's JSON Lines: per shape, v8_tuned's and v4_warptiled's GFLOP/s and fraction of
# cuBLAS (the bench's vs_vendor), and cuBLAS's own GFLOP/s; WRONG when the bench found a wrong output.
summary() {  # summary CONFIG FILE.jsonl
  python3 - "$1" "$2" <<'PY'
import json, sys
config, path = sys.argv[1], sys.argv[2]
rows = [json.loads(line) for line in open(path)]
rows = [r for r in rows if r.get("record") == "kernel"]
parts = []
for shape in dict.fromkeys(r["shape"] for r in rows):  # in the bench's order
    by = {r["kernel"]: r for r in rows if r["shape"] == shape}
    def cell(name):
        r = by.get(name)
        if r is None or r["status"] != "ok":
            return "%s -" % name
        vs = "%.1f%%" % (100 * r["vs_vendor"]) if r.get("vs_vendor") is not None else "-"
        return "%s %.0f GFLOP/s %s%s" % (name, r["gflops"], vs, " WRONG" if r.get("wrong") else "")
    cublas = by.get("cublas")
    parts.append("%s: %s | %s | cublas %s" % (shape, cell("v8_tuned"), cell("v4_warptiled"),
                 "%.0f" % cublas["gflops"] if cublas and cublas["status"] == "ok" else "-"))
print("%-36s %s" % (config, "   ".join(parts)))
PY
}

echo "v8_tuned sweep: $(date -u +%FT%TZ), bin $bin, logs in $out"
for config in "${configs[@]}"; do
  log="$out/v8_$config.txt"
  rm -f "$log.jsonl"
  MINIDL_V8_CONFIG=$config timeout 60 "$bin/minidl" bench --device cuda --op matmul \
    --shape matmul:4096x4096x4096 --shape matmul:2048x2048x2048 \
    --kernel cublas --kernel v4_warptiled --kernel v8_tuned --json "$log.jsonl" >"$log" 2>&1
  rc=$?
  if [ $rc -ne 0 ] || [ ! -s "$log.jsonl" ]; then
    echo "$config: bench exit $rc (log $log):"
    tail -n 5 "$log"
    continue
  fi
  summary "$config" "$log.jsonl"
done
