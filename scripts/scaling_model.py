#!/usr/bin/env python3
"""scripts/scaling_model.py — predicted data-parallel step time and efficiency of `mnist train` and
`captcha train` on 1-8 GPUs of one H200 host and on 2-16 such hosts (docs/distributed.md, "Scaling model").

    python3 scripts/scaling_model.py [--allreduce FILE] [--bench FILE]...

--allreduce: JSON lines of scripts/allreduce_bw.py (any GPU counts of one host); --bench: JSON lines of
`mnist bench` / `captcha bench` (plain, no --distributed) at the per-GPU batches, e.g. 64, 32, 16, 8.
Every number that is not measured falls back to an assumption, and the table says which was used.

The model, per training step with n GPUs and per-GPU batch b:
    T_ar(S, n)  = L(n) + 2 (n - 1) / n * S / busbw(n)          ring all-reduce of S bytes (0 for n = 1)
    buckets S_1 .. S_k in launch order (dist/data_parallel.h); backward T_b = 2/3 T_c(b) (assumed)
    exposed(n)  = T_ar(S_k) + max(0, sum_{i<k} T_ar(S_i) - beta * T_b)
                  (the last bucket, the first layers, starts when backward ends; the others run while
                   the fraction beta of backward still to do runs; beta assumed 0.5)
    T_step(n)   = T_c(b) * (1 + o) + exposed(n)        o: the one-rank overhead of --distributed (measured)
Weak scaling (b fixed at the default batch): efficiency = T_c(b) / T_step(n).
Strong scaling (the global batch B fixed, b = B / n): efficiency = T_c(B) / (n * T_step(n)).
Between hosts (8 GPUs each, m hosts): busbw = the inter-host busbw, L = L(8) + 2 (m - 1) alpha.
"""
import argparse
import json

# Gradient buckets in launch order (bytes), as the programs print them at start (4 MiB buckets).
MODELS = {
    "mnist": {"batch": 64, "buckets": [4724264, 75264], "step_ms": 0.73,
              "step_source": "measured: mnist bench, batch 64, H200 (docs/results/README.md)"},
    "captcha": {"batch": 128, "buckets": [5557396, 4722688, 2331520], "step_ms": 20.4,
                "step_source": "measured: captcha bench, batch 128, H200 (docs/results/README.md)"},
}

# Assumptions where nothing is measured: NOMINAL figures from public specifications, not measurements.
NOMINAL = {
    "busbw_intra": 360e9,  # NVLink 4: 450 GB/s per direction per GPU (H200 SXM spec); assume 80% achieved
    "latency_intra": 15e-6,  # a small all-reduce inside one host (assumed)
    "busbw_inter": 40e9,  # one 400 Gb/s (50 GB/s) NIC per GPU (DGX/HGX H200 style); assume 80% achieved
    "alpha_inter": 5e-6,  # per ring step between hosts (assumed)
}
BETA = 0.5
GPUS_PER_HOST = 8


