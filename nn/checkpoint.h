// nn/checkpoint.h — saving and loading models, optimizer state and metadata in one file.
//
// The format is documented byte by byte in docs/checkpoint-format.md: magic "MINIDLCK", a version, the
// file size, a string->string metadata map, named tensors (name, dtype, shape, little-endian data), and
// a CRC-32 of everything before it. Files are written atomically (a temporary file in the same
// directory, fsync, rename), so a crash or error mid-save leaves the previous file intact. Loading
// checks everything before trusting it and fails with a message that says what is wrong: not a
// checkpoint, unsupported version, truncated, checksum mismatch, or corrupt structure.
#pragma once
#include <map>
#include <string>

#include "nn/module.h"
#include "nn/optim.h"

namespace minidl {

constexpr uint32_t kCheckpointVersion = 1;

struct Checkpoint {
  std::map<std::string, std::string> metadata;  // e.g. "model" -> "mnist_cnn", "charset" -> "0123..."
  NamedTensors tensors;                         // any device; saved from a CPU copy
};

void write_checkpoint(const std::string& path, const Checkpoint& checkpoint);
// Loaded tensors are on the CPU.
Checkpoint read_checkpoint(const std::string& path);

// Model and (optionally) optimizer in one file: tensors "model/<name>" from model.state_dict() and
// "optimizer/<name>" from optimizer->state_dict(); metadata gets "optimizer" = its type name.
void save_checkpoint(const std::string& path, const Module& model, const Optimizer* optimizer,
                     std::map<std::string, std::string> metadata = {});
// Restores the model (and the optimizer when given; then the file must hold optimizer state of the
// same type). Returns the metadata. The model must have been built with the same configuration.
std::map<std::string, std::string> load_checkpoint(const std::string& path, Module& model,
                                                   Optimizer* optimizer = nullptr);

}  // namespace minidl
