#!/usr/bin/env python3
"""scripts/torch_mnist_bench.py: the MNIST CNN's training step in PyTorch eager, timed like `mnist bench`.

    python3 scripts/torch_mnist_bench.py [--device auto|cpu|cuda] [--batch 64] [--warmup 20] [--steps 100]
        [--tf32 0|1] [--cudnn-benchmark 0|1] [--channels-last] [--adam default|foreach|single|fused]
        [--amp off|bf16] [--compile | --cuda-graph] [--seed N] [--json FILE]

The model is examples/mnist/model.h (PyTorch's MNIST example's CNN), layer for layer:
  x [N, 1, 28, 28] -> Conv2d(1, 32, 3), ReLU -> Conv2d(32, 64, 3), ReLU -> MaxPool2d(2) -> Dropout(0.25)
  -> Flatten [N, 9216] -> Linear(9216, 128), ReLU -> Dropout(0.5) -> Linear(128, 10): logits [N, 10];
  1,199,882 parameters (printed next to minidl's count).
The batch, made once on the device: pixels uniform in [0, 1), labels uniform in 0..9. One step, as
`mnist train` runs it: forward, F.cross_entropy (mean over the batch), zero_grad(set_to_none=True),
backward, Adam step at `mnist train`'s default (peak) lr 2e-3, held constant. Timing and report:
scripts/torch_bench_common.py. --cuda-graph replays the whole step (forward, loss, backward and a
capturable fused Adam) from one CUDA graph, as `mnist train` does on a GPU by default.
Plain PyTorch and the standard library only.
"""

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no scripts/__pycache__ in the work tree from the import below
import torch_bench_common as common  # noqa: E402  (scripts/, beside this file)

MINIDL_PARAMETERS = 1199882  # examples/mnist/model.h
LEARNING_RATE = 2e-3  # `mnist train --lr` default


def make_model():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(),                    # [N, 32, 26, 26]
        nn.Conv2d(32, 64, 3), nn.ReLU(),                   # [N, 64, 24, 24]
        nn.MaxPool2d(2), nn.Dropout(0.25), nn.Flatten(),   # [N, 64 * 12 * 12 = 9216]
        nn.Linear(9216, 128), nn.ReLU(), nn.Dropout(0.5),
        nn.Linear(128, 10))                                # [N, 10]


def main():
    parser = common.new_parser("Time training steps of the MNIST CNN in PyTorch eager.", batch=64)
    args = parser.parse_args()
    common.check_flags(parser, args)
    device = common.choose_device(args.device)
    common.set_precision(args.tf32)
    torch.backends.cudnn.benchmark = bool(args.cudnn_benchmark)
    torch.manual_seed(args.seed)
    program = "torch_mnist_bench"
    device_name = common.print_environment(program, device, args)

    model = make_model().to(device)
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    model.train()
    step_model = common.maybe_compile(model, args)
    parameters = sum(p.numel() for p in model.parameters())
    print("model: %d parameters (minidl's: %d)%s" % (
        parameters, MINIDL_PARAMETERS, "" if parameters == MINIDL_PARAMETERS else "  MISMATCH"))
    optimizer = common.make_adam(model.parameters(), LEARNING_RATE, args.adam, capturable=args.cuda_graph)

    n = args.batch
    inputs = torch.rand(n, 1, 28, 28, device=device).contiguous(memory_format=memory_format)
    targets = torch.randint(0, 10, (n,), device=device, dtype=torch.long)
    print("batch %d of [1, 28, 28]; Adam lr %g; %d warm-up steps, then %d timed steps twice" % (
        n, LEARNING_RATE, args.warmup, args.steps))
    sys.stdout.flush()

    def forward_backward():
        with common.autocast(args, device):
            logits = step_model(inputs)
            loss = F.cross_entropy(logits, targets)
        loss.backward()
        return loss

    last = {}
    if args.cuda_graph:
        step, last_loss = common.graphed(device, forward_backward, optimizer, args.warmup)
        last["loss"] = last_loss()
    else:
        def step():
            optimizer.zero_grad(set_to_none=True)
            last["loss"] = forward_backward()
            optimizer.step()

    times = common.time_steps(device, args.warmup, args.steps, step)
    common.report(program, "mnist", device, device_name, args, times, last["loss"].item())


if __name__ == "__main__":
    main()
