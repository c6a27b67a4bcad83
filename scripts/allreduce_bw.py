#!/usr/bin/env python3
"""scripts/allreduce_bw.py — NCCL all-reduce time and bandwidth between the GPUs of this host, for the
scaling model of docs/distributed.md (scripts/scaling_model.py reads the JSON it writes).

    torchrun --standalone --nproc_per_node=N scripts/allreduce_bw.py [--json FILE]

It uses PyTorch's NCCL process group, i.e. the same NCCL library minidl's nccl backend loads, because a
host without Open MPI cannot start a multi-process minidl job (dist/process.h). For each message size
(float32 sums, in place): 10 warm-up all-reduces, then 50 timed ones, each between CUDA events; the median.
    algbw = bytes / time        busbw = algbw * 2 (n - 1) / n      (nccl-tests' convention)
busbw is the per-GPU link bandwidth a ring all-reduce achieves, the number the model's formula takes.
The sizes include the gradient buckets of `mnist train --distributed` and `captcha train --distributed`
(printed by those programs at start). Rank 0 prints a table and, with --json, one JSON line per size.
"""
import argparse
import json
import os
import statistics

import torch
import torch.distributed as dist

# Bytes: a tiny message (latency), powers of 4, and the gradient buckets of the two models (4 MiB buckets,
# dist/data_parallel.h), as `mnist train --distributed` and `captcha train --distributed` print them.
MNIST_BUCKETS = [5672, 4718592, 75264]
CAPTCHA_BUCKETS = [3198100, 2361344, 2361344, 4132864, 557952]
SIZES = sorted({8, 4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, *MNIST_BUCKETS, *CAPTCHA_BUCKETS})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write one JSON object per size to this file (rank 0)")
    parser.add_argument("--iters", type=int, default=50)
    args = parser.parse_args()

    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    rows = []
    for size in SIZES:
        x = torch.ones(max(1, size // 4), dtype=torch.float32, device="cuda")
        for _ in range(10):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(args.iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            dist.all_reduce(x)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1000.0)  # seconds
        t = statistics.median(times)
        nbytes = x.numel() * 4
        algbw = nbytes / t
        rows.append({"world_size": world, "bytes": nbytes, "seconds": t, "algbw_GBps": algbw / 1e9,
                     "busbw_GBps": algbw * 2 * (world - 1) / world / 1e9, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                     "device": torch.cuda.get_device_name()})
    if rank == 0:
        print(f"all-reduce (float32 sum, in place) over {world} GPU(s) of {rows[0]['device']}, NCCL {rows[0]['nccl']}")
        print(f"{'bytes':>12} {'time (us)':>10} {'algbw GB/s':>11} {'busbw GB/s':>11}")
        for r in rows:
            print(f"{r['bytes']:>12} {r['seconds'] * 1e6:>10.1f} {r['algbw_GBps']:>11.1f} {r['busbw_GBps']:>11.1f}")
        if args.json:
            with open(args.json, "a") as f:
                for r in rows:
                    f.write(json.dumps(r) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
