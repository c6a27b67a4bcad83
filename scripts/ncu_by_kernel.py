#!/usr/bin/env python3
"""scripts/ncu_by_kernel.py — sums an Nsight Compute CSV by kernel: GPU time and DRAM traffic per step.

Reads the output of
    ncu --csv --print-units base --print-kernel-base function \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum PROGRAM ...
(one row per kernel launch and metric) and prints, for the kernels that took the most time, their
milliseconds per step, launches per step, and the DRAM bandwidth they reached (bytes read + written over
their time). The run profiled STEPS steps (warm-up included): every figure is divided by it.

    python3 scripts/ncu_by_kernel.py ncu.csv --steps 4 [--top 25]
"""
import argparse
import csv
import sys
from collections import defaultdict


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv_file")
    parser.add_argument("--steps", type=float, default=1.0, help="steps the profiled run made (default 1)")
    parser.add_argument("--top", type=int, default=25, help="kernels to print (default 25)")
    args = parser.parse_args()

    with open(args.csv_file, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu's own log lines are not CSV
    time_ns = defaultdict(float)
    dram_bytes = defaultdict(float)
    launches = defaultdict(set)
    for row in csv.DictReader(lines):
        name, metric = row.get("Kernel Name", ""), row.get("Metric Name", "")
        try:
            value = float(row.get("Metric Value", "").replace(",", ""))
        except ValueError:
            continue
        launches[name].add(row.get("ID"))
        if metric == "gpu__time_duration.sum":
            time_ns[name] += value
        elif metric in ("dram__bytes_read.sum", "dram__bytes_write.sum"):
            dram_bytes[name] += value
    if not time_ns:
        print("ncu_by_kernel: no gpu__time_duration.sum rows in " + args.csv_file, file=sys.stderr)
        return 1
    total_ms = sum(time_ns.values()) / 1e6 / args.steps
    print(f"{total_ms:.3f} ms of GPU time per step in {sum(len(v) for v in launches.values()) / args.steps:.0f} "
          f"launches; the kernels that took the most:")
    print(f"{'ms/step':>8} {'launches':>8} {'GB/s':>7}  kernel")
    for name in sorted(time_ns, key=time_ns.get, reverse=True)[: args.top]:
        ms = time_ns[name] / 1e6 / args.steps
        gbs = dram_bytes[name] / time_ns[name] if time_ns[name] > 0 else 0.0  # bytes per ns = GB/s
        print(f"{ms:8.3f} {len(launches[name]) / args.steps:8.1f} {gbs:7.0f}  {name[:100]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
