// nn/checkpoint.h — saving and loading models, optimizer state and metadata in one file.
//
// The format is documented byte by byte in docs/checkpoint-format.md: magic "MINIDLCK", a version, the
// file size, a string->string metadata map, named tensors (name, dtype, shape, little-endian data), and
// a CRC-32 of everything before it. Files are written atomically (a temporary file in the same
// directory, fsync, rename), so a crash or error mid-save leaves the previous file intact; the details
// (symbolic links, file modes, what happens on a signal) are in docs/checkpoint-format.md. Loading
// checks everything before trusting it and fails with a message that says what is wrong: not a
// checkpoint, unsupported version, truncated, checksum mismatch, or corrupt structure. Restoring a model
// checks the file's tensors against the model first (names, shapes, dtypes: an int32 tensor where the
// model has float32 is an error, not a silent conversion) and says in one line what does not fit; a file
// of another kind of model is named as such.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nn/module.h"
#include "nn/optim.h"

namespace minidl {

constexpr uint32_t kCheckpointVersion = 1;

struct Checkpoint {
  std::map<std::string, std::string> metadata;  // e.g. "model" -> "mnist_cnn", "charset" -> "0123..."
  NamedTensors tensors;                         // any device; saved from a CPU copy
};

// Saves atomically over `path`: a regular file (its permission bits are kept), a symbolic link (the file
// it points to is replaced; the link stays), or nothing yet (created with 0666 minus the umask). A folder,
// device, FIFO or socket at `path` is refused, as is an empty path. The temporary file,
// <target>.tmp-<pid>-XXXXXX, is removed when the save fails and when SIGINT, SIGTERM or SIGHUP ends the
// process during the save.
void write_checkpoint(const std::string& path, const Checkpoint& checkpoint);
// Loaded tensors are on the CPU.
Checkpoint read_checkpoint(const std::string& path);
// The same from the file's bytes in memory (fuzzing, tests); `path` stands for the file in messages.
Checkpoint parse_checkpoint(const std::vector<uint8_t>& bytes, const std::string& path);

// Any other file that must be all or nothing (`mnist predict`'s submission CSV), written the same way
// as a checkpoint: a temporary file, fsync, rename, with the same handling of links, modes and signals.
// Errors start "cannot save 'PATH'".
void write_file_atomically(const std::string& path, const std::string& contents);

// Checks, before a program starts work that ends with a save, that `path` can be saved to: the name is
// not empty, its folder exists and lets us create a file (one is created and removed: permissions,
// read-only file systems), and the path is not a folder, device, FIFO or socket. Then removes temporary
// files of earlier saves to the same file whose process is gone (killed mid-save, e.g. by SIGKILL).
// Errors start with `flag` ("--save 'x.ckpt': the folder 'out' does not exist").
struct SavePath {
  std::string target;     // the file saves replace (`path`, or where its symbolic links lead)
  int stale_removed = 0;  // stale temporary files removed
};
SavePath prepare_checkpoint_path(const std::string& path, const std::string& flag = "--save");

// Model and (optionally) optimizer in one file: tensors "model/<name>" from model.state_dict() and
// "optimizer/<name>" from optimizer->state_dict(); metadata gets "optimizer" = its type name.
void save_checkpoint(const std::string& path, const Module& model, const Optimizer* optimizer,
                     std::map<std::string, std::string> metadata = {});
// Restores the model (and the optimizer when given; then the file must hold optimizer state of the
// same type). Returns the metadata. The model must have been built with the same configuration.
std::map<std::string, std::string> load_checkpoint(const std::string& path, Module& model,
                                                   Optimizer* optimizer = nullptr);
// The same from a file already read (to look at its metadata before building the model); `path` is for
// messages. Before anything is copied, every tensor is checked: the model's and the file's names, shapes
// and dtypes must agree, and the optimizer's entries must have the dtypes of nn/optim.h, sane step and lr
// values, and belong to its parameters; an error lists at most a few names of each kind of misfit.
std::map<std::string, std::string> load_checkpoint(const Checkpoint& checkpoint, const std::string& path,
                                                   Module& model, Optimizer* optimizer = nullptr);

// Throws one line unless the file's metadata says model = `expected` (the programs record their model's
// name there): "'a.ckpt' holds a captcha_crnn model, not an mnist_cnn model saved by `mnist train --save`".
void check_checkpoint_model(const Checkpoint& checkpoint, const std::string& path, const std::string& expected,
                            const std::string& saved_by);

// ---- metadata values, read strictly (a file may be corrupt or crafted): the whole value must be the
// number, in decimal (an optional '-', digits; no spaces, no '+', nothing after), inside [min, max].
// Errors name the file and the key: "checkpoint 'a.ckpt': metadata gru_hidden = '64abc' is not a whole
// number", "... gru_layers = 100000 is outside 1..16", "... has no 'charset' in its metadata".
std::optional<int64_t> parse_whole_number(const std::string& text);
const std::string& metadata_text(const std::map<std::string, std::string>& metadata, const std::string& key,
                                 const std::string& path);
int64_t metadata_int(const std::map<std::string, std::string>& metadata, const std::string& key, int64_t min,
                     int64_t max, const std::string& path);
// A finite decimal number ("0.25", "1e-3"), inside [min, max].
double metadata_real(const std::map<std::string, std::string>& metadata, const std::string& key, double min,
                     double max, const std::string& path);

}  // namespace minidl
