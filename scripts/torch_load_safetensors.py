#!/usr/bin/env python3
"""scripts/torch_load_safetensors.py: load weights exported by minidl into the PyTorch models of scripts/
and check that PyTorch computes what minidl computed; or write PyTorch weights for minidl to import.

    mnist export --model m.ckpt --safetensors m.safetensors --sample m.sample.safetensors
    python3 scripts/torch_load_safetensors.py m.safetensors m.sample.safetensors
        builds the PyTorch model the file's "model" metadata names (mnist_cnn: torch_mnist_bench.py's,
        mnist_cnn_bn: torch_mnist_train.py's, captcha_crnn: torch_captcha_bench.py's CaptchaModel with the
        file's configuration, nn.LSTM in place of nn.GRU for rnn=lstm), loads the weights with
        load_state_dict(strict=True), runs the sample's "input" in eval mode and compares the output with
        minidl's "output": exit 0 when the largest difference is within --tolerance (relative to the
        largest output), 1 otherwise, 77 when PyTorch is not installed.

    python3 scripts/torch_load_safetensors.py --write-torch mnist_cnn|mnist_cnn_bn|captcha_crnn OUT.safetensors
        writes a freshly initialised PyTorch model's state_dict (torch.manual_seed(--seed)), for
        `mnist import --safetensors OUT.safetensors --save m.ckpt` (or `captcha import`); export that
        checkpoint again and pass --expect OUT.safetensors to the first form to check the values came back
        unchanged.

Reads and writes with safetensors.torch when the package is installed, else with the few lines of
read_file / write_file below (the format: 8-byte little-endian header length, JSON header, raw buffer).
"""

import argparse
import json
import os
import struct
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("torch_load_safetensors: skipped: PyTorch is not installed (pip install torch)")
    sys.exit(77)

DTYPES = {"F32": torch.float32, "F64": torch.float64, "I32": torch.int32, "I64": torch.int64,
          "BF16": torch.bfloat16}


def read_file(path):
    """{name: tensor}, metadata; safetensors.torch when installed."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    metadata = header.pop("__metadata__", {})
    try:
        from safetensors.torch import load_file
        return load_file(path), metadata
    except ImportError:
        pass
    buffer = bytearray(data[8 + n:])
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = DTYPES[info["dtype"]]
        count = (end - begin) // dtype.itemsize
        t = torch.frombuffer(buffer, dtype=dtype, count=count, offset=begin) if count else torch.empty(0, dtype=dtype)
        tensors[name] = t.reshape(info["shape"]).clone()
    return tensors, metadata


def write_file(path, tensors, metadata):
    try:
        from safetensors.torch import save_file
        save_file({k: v.contiguous() for k, v in tensors.items()}, path, metadata=metadata)
        return
    except ImportError:
        pass
    names = {v: k for k, v in DTYPES.items()}
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        blob = t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def build_model(kind, metadata):
    if kind == "mnist_cnn":
        import torch_mnist_bench
        return torch_mnist_bench.make_model()
    if kind == "mnist_cnn_bn":
        import torch_mnist_train
        return torch_mnist_train.make_fast_model()
    if kind == "captcha_crnn":
        import torch_captcha_bench as cb
        m = metadata
        channels = tuple(int(c) for c in m.get("channels", ",".join(map(str, cb.CHANNELS))).split(","))
        hidden, layers = int(m.get("gru_hidden", 128)), int(m.get("gru_layers", 2))
        height = int(m.get("height", cb.HEIGHT))
        classes = len(m["charset"]) + 1 if "charset" in m else cb.CLASSES
        model = cb.CaptchaModel(channels=channels, convs_per_block=int(m.get("convs_per_block", 2)), hidden=hidden,
                                layers=layers, classes=classes, height=height, dropout=float(m.get("dropout", 0.25)))
        if m.get("rnn", "gru") == "lstm":
            model.rnn = nn.LSTM(model.rnn.input_size, hidden, num_layers=layers, bidirectional=True)
        return model
    raise SystemExit("torch_load_safetensors: unknown model %r (mnist_cnn, mnist_cnn_bn, captcha_crnn)" % kind)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("weights", nargs="?")
    p.add_argument("sample", nargs="?")
    p.add_argument("--tolerance", type=float, default=1e-4)
    p.add_argument("--expect", help="also check that WEIGHTS holds exactly this file's tensors")
    p.add_argument("--write-torch", nargs=2, metavar=("MODEL", "OUT"))
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()

    if a.write_torch:
        kind, out = a.write_torch
        torch.manual_seed(a.seed)
        model = build_model(kind, {})
        write_file(out, model.state_dict(), {"format": "pt", "model": kind})
        print("torch_load_safetensors: a fresh PyTorch %s (seed %d) -> %s" % (kind, a.seed, out))
        return 0
    if not a.weights or not a.sample:
        p.error("give WEIGHTS and SAMPLE, or --write-torch MODEL OUT")

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    state, metadata = read_file(a.weights)
    kind = metadata.get("model", "mnist_cnn")
    model = build_model(kind, metadata)
    model.load_state_dict(state, strict=True)  # every name and shape, or an error listing the misfits
    model.eval()
    sample, _ = read_file(a.sample)
    with torch.no_grad():
        out = model(sample["input"].to(torch.float32))
    want = sample["output"]
    diff = (out - want).abs().max().item()
    scale = max(want.abs().max().item(), 1e-12)
    ok = diff <= a.tolerance * scale
    print("torch_load_safetensors: %s, %d tensors loaded strictly; output %s, largest difference from minidl's %.3g "
          "(%.3g of the largest output; tolerance %.3g): %s"
          % (kind, len(state), list(out.shape), diff, diff / scale, a.tolerance, "ok" if ok else "MISMATCH"))
    if a.expect:
        expected, _ = read_file(a.expect)
        same = sorted(expected) == sorted(state) and all(
            torch.equal(expected[k], state[k]) or k.endswith("num_batches_tracked") for k in expected)
        print("torch_load_safetensors: %s holds %s's tensors exactly: %s" % (a.weights, a.expect, "yes" if same else "NO"))
        ok = ok and same
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
