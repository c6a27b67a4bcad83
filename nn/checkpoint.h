// nn/checkpoint.h — saving and loading models, optimizer state and metadata in one file: the header
// programs include. Each job lives in its own file:
//
//   nn/checkpoint_format.h    the file's bytes: header, metadata, named tensors, CRC-32 (Checkpoint,
//                             write_checkpoint, read_checkpoint, parse_checkpoint)
//   nn/atomic_file.h          all-or-nothing writes: temporary file, fsync, rename, cleanup on signals
//                             (write_file_atomically, prepare_checkpoint_path)
//   nn/checkpoint_state.h     a model's and an optimizer's state to and from a checkpoint, checked
//                             before anything is copied (save_checkpoint, load_checkpoint,
//                             check_checkpoint_model)
//   nn/checkpoint_metadata.h  metadata values read strictly (metadata_int, metadata_real, ...)
//
// The format and the saving rules are documented in docs/checkpoint-format.md.
#pragma once
#include "nn/atomic_file.h"
#include "nn/checkpoint_format.h"
#include "nn/checkpoint_metadata.h"
#include "nn/checkpoint_state.h"
