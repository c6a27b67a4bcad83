#!/usr/bin/env python3
"""tests/safetensors_test.py MNIST CAPTCHA — weights leave minidl and come back as safetensors, checked
with a reader written here (the standard library only: struct and json), not minidl's.

The safetensors format: 8 bytes little-endian N, N bytes of JSON {"name": {"dtype", "shape",
"data_offsets": [begin, end]}, "__metadata__": {...}}, then the raw little-endian buffer.

For each model (mnist_cnn, mnist_cnn_bn, a small captcha_crnn with a GRU and with an LSTM) this writes a
file the way PyTorch names the equivalent module's state_dict (the names are listed here from the
PyTorch models of scripts/, not asked of minidl), with seeded values; then
  `import --safetensors F --save C`, `export --model C --safetensors G --sample S`
and checks G: every PyTorch name and no other, each shape and dtype, every value bit for bit as written
(num_batches_tracked an int64 scalar 0), the metadata; S: the input and output shapes (the captcha
output is log-probabilities: each row's probabilities sum to 1). Then files minidl must refuse:
a tensor of another shape, a missing tensor, an unknown one, a truncated file, a header that lies.
"""

import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile

FORMATS = {"F32": ("f", 4), "F64": ("d", 8), "I64": ("q", 8), "I32": ("i", 4)}


def write_safetensors(path, tensors, metadata):
    """tensors: list of (name, dtype, shape, values)."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, values in tensors:
        code, size = FORMATS[dtype]
        blob = struct.pack("<%d%s" % (len(values), code), *values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    """{name: (dtype, shape, values)}, metadata."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    buffer = data[8 + n:]
    metadata = header.pop("__metadata__", {})
    tensors, ends = {}, []
    for name, info in header.items():
        begin, end = info["data_offsets"]
        code, size = FORMATS[info["dtype"]]
        count = math.prod(info["shape"])
        assert end - begin == count * size, "%s: %d bytes for %s" % (name, end - begin, info["shape"])
        ends.append((begin, end))
        tensors[name] = (info["dtype"], info["shape"], list(struct.unpack("<%d%s" % (count, code), buffer[begin:end])))
    ends.sort()
    assert all(a[1] <= b[0] for a, b in zip(ends, ends[1:])), "overlapping tensors"
    assert not ends or ends[-1][1] == len(buffer), "the buffer has bytes no tensor uses"
    return tensors, metadata


def conv(prefix, cout, cin, k, bias=True):
    out = [(prefix + "weight", [cout, cin, k, k])]
    return out + ([(prefix + "bias", [cout])] if bias else [])


def batch_norm(prefix, c):
    return [(prefix + n, [c]) for n in ("weight", "bias", "running_mean", "running_var")]


def linear(prefix, out, inp):
    return [(prefix + "weight", [out, inp]), (prefix + "bias", [out])]


def rnn(prefix, gates, inp, hidden, layers):
    out = []
    for k in range(layers):
        layer_in = inp if k == 0 else 2 * hidden
        for sfx in ("", "_reverse"):
            out += [(prefix + "weight_ih_l%d%s" % (k, sfx), [gates * hidden, layer_in]),
                    (prefix + "weight_hh_l%d%s" % (k, sfx), [gates * hidden, hidden]),
                    (prefix + "bias_ih_l%d%s" % (k, sfx), [gates * hidden]),
                    (prefix + "bias_hh_l%d%s" % (k, sfx), [gates * hidden])]
    return out


# The PyTorch modules' state_dict names and shapes (scripts/torch_mnist_bench.py, torch_mnist_train.py,
# torch_captcha_bench.py); the BatchNorm prefixes, whose num_batches_tracked PyTorch adds.
MNIST_CNN = conv("0.", 32, 1, 3) + conv("2.", 64, 32, 3) + linear("7.", 128, 9216) + linear("10.", 10, 128)
MNIST_CNN_BN = (conv("0.", 32, 1, 3) + batch_norm("1.", 32) + conv("4.", 64, 32, 3) + batch_norm("5.", 64)
                + linear("9.", 128, 1600) + linear("11.", 10, 128))
# A small captcha model: 32x16 input, blocks of 4 and 8 channels, one conv each, a 2-layer
# bidirectional recurrent layer of 8, charset of 10 (11 classes); features 8 * (16 >> 2) = 32, 16 steps.
CAPTCHA_META = {"model": "captcha_crnn", "charset": "0123456789", "length": "4", "width": "32", "height": "16",
                "channels": "4,8", "convs_per_block": "1", "gru_hidden": "8", "gru_layers": "2", "dropout": "0.25"}


def captcha_names(gates):
    return (conv("cnn.0.", 4, 3, 3, bias=False) + batch_norm("cnn.1.", 4) + conv("cnn.4.", 8, 4, 3, bias=False)
            + batch_norm("cnn.5.", 8) + rnn("rnn.", gates, 32, 8, 2) + linear("classifier.", 11, 16))


def fixture(names, seed):
    """Seeded float32-exact values; running_var positive; plus num_batches_tracked beside running_mean."""
    rng = random.Random(seed)
    tensors = []
    for name, shape in names:
        count = math.prod(shape)
        low = 0.5 if name.endswith("running_var") else -0.2
        values = [struct.unpack("<f", struct.pack("<f", rng.uniform(low, low + 0.4)))[0] for _ in range(count)]
        tensors.append((name, "F32", shape, values))
        if name.endswith("running_mean"):
            tensors.append((name[:-len("running_mean")] + "num_batches_tracked", "I64", [], [7]))
    return tensors


failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(args, expect_ok=True):
    p = subprocess.run(args, capture_output=True, text=True)
    if expect_ok and p.returncode != 0:
        print(p.stdout + p.stderr)
    return p.returncode, p.stdout + p.stderr


def round_trip(program, label, model, tensors, metadata, extra_import, sample_input, sample_output, tmp):
    src, ckpt = os.path.join(tmp, label + ".in.safetensors"), os.path.join(tmp, label + ".ckpt")
    out, sample = os.path.join(tmp, label + ".out.safetensors"), os.path.join(tmp, label + ".sample.safetensors")
    write_safetensors(src, tensors, metadata)
    rc, text = run([program, "import", "--safetensors", src, "--save", ckpt] + extra_import)
    check(rc == 0, "%s: import exits 0" % label)
    rc, text = run([program, "export", "--model", ckpt, "--safetensors", out, "--sample", sample])
    check(rc == 0, "%s: export exits 0" % label)
    if rc != 0:
        return
    got, meta = read_safetensors(out)
    want = {name: (dtype, shape, values) for name, dtype, shape, values in tensors}
    check(sorted(got) == sorted(want), "%s: the exported names are PyTorch's (%d tensors)" % (label, len(want)))
    wrong = []
    for name, (dtype, shape, values) in want.items():
        if name not in got:
            continue
        g = got[name]
        if name.endswith("num_batches_tracked"):
            ok = g[0] == "I64" and g[1] == [] and g[2] == [0]  # minidl keeps no count: exported as 0
        else:
            ok = g[0] == dtype and g[1] == shape and g[2] == values
        if not ok:
            wrong.append("%s is %s %s (first values %s), written %s %s" % (name, g[0], g[1], g[2][:3], dtype, shape))
    check(not wrong, "%s: every shape, dtype and value as written%s" % (label, "; " + "; ".join(wrong[:3]) if wrong else ""))
    check(meta.get("format") == "pt" and meta.get("model") == model,
          "%s: metadata format=pt, model=%s (%s)" % (label, model, meta))
    s, _ = read_safetensors(sample)
    check(s["input"][1] == sample_input and s["output"][1] == sample_output,
          "%s: sample input %s, output %s" % (label, s["input"][1], s["output"][1]))
    check(all(math.isfinite(v) for v in s["output"][2]), "%s: sample output finite" % label)
    return s


def refused(program, label, tensors, metadata, needle, tmp, raw=None):
    path, ckpt = os.path.join(tmp, "bad.safetensors"), os.path.join(tmp, "bad.ckpt")
    if raw is None:
        write_safetensors(path, tensors, metadata)
    else:
        with open(path, "wb") as f:
            f.write(raw)
    rc, text = run([program, "import", "--safetensors", path, "--save", ckpt], expect_ok=False)
    check(rc == 1 and needle in text and not os.path.exists(ckpt),
          "refused, no checkpoint written: %s (exit %d, message has %r)" % (label, rc, needle))
    if needle not in text:
        print(text)


def main():
    mnist, captcha = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        round_trip(mnist, "mnist_cnn", "mnist_cnn", fixture(MNIST_CNN, 1), {}, [], [4, 1, 28, 28], [4, 10], tmp)
        round_trip(mnist, "mnist_cnn_bn", "mnist_cnn_bn", fixture(MNIST_CNN_BN, 2), {"model": "mnist_cnn_bn"}, [],
                   [4, 1, 28, 28], [4, 10], tmp)
        # The GRU's file says rnn=gru; the LSTM's says nothing and `import --rnn lstm` chooses.
        for rnn_kind, gates, meta, extra in (("gru", 3, dict(CAPTCHA_META, rnn="gru"), []),
                                             ("lstm", 4, CAPTCHA_META, ["--rnn", "lstm"])):
            s = round_trip(captcha, "captcha_" + rnn_kind, "captcha_crnn", fixture(captcha_names(gates), 3 + gates),
                           meta, extra, [2, 3, 16, 32], [16, 2, 11], tmp)
            if s:
                rows = [s["output"][2][i:i + 11] for i in range(0, len(s["output"][2]), 11)]
                check(all(abs(sum(math.exp(v) for v in r) - 1) < 1e-4 for r in rows),
                      "captcha_%s: each output row is log-probabilities (sums to 1)" % rnn_kind)

        good = fixture(MNIST_CNN_BN, 2)
        meta = {"model": "mnist_cnn_bn"}
        bad_shape = [(n, d, [32, 1, 5, 5], [0.0] * 800) if n == "0.weight" else (n, d, s, v) for n, d, s, v in good]
        refused(mnist, "another shape", bad_shape, meta, "0.weight [32,1,5,5]", tmp)
        refused(mnist, "a missing tensor", [t for t in good if t[0] != "9.bias"], meta, "missing: 9.bias", tmp)
        refused(mnist, "an unknown tensor", good + [("extra.weight", "F32", [1], [0.0])], meta,
                "not in the model: extra.weight", tmp)
        refused(mnist, "--model mnist_cnn for a mnist_cnn_bn file", good, {"model": "mnist_cnn"},
                "--model mnist_cnn_bn for the other",
                tmp)
        path = os.path.join(tmp, "whole.safetensors")
        write_safetensors(path, good, meta)
        with open(path, "rb") as f:
            whole = f.read()
        refused(mnist, "a truncated file", None, None, "lie outside", tmp, raw=whole[:len(whole) // 2])
        refused(mnist, "a header length past the end", None, None, "does not fit", tmp,
                raw=struct.pack("<Q", 1 << 40) + whole[8:])
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
