#!/usr/bin/env python3
"""scripts/torch_captcha_bench.py: the captcha model's training step in PyTorch eager, timed like `captcha bench`.

    python3 scripts/torch_captcha_bench.py [--device auto|cpu|cuda] [--batch 128] [--warmup 20] [--steps 100]
        [--tf32 0|1] [--cudnn-benchmark 0|1] [--channels-last] [--adam default|foreach|single|fused]
        [--amp off|bf16] [--compile | --cuda-graph] [--seed N] [--json FILE]

The model is examples/captcha/model.h with its default configuration, layer for layer:
  x [N, 3, 64, 192] -> 5 blocks of 2 x (Conv2d 3x3 padding 1 without bias, BatchNorm2d, ReLU), channels
  32, 64, 128, 256, 256; after each block MaxPool2d 2x2, the last (2, 1) -> Dropout(0.25) -> [N, 256, 2, 12]
  read column by column: [12, N, 512] -> GRU(512, 128, 2 layers, bidirectional) -> Dropout(0.25)
  -> Linear(256, 37) -> log_softmax: [12, N, 37]; 3,152,901 parameters (printed next to minidl's count).
The batch, made once on the device: pixels uniform in [0, 1), 4 random characters (classes 1..36, 0 is
the CTC blank) per image, input lengths 12, target lengths 4 (the lengths on the CPU, where PyTorch's CTC
reads them). One step, as `captcha train` runs it: forward, F.ctc_loss(reduction='mean',
zero_infinity=True), zero_grad(set_to_none=True), backward, Adam(lr 1e-3) step. Timing and report:
scripts/torch_bench_common.py. --cuda-graph captures the whole step; PyTorch's CTC reads the lengths on
the host, which a capture may refuse (scripts/compare-torch.sh does not ask for it here).
Plain PyTorch and the standard library only.
"""

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no scripts/__pycache__ in the work tree from the import below
import torch_bench_common as common  # noqa: E402  (scripts/, beside this file)

MINIDL_PARAMETERS = 3152901  # examples/captcha/model.h, default configuration
CHANNELS = (32, 64, 128, 256, 256)
HEIGHT, WIDTH = 64, 192
CLASSES = 37  # 36 characters + the blank (class 0)
LABEL_LENGTH = 4


class CaptchaModel(nn.Module):
    def __init__(self, channels=CHANNELS, convs_per_block=2, hidden=128, layers=2, classes=CLASSES,
                 height=HEIGHT, dropout=0.1):
        super().__init__()
        layers_cnn = []
        cin = 3
        for b, c in enumerate(channels):
            for _ in range(convs_per_block):
                layers_cnn += [nn.Conv2d(cin, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU()]
                cin = c
            if b + 1 == len(channels):
                layers_cnn.append(nn.MaxPool2d(kernel_size=(2, 1), stride=(2, 1)))  # halves the height only
            else:
                layers_cnn.append(nn.MaxPool2d(kernel_size=2, stride=2))
        layers_cnn.append(nn.Dropout(dropout))
        self.cnn = nn.Sequential(*layers_cnn)
        feature_height = height >> len(channels)
        self.rnn = nn.GRU(cin * feature_height, hidden, num_layers=layers, bidirectional=True)
        self.rnn_dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        features = self.cnn(x)  # [N, C, H', W']
        n, steps = features.shape[0], features.shape[3]
        sequence = features.permute(3, 0, 1, 2).reshape(steps, n, -1)  # [W', N, C * H']
        h, _ = self.rnn(sequence)  # [T, N, 2 * hidden]
        return F.log_softmax(self.classifier(self.rnn_dropout(h)), dim=-1)


def main():
    parser = common.new_parser("Time training steps of the captcha model in PyTorch eager.", batch=128)
    args = parser.parse_args()
    common.check_flags(parser, args)
    device = common.choose_device(args.device)
    common.set_precision(args.tf32)
    torch.backends.cudnn.benchmark = bool(args.cudnn_benchmark)
    torch.manual_seed(args.seed)
    program = "torch_captcha_bench"
    device_name = common.print_environment(program, device, args)

    model = CaptchaModel().to(device)
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    model.train()
    step_model = common.maybe_compile(model, args)
    parameters = sum(p.numel() for p in model.parameters())
    print("model: %d parameters (minidl's: %d)%s" % (
        parameters, MINIDL_PARAMETERS, "" if parameters == MINIDL_PARAMETERS else "  MISMATCH"))
    optimizer = common.make_adam(model.parameters(), 1e-3, args.adam, capturable=args.cuda_graph)

    n = args.batch
    inputs = torch.rand(n, 3, HEIGHT, WIDTH, device=device).contiguous(memory_format=memory_format)
    targets = torch.randint(1, CLASSES, (n, LABEL_LENGTH), device=device, dtype=torch.long)
    steps_t = WIDTH >> (len(CHANNELS) - 1)
    input_lengths = torch.full((n,), steps_t, dtype=torch.long)
    target_lengths = torch.full((n,), LABEL_LENGTH, dtype=torch.long)
    print("batch %d of [3, %d, %d], %d time steps, %d characters; Adam lr 1e-3; "
          "%d warm-up steps, then %d timed steps twice" % (
              n, HEIGHT, WIDTH, steps_t, LABEL_LENGTH, args.warmup, args.steps))
    sys.stdout.flush()

    def forward_backward():
        with common.autocast(args, device):
            log_probs = step_model(inputs)
            loss = F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
                              zero_infinity=True)
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
    common.report(program, "captcha", device, device_name, args, times, last["loss"].item())


if __name__ == "__main__":
    main()
