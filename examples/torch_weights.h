// examples/torch_weights.h — a model's weights as the equivalent PyTorch module's state_dict, in a
// safetensors file (nn/safetensors.h), and back: what `mnist export|import` and `captcha export|import`
// run, so a model trained here loads into the PyTorch models of scripts/ (torch_mnist_bench.py,
// torch_mnist_train.py, torch_captcha_bench.py) and a PyTorch model can start a minidl run.
//
// The names need no table: minidl's modules were written with PyTorch's names and layouts.
//   Sequential children     "0.weight", "3.bias"           (nn.Sequential: the same indices)
//   Conv2d                  weight [out, in, kh, kw], bias [out]
//   Linear                  weight [out, in], bias [out]
//   BatchNorm2d             weight, bias, running_mean, running_var  (+ num_batches_tracked, below)
//   GRU / LSTM              weight_ih_l{k}[_reverse] [G*H, in], weight_hh_l{k}[_reverse] [G*H, H],
//                           bias_ih_l{k}[_reverse], bias_hh_l{k}[_reverse], with PyTorch's gate order
//                           (GRU r, z, n; LSTM i, f, g, o: nn/gru.h and nn/lstm.h use the same)
// The one difference: PyTorch's BatchNorm keeps num_batches_tracked (an int64 scalar that only matters
// with momentum=None); minidl has no such buffer. Export adds it as 0 beside every running_mean, so
// `load_state_dict` in strict mode finds every key; import drops it.
#pragma once
#include <map>
#include <string>

#include "nn/module.h"
#include "nn/safetensors.h"

namespace examples {

// `model`'s state_dict under PyTorch's names, with `metadata` (strings) and "format" = "pt" (what
// safetensors.torch.save_file writes) in __metadata__.
minidl::SafetensorsFile torch_state_of(const minidl::Module& model, std::map<std::string, std::string> metadata);

// Copies the file's tensors into `model` (its dtypes kept: a float64 file loads into a float32 model),
// after checking, before anything is copied, that the names and shapes are exactly the model's (plus the
// num_batches_tracked it ignores). Throws one line naming the file, the missing, unexpected and misshapen
// tensors (a few of each) and `hint`.
void load_torch_state(minidl::Module& model, const minidl::SafetensorsFile& file, const std::string& path,
                      const std::string& hint);

// A fixed input (from `seed`; any shape) and `model`'s output for it in eval mode, as a safetensors file
// with tensors "input" and "output": scripts/torch_load_safetensors.py runs the PyTorch model on "input"
// and compares its output with "output".
void write_sample(const std::string& path, minidl::Module& model, const minidl::Tensor& input);

}  // namespace examples
