#!/usr/bin/env bash
# tests/safetensors_torch_test.sh MNIST CAPTCHA — where PyTorch is installed (exit 77, skipped, where not):
# weights go from PyTorch to minidl and back, and both compute the same outputs. For each model, a fresh
# PyTorch model's state_dict is written as safetensors (scripts/torch_load_safetensors.py --write-torch),
# imported into a minidl checkpoint, exported again with a sample (a fixed input and minidl's output),
# and loaded into the PyTorch model: the outputs must agree within 1e-4 of the largest, and the
# re-exported weights must be exactly PyTorch's.
set -u
mnist=$1
captcha=$2
script=$(cd "$(dirname "$0")/.." && pwd)/scripts/torch_load_safetensors.py
python3 -c "import torch" 2>/dev/null || { echo "skipped: PyTorch is not installed"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=2
for model in mnist_cnn mnist_cnn_bn captcha_crnn; do
  program=$mnist
  [ "$model" = captcha_crnn ] && program=$captcha
  python3 "$script" --write-torch "$model" "$dir/$model.torch.safetensors" --seed 3 || { echo "FAIL: $model: write"; exit 1; }
  "$program" import --safetensors "$dir/$model.torch.safetensors" --save "$dir/$model.ckpt" || { echo "FAIL: $model: import"; exit 1; }
  "$program" export --model "$dir/$model.ckpt" --safetensors "$dir/$model.safetensors" --sample "$dir/$model.sample" ||
    { echo "FAIL: $model: export"; exit 1; }
  python3 "$script" "$dir/$model.safetensors" "$dir/$model.sample" --expect "$dir/$model.torch.safetensors" ||
    { echo "FAIL: $model: PyTorch's outputs differ from minidl's"; exit 1; }
done
echo "safetensors_torch: ok"
