// nn/atomic_file.h — writing a file all or nothing: a temporary file in the same folder, fsync, rename.
//
// A crash, an error or Ctrl-C in the middle of a save leaves the previous file whole: the new bytes go to
// <target>.tmp-<pid>-XXXXXX next to the target (so the rename is atomic: same file system), are synced to
// disk, and only then renamed over the target; the folder is synced too, so the rename itself survives a
// power cut. While a save runs, SIGINT, SIGTERM and SIGHUP remove the temporary file before ending the
// process; SIGKILL cannot be caught, so a later run removes what it left (prepare_checkpoint_path).
// Checkpoints (nn/checkpoint_format.h) and `mnist predict`'s submission CSV are written this way; the
// rules (symbolic links, file modes) are in docs/checkpoint-format.md, "Saving".
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace minidl {

// Saves atomically over `path`: a regular file (its permission bits are kept), a symbolic link (the file
// it points to is replaced; the link stays), or nothing yet (created with 0666 minus the umask). A folder,
// device, FIFO or socket at `path` is refused, as is an empty path. The temporary file is removed when the
// save fails and when SIGINT, SIGTERM or SIGHUP ends the process during the save. `who` starts the error
// messages ("checkpoint" gives "checkpoint: cannot save 'PATH'"; "" gives "cannot save 'PATH'").
void write_bytes_atomically(const std::string& path, const uint8_t* data, size_t size, const std::string& who);

// Any other file that must be all or nothing (`mnist predict`'s submission CSV), written the same way
// as a checkpoint. Errors start "cannot save 'PATH'".
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

}  // namespace minidl
