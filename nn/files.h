// nn/files.h — opening the files minidl reads (IDX, images, checkpoints) the same way everywhere.
//
// A reader must be given a regular file: a folder, a FIFO or a device in its place is named as such
// ("'x' is a directory, not a file"), never reported as missing, never read (a FIFO would block the
// reader forever). A file that cannot be opened is reported with the system's reason (strerror).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

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

}  // namespace minidl
