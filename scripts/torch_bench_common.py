"""scripts/torch_bench_common.py: what torch_captcha_bench.py and torch_mnist_bench.py share.

The flags, the precision switches, the report and the timing method of `captcha bench` / `mnist bench`
(examples/bench_steps.h), so the two frameworks are timed the same way:
  1. --warmup steps (cuDNN autotuning and the caching allocator settle), then torch.cuda.synchronize().
  2. Throughput: --steps steps back to back, one synchronize at the end; mean = elapsed / steps.
  3. Latency: --steps more steps, each followed by a synchronize; the median and the minimum.
Host wall-clock time (time.perf_counter) around the synchronisations. Plain PyTorch, standard library only.
"""

import argparse
import contextlib
import json
import statistics
import time

import torch


def add_common_flags(parser, batch):
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default: auto)")
    parser.add_argument("--batch", type=int, default=batch, help="batch size (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed steps first (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=100,
                        help="timed steps per pass; there are two passes (default: %(default)s)")
    parser.add_argument("--tf32", type=int, choices=(0, 1), default=0,
                        help="1: let cuBLAS and cuDNN use TF32 tensor cores; 0: strict FP32 (default: 0)")
    parser.add_argument("--cudnn-benchmark", type=int, choices=(0, 1), default=1,
                        help="torch.backends.cudnn.benchmark: autotune convolution algorithms for the fixed "
                             "shapes, as minidl searches cuDNN's (default: 1)")
    parser.add_argument("--channels-last", action="store_true",
                        help="model and batch in channels_last memory format (NHWC convolutions)")
    parser.add_argument("--adam", choices=("default", "foreach", "single", "fused"), default="default",
                        help="torch.optim.Adam implementation: default (PyTorch's choice, foreach on a GPU), "
                             "foreach, single (a loop over tensors) or fused (default: default)")
    parser.add_argument("--amp", choices=("off", "bf16"), default="off",
                        help="bf16: the forward pass and the loss under torch.autocast(dtype=torch.bfloat16) (AMP: "
                             "convolutions, matmuls and the RNN in BF16, float32 weights and reductions; no loss "
                             "scaling for BF16), what minidl's --precision bf16 is compared with (default: off)")
    parser.add_argument("--compile", action="store_true",
                        help="run the model through torch.compile (default mode); the warm-up steps include the "
                             "compilation, so give it enough of them (default: eager)")
    parser.add_argument("--cuda-graph", action="store_true",
                        help="capture the whole step (forward, loss, backward and a capturable fused Adam) in one "
                             "torch.cuda.CUDAGraph after the warm-up and replay it (PyTorch's whole-network "
                             "capture recipe); GPU only (default: eager steps)")
    parser.add_argument("--seed", type=int, default=1, help="seed of initialisation, dropout and the batch")
    parser.add_argument("--json", default="", help="write the settings and times as one JSON object to FILE")


def check_flags(parser, args):
    if args.batch < 1:
        parser.error("--batch must be at least 1")
    if args.warmup < 0:
        parser.error("--warmup must be at least 0")
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    if args.cuda_graph and args.compile:
        parser.error("--cuda-graph and --compile are separate settings here (compile's own graphs are its "
                     "mode='reduce-overhead'); give one of them")
    if args.cuda_graph and args.adam not in ("default", "fused"):
        parser.error("--cuda-graph captures a capturable fused Adam; --adam %s cannot be captured" % args.adam)


def choose_device(flag):
    if flag == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(flag)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("torch bench: --device %s but torch.cuda.is_available() is False" % flag)
    return device


def set_precision(tf32):
    """Sets both TF32 switches explicitly (PyTorch's defaults differ: matmul off, cuDNN on)."""
    torch.backends.cuda.matmul.allow_tf32 = bool(tf32)
    torch.backends.cudnn.allow_tf32 = bool(tf32)


def autocast(args, device):
    """The context for the forward pass and the loss: BF16 autocast with --amp bf16, else nothing.
    Under --cuda-graph autocast's cast cache is off, as torch.cuda.graph requires."""
    if args.amp == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16, cache_enabled=not args.cuda_graph)
    return contextlib.nullcontext()


def maybe_compile(model, args):
    """torch.compile(model) with --compile (the optimizer keeps the original parameters), else model."""
    return torch.compile(model) if args.compile else model


