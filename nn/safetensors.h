// nn/safetensors.h — named tensors to and from a safetensors file, the weights format of the PyTorch
// ecosystem (`safetensors.torch.load_file`, Hugging Face), so weights can leave minidl and come back.
//
// The format (https://github.com/huggingface/safetensors), all little-endian:
//   8 bytes   N, the length of the header (unsigned 64-bit)
//   N bytes   a JSON object: for each tensor "name": {"dtype": "F32", "shape": [2, 3], "data_offsets":
//             [begin, end]}, and optionally "__metadata__": {"key": "value", ...} (strings only);
//             padded with spaces to a multiple of 8 bytes
//   the rest  the tensors' bytes, row-major; [begin, end) are offsets into it, end - begin = numel * size
// dtypes: F32, F64, I32, I64, BF16 (minidl's five). Reading checks what it trusts: the header length
// against the file, the JSON, each dtype, shape and range (inside the buffer, the size its shape needs,
// no two overlapping), and fails with one line naming the file and the tensor. This file knows nothing
// of models: examples/torch_weights.h maps a model's state to PyTorch's names.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nn/module.h"

namespace minidl {

struct SafetensorsFile {
  std::map<std::string, std::string> metadata;  // "__metadata__"
  NamedTensors tensors;                         // CPU tensors, in the order of their data offsets
};

// The file's bytes: tensors (any device, any strides; copied to the CPU) in the given order.
std::vector<uint8_t> safetensors_bytes(const SafetensorsFile& file);
// Saves atomically (nn/atomic_file.h). Errors start "safetensors: ".
void write_safetensors(const std::string& path, const SafetensorsFile& file);
// Reads and checks a file; `path` names it in messages.
SafetensorsFile read_safetensors(const std::string& path);
SafetensorsFile parse_safetensors(const std::vector<uint8_t>& bytes, const std::string& path);

// "F32" for float32 ...; the reverse throws for a dtype minidl does not have ("F16: not supported").
const char* safetensors_dtype_name(DType dtype);
DType safetensors_dtype(const std::string& name, const std::string& context);

}  // namespace minidl
