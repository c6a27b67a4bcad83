// nn/files.h — opening the files minidl reads (IDX, images, checkpoints) the same way everywhere, and
// making sure a program never writes over a file it reads.
//
// A reader must be given a regular file: a folder, a FIFO or a device in its place is named as such
// ("'x' is a directory, not a file"), never reported as missing, never read (a FIFO would block the
// reader forever). A file that cannot be opened is reported with the system's reason (strerror).
//
// An output never replaces an input: check_outputs_are_not_inputs() compares every path a command
// writes with every path it reads, before any work (`mnist predict --model m.ckpt --out m.ckpt` would
// otherwise print "wrote 200 predictions to m.ckpt" over the model it just read).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"

namespace minidl {

// "a directory", "a FIFO (named pipe)", "a socket", "a character device", "a block device",
// "not a regular file" for a stat() mode that is not a regular file's.
std::string non_regular_file_kind(unsigned mode);

// Opens `path` for reading in binary mode after checking that it is a regular file. Throws
// "<who>: cannot open '<path>': <strerror>" or "<who>: '<path>' is a directory, not a file".
// The caller owns the FILE (fclose).
std::FILE* open_regular_file(const std::string& path, const std::string& who);

// The whole of a regular file; throws as open_regular_file, and when the file is larger than max_bytes
// ("<who>: '<path>' has N bytes, more than the M this reader accepts").
std::vector<uint8_t> read_regular_file(const std::string& path, const std::string& who, uint64_t max_bytes);

// A path given on the command line and the flag that gave it, for messages: {"--out", "m.ckpt"}.
struct NamedPath {
  std::string flag;
  std::string path;  // "" (the flag was not given) is skipped
};

// Thrown by check_outputs_are_not_inputs: the command line names one file twice (a usage error; the
// programs exit with status 2 on it).
class OutputIsInputError : public Error {
 public:
  using Error::Error;
};

// Refuses, before any work, a command whose outputs would overwrite its inputs or each other. Throws
// OutputIsInputError with one line naming both flags:
//   "--out 'm.ckpt' is the same file as --model 'm.ckpt': refusing to overwrite an input"
//   "--save 'data/m.ckpt' is inside the folder --data 'data': refusing to write into an input folder"
//   "--metrics 'a' is the same file as --save 'a': give each output its own file"
// "The same file" is decided by the file system, not by the spelling: when both exist, their device
// and inode numbers (so symbolic links, hard links, `./a/../m.ckpt` and bind mounts all match); when the
// output does not exist yet, its folder resolved through every link (realpath) plus its name, against
// the input's resolved path. An input that is a folder (--data DIR) covers everything below it, at any
// depth: a file written there would be read as data by the next run (a captcha folder's labels.csv, an
// image named like a label), so an output inside it is refused as well. An input that does not exist
// cannot be destroyed and is left to its reader to report. Outputs that are folders (`captcha gen
// --out DIR`) are compared as paths, like files.
// The caller leaves out a pair that may legitimately be one file: a resumed training run keeps saving
// to the file it resumed from (--save = --resume), so --resume is not among the inputs --save is
// compared with.
void check_outputs_are_not_inputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs);

}  // namespace minidl
