// nn/checkpoint_format.h — the checkpoint file: a string->string metadata map and named tensors, as bytes.
//
// The format is documented byte by byte in docs/checkpoint-format.md: magic "MINIDLCK", a version, the
// file size, the metadata, named tensors (name, dtype, shape, little-endian data), and a CRC-32 of
// everything before it. Writing goes through nn/atomic_file.h, so a failed save leaves the previous file
// intact. Reading checks everything before trusting it and fails with a message that says what is wrong:
// not a checkpoint, unsupported version, truncated, checksum mismatch, or corrupt structure. This file
// knows nothing of models: nn/checkpoint_state.h maps a model and an optimizer to these tensors.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nn/module.h"

namespace minidl {

constexpr uint32_t kCheckpointVersion = 1;

struct Checkpoint {
  std::map<std::string, std::string> metadata;  // e.g. "model" -> "mnist_cnn", "charset" -> "0123..."
  NamedTensors tensors;                         // any device; saved from a CPU copy
};

// Saves atomically over `path` (nn/atomic_file.h: links, modes, signals). Errors start "checkpoint: ".
void write_checkpoint(const std::string& path, const Checkpoint& checkpoint);
// Loaded tensors are on the CPU.
Checkpoint read_checkpoint(const std::string& path);
// The same from the file's bytes in memory (fuzzing, tests); `path` stands for the file in messages.
Checkpoint parse_checkpoint(const std::vector<uint8_t>& bytes, const std::string& path);

}  // namespace minidl