def make_adam(params, lr, which, capturable=False):
    """torch.optim.Adam as --adam asks; capturable=True (for --cuda-graph) gives the fused, capturable one,
    whose step count and learning rate live on the GPU so a replayed graph updates them."""
    kwargs = {"lr": lr}
    if capturable:
        kwargs["fused"] = True
        kwargs["capturable"] = True
    elif which == "foreach":
        kwargs["foreach"] = True
    elif which == "single":
        kwargs["foreach"] = False
    elif which == "fused":
        kwargs["fused"] = True
    return torch.optim.Adam(params, **kwargs)


def graphed(device, forward_backward, optimizer, warmup):
    """PyTorch's whole-network capture: `warmup` eager steps on a side stream (cuDNN's autotuning, the
    allocator and Adam's state settle there), then one capture of forward_backward() + optimizer.step()
    into a CUDAGraph. Returns (step, last_loss): step() replays the graph; last_loss() is the loss
    tensor the replays rewrite. The gradients are set to None before the capture, so the captured
    backward allocates them from the graph's private pool and every replay rewrites them."""
    if device.type != "cuda":
        raise SystemExit("torch bench: --cuda-graph needs a CUDA device; this run is on %s" % device)
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(max(warmup, 3)):
            optimizer.zero_grad(set_to_none=True)
            forward_backward()
            optimizer.step()
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = forward_backward()
        optimizer.step()
    return graph.replay, lambda: static_loss


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def print_environment(program, device, args):
    print("%s: torch %s, CUDA %s, cuDNN %s, %d CPU threads" % (
        program, torch.__version__, torch.version.cuda, torch.backends.cudnn.version(),
        torch.get_num_threads()))
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print("device %s (%s), batch %d" % (device, name, args.batch))
    print("torch.backends.cuda.matmul.allow_tf32 = %s, torch.backends.cudnn.allow_tf32 = %s, "
          "torch.backends.cudnn.benchmark = %s, channels_last = %s, Adam %s, AMP %s, torch.compile %s, "
          "CUDA graph %s" % (
              torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
              torch.backends.cudnn.benchmark, args.channels_last, args.adam, args.amp, args.compile,
              args.cuda_graph))
    return name


def time_steps(device, warmup, steps, step):
    """Runs step() warmup + 2 * steps times; returns (mean_ms, median_ms, min_ms) as described above."""
    for _ in range(warmup):
        step()
    synchronize(device)

    start = time.perf_counter()
    for _ in range(steps):
        step()
    synchronize(device)
    mean_ms = 1000.0 * (time.perf_counter() - start) / steps

    each = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        synchronize(device)
        each.append(1000.0 * (time.perf_counter() - start))
    return mean_ms, statistics.median(each), min(each)


def report(program, model_name, device, device_name, args, times, last_loss):
    """Prints the times (and the peak memory on a GPU) and writes --json; returns the record."""
    mean_ms, median_ms, min_ms = times
    images_per_second = 1000.0 * args.batch / mean_ms
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else -1
    if peak >= 0:
        print("peak GPU memory allocated: %.1f MiB (torch.cuda.max_memory_allocated)" % (peak / 2.0 ** 20))
    print("last loss %.4f" % last_loss)
    print("%.3f ms/step mean over %d steps (one sync at the end), %.0f images/s; "
          "%.3f ms/step median, %.3f min (a sync after each step)" % (
              mean_ms, args.steps, images_per_second, median_ms, min_ms))
    record = {
        "framework": "torch",
        "model": model_name,
        "device": str(device),
        "device_name": device_name,
        "batch": args.batch,
        "warmup": args.warmup,
        "steps": args.steps,
        "tf32": bool(args.tf32) and device.type == "cuda",
        "cudnn_benchmark": bool(args.cudnn_benchmark),
        "channels_last": bool(args.channels_last),
        "adam": args.adam,
        "amp": args.amp,
        "compile": bool(args.compile),
        "cuda_graph": bool(args.cuda_graph),
        "mean_ms": mean_ms,
        "median_ms": median_ms,
        "min_ms": min_ms,
        "images_per_second": images_per_second,
        "peak_memory_bytes": peak if peak >= 0 else None,
        "last_loss": last_loss,
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "cudnn_version": torch.backends.cudnn.version(),
    }
    if args.json:
        with open(args.json, "w") as f:
            f.write(json.dumps(record) + "\n")
        print("%s: wrote %s" % (program, args.json))
    return record


def new_parser(description, batch):
    parser = argparse.ArgumentParser(description=description)
    add_common_flags(parser, batch)
    return parser
