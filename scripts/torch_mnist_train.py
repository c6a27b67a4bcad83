#!/usr/bin/env python3
"""scripts/torch_mnist_train.py: whole MNIST training epochs in PyTorch, timed like `mnist train`.

    python3 scripts/torch_mnist_train.py --data DIR [--device cuda] [--epochs 3] [--batch 64] [--lr 2e-3]
        [--data-mode device|loader] [--adam default|foreach|single|fused] [--cudnn-benchmark 0|1]
        [--tf32 0|1] [--seed N] [--limit N] [--threads N] [--json FILE] [--model mnist_cnn|mnist_cnn_bn]

The side of scripts/compare-torch.sh's `epochs` pairs that is not minidl: the model of
scripts/torch_mnist_bench.py (examples/mnist/model.h, layer for layer), Adam with a one-cycle learning
rate peaking at --lr (torch.optim.lr_scheduler.OneCycleLR, per batch), the four IDX files of DIR, pixels
normalised as minidl does ((x / 255 - 0.1307) / 0.3081), a shuffled order per epoch, the test set
evaluated after every epoch (batch 1000, eval mode, no_grad).

--data-mode device (default): PyTorch's fastest way for a dataset this small, the way minidl runs: both
sets on the GPU once, each epoch's order from torch.randperm on the GPU, each batch an index into it.
--data-mode loader: the usual tutorial code: a TensorDataset in host memory and a DataLoader with
pin_memory=True, each batch copied with non_blocking=True.
On the CPU (--device cpu: both modes are the same there) --threads N sets torch's thread count (as
OMP_NUM_THREADS does for minidl), --limit N trains on the first N images (as `mnist train --limit`), and
--adam default is needed with PyTorch releases before 2.0 (no fused Adam).

Timing, as minidl's `train_seconds`: an epoch's training loop, from its first batch to a synchronisation
after its last step (the loss and accuracy read once at the end, on the device until then); evaluation is
timed apart. One JSON object per epoch goes to stdout (and --json FILE): epoch, train_seconds,
images_per_second, eval_seconds, test_accuracy, train_loss. Plain PyTorch and the standard library only.
"""

import argparse
import gzip
import json
import os
import struct
import sys
import time

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no scripts/__pycache__ in the work tree from the imports below
import torch_bench_common as common  # noqa: E402  (scripts/, beside this file)
import torch_mnist_bench as bench  # noqa: E402  (the same model)

MEAN, STD = 0.1307, 0.3081  # examples/data/mnist_data.h


def read_idx(path):
    """The array of an IDX file (.gz or not) as a uint8 tensor of its shape."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return torch.frombuffer(bytearray(data[4 + 4 * dims:]), dtype=torch.uint8).reshape(shape)


def find(folder, stem):
    for name in (stem + ".gz", stem):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    sys.exit("torch_mnist_train: %s(.gz) not found in %s" % (stem, folder))


def load(folder, train):
    prefix = "train" if train else "t10k"
    images = read_idx(find(folder, prefix + "-images-idx3-ubyte")).float().div_(255).sub_(MEAN).div_(STD)
    labels = read_idx(find(folder, prefix + "-labels-idx1-ubyte")).long()
    return images.unsqueeze(1), labels


def evaluate(model, images, labels, device):
    model.eval()
    correct = torch.zeros((), dtype=torch.long, device=device)
    with torch.no_grad():
        for first in range(0, images.shape[0], 1000):
            x = images[first:first + 1000].to(device, non_blocking=True)
            y = labels[first:first + 1000].to(device, non_blocking=True)
            correct += (model(x).argmax(1) == y).sum()
    model.train()
    return correct.item() / images.shape[0]


def make_fast_model():
    """examples/mnist/model.h make_fast_model (`--model mnist_cnn_bn`, the fast recipe's), layer for layer."""
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10))


def main():
    parser = argparse.ArgumentParser(description="MNIST training epochs in PyTorch, timed like `mnist train`")
    parser.add_argument("--data", required=True, help="folder with the four MNIST IDX files (.gz or not)")
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (default: %(default)s)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-3, help="the one-cycle peak (default: %(default)s)")
    parser.add_argument("--data-mode", choices=("device", "loader"), default="device")
    parser.add_argument("--adam", choices=("default", "foreach", "single", "fused"), default="fused")
    parser.add_argument("--cudnn-benchmark", type=int, choices=(0, 1), default=1)
    parser.add_argument("--tf32", type=int, choices=(0, 1), default=0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--limit", type=int, default=0, help="train on the first N images only (0: all)")
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads(N) (0: torch's default)")
    parser.add_argument("--json", default="", help="also append the per-epoch JSON objects to FILE")
    parser.add_argument("--model", choices=("mnist_cnn", "mnist_cnn_bn"), default="mnist_cnn",
                        help="the CNN of examples/mnist/model.h (default: %(default)s)")
    args = parser.parse_args()
    if args.epochs < 1 or args.batch < 1:
        parser.error("--epochs and --batch must be at least 1")

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    torch.backends.cudnn.benchmark = bool(args.cudnn_benchmark)
    common.set_precision(args.tf32)
    torch.manual_seed(args.seed)
    train_x, train_y = load(args.data, True)
    if args.limit > 0:
        train_x, train_y = train_x[:args.limit], train_y[:args.limit]
    test_x, test_y = load(args.data, False)
    n = train_x.shape[0]
    if args.data_mode == "device":
        train_x, train_y = train_x.to(device), train_y.to(device)
        test_x, test_y = test_x.to(device), test_y.to(device)
        loader = None
    else:
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(train_x, train_y),
                                             batch_size=args.batch, shuffle=True, pin_memory=device.type == "cuda")

    created = time.perf_counter()
    model = (make_fast_model() if args.model == "mnist_cnn_bn" else bench.make_model()).to(device)
    optimizer = common.make_adam(model.parameters(), args.lr, args.adam)
    steps_per_epoch = (n + args.batch - 1) // args.batch
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=args.epochs * steps_per_epoch)
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu, %d threads" % torch.get_num_threads()
    print("torch mnist train: %s, batch %d, %d epochs of %d images, data %s, adam %s, cudnn.benchmark %d, tf32 %d, "
          "torch %s" % (where, args.batch, args.epochs, n, args.data_mode, args.adam, args.cudnn_benchmark, args.tf32,
                        torch.__version__), flush=True)

    def batches():
        if loader is not None:
            for x, y in loader:
                yield x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        else:
            order = torch.randperm(n, device=device)
            for first in range(0, n, args.batch):
                picks = order[first:first + args.batch]
                yield train_x[picks], train_y[picks]

    for epoch in range(1, args.epochs + 1):
        loss_sum = torch.zeros((), device=device)
        common.synchronize(device)
        start = time.perf_counter()
        for x, y in batches():
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            loss_sum += loss.detach() * x.shape[0]
        train_loss = loss_sum.item() / n  # the one read of the epoch: waits for the last step
        train_seconds = time.perf_counter() - start
        start = time.perf_counter()
        accuracy = evaluate(model, test_x, test_y, device)
        eval_seconds = time.perf_counter() - start
        record = {"epoch": epoch, "batch_size": args.batch, "data_mode": args.data_mode, "adam": args.adam,
                  "train_seconds": train_seconds, "images_per_second": n / train_seconds,
                  "eval_seconds": eval_seconds, "seconds_since_start": time.perf_counter() - created,
                  "test_accuracy": accuracy, "train_loss": train_loss}
        print(json.dumps(record), flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
