// nn/idx.h — reading IDX files (the MNIST format), plain or gzip-compressed.
//
// An IDX file is big-endian:
//   bytes 0-1   zero
//   byte  2     element type: 0x08 unsigned byte (the only one MNIST uses, and the only one read here),
//               0x09 signed byte, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64
//   byte  3     number of dimensions d
//   d x uint32  the size of each dimension
//   then the elements, row-major: product of the sizes, times the element size.
// A file that starts with the gzip magic (1f 8b) is decompressed with zlib first: one gzip member or
// several back to back (as `cat a.gz b.gz` makes), and nothing else after them.
//
// Every error names the file and says what is wrong: cannot open (with the system's reason), a folder or
// FIFO in place of the file, wrong magic, unsupported element type, truncated (expected vs actual bytes),
// extra bytes after the data, corrupt gzip stream, a gzip stream cut before its trailer, bytes after the
// gzip stream that are not another gzip member.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace minidl {

struct IdxArray {
  std::vector<int64_t> dims;  // e.g. {60000, 28, 28}
  std::vector<uint8_t> data;  // product(dims) bytes, row-major
};

IdxArray read_idx(const std::string& path);
// The same from bytes in memory (fuzzing, tests); `name` stands for the file in messages.
IdxArray read_idx_bytes(const uint8_t* data, size_t size, const std::string& name);

// Throws unless images.dims[0] == labels.dims[0], naming both files and both counts.
void check_idx_counts_match(const IdxArray& images, const std::string& images_path, const IdxArray& labels,
                            const std::string& labels_path);

}  // namespace minidl