def load_jsonl(paths):
    rows = []
    for path in paths or []:
        with open(path) as f:
            rows += [json.loads(line) for line in f if line.strip()]
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--allreduce", action="append", help="scripts/allreduce_bw.py JSON lines")
    parser.add_argument("--bench", action="append", help="mnist/captcha bench JSON lines (plain runs)")
    parser.add_argument("--overhead", action="append", default=[], metavar="MODEL=FRACTION",
                        help="one-rank overhead of --distributed, e.g. mnist=0.012 (scripts/dist-h200.sh measures it)")
    args = parser.parse_args()
    overhead = {m: 0.0 for m in MODELS}
    for item in args.overhead:
        model, fraction = item.split("=")
        overhead[model] = float(fraction)

    measured_ar = {}  # (n, bytes) -> seconds
    for r in load_jsonl(args.allreduce):
        measured_ar[(r["world_size"], r["bytes"])] = r["seconds"]
    step_ms = {}  # (model, batch) -> ms
    for r in load_jsonl(args.bench):
        if r.get("world_size", 0) == 0 and r.get("device", "").startswith("cuda") and not r.get("tf32"):
            step_ms[(r["model"], r["batch"])] = r["mean_ms"]

    def busbw_latency(n):
        """busbw and latency inside one host for n GPUs: from the largest and smallest measured sizes."""
        sizes = sorted(b for (w, b) in measured_ar if w == n)
        if len(sizes) >= 2:
            big, small = sizes[-1], sizes[0]
            return big * 2 * (n - 1) / n / measured_ar[(n, big)], measured_ar[(n, small)], "measured"
        return NOMINAL["busbw_intra"], NOMINAL["latency_intra"], "nominal"

    def allreduce_time(size, n, hosts):
        if n == 1:
            return 0.0, "-"
        if hosts == 1 and (n, size) in measured_ar:
            return measured_ar[(n, size)], "measured"
        bw, lat, src = busbw_latency(min(n, GPUS_PER_HOST))
        if hosts > 1:
            bw, lat = NOMINAL["busbw_inter"], lat + 2 * (hosts - 1) * NOMINAL["alpha_inter"]
            src = "nominal"
        return lat + 2 * (n - 1) / n * size / bw, src

    def compute_ms(model, batch):
        m = MODELS[model]
        if (model, batch) in step_ms:
            return step_ms[(model, batch)], "measured"
        if batch == m["batch"]:
            return m["step_ms"], "docs/results/README.md"
        return m["step_ms"] * batch / m["batch"], "assumed ideal"  # optimistic: small batches use a GPU worse

    for model, m in MODELS.items():
        print(f"\n### {model}: {sum(m['buckets']) / 1e6:.2f} MB of gradients in {len(m['buckets'])} buckets; "
              f"T_c({m['batch']}) = {m['step_ms']} ms ({m['step_source']})\n")
        print("| GPUs (hosts) | all-reduce per step | exposed | weak: step, efficiency | "
              "strong (global batch %d): per-GPU batch, step, efficiency | sources |" % m["batch"])
        print("|---|---|---|---|---|---|")
        configs = [(n, 1) for n in (1, 2, 4, 8)] + [(GPUS_PER_HOST * h, h) for h in (2, 4, 8, 16)]
        for n, hosts in configs:
            sources = set()
            times = []
            for s in m["buckets"]:
                t, src = allreduce_time(s, n, hosts)
                times.append(t)
                sources.add(f"all-reduce {src}")
            total = sum(times)

            def step(batch):
                tc, src = compute_ms(model, batch)
                sources.add(f"T_c({batch}) {src}")
                t_b = 2 / 3 * tc / 1000
                exposed = times[-1] + max(0.0, sum(times[:-1]) - BETA * t_b) if n > 1 else 0.0
                return tc / 1000 * (1 + overhead[model]) + exposed, exposed, tc / 1000

            weak, exposed, tc = step(m["batch"])
            line = (f"| {n} ({hosts}) | {total * 1e6:.0f} us | {exposed * 1e6:.0f} us | "
                    f"{weak * 1e3:.3f} ms, {tc / weak:.0%} |")
            if m["batch"] % n == 0 and m["batch"] // n >= 1:
                b = m["batch"] // n
                strong, _, _ = step(b)
                line += f" {b}, {strong * 1e3:.3f} ms, {m['step_ms'] / 1000 / (n * strong):.0%} |"
            else:
                line += " (batch < GPUs) |"
            print(line + " " + "; ".join(sorted(sources)) + " |")
    print(f"\nAssumed: beta = {BETA}, backward = 2/3 of the step, one-rank overhead o = "
          + ", ".join(f"{m} {o:.1%}" for m, o in overhead.items()) + "; "
          "nominal figures: " + ", ".join(f"{k} = {v:g}" for k, v in NOMINAL.items()))


if __name__ == "__main__":
    main()
