// nn/idx.h — reading IDX files (the MNIST format), plain or gzip-compressed.
//
// An IDX file is big-endian:
//   bytes 0-1   zero
//   byte  2     element type: 0x08 unsigned byte (the only one MNIST uses, and the only one read here),
//               0x09 signed byte, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64
//   byte  3     number of dimensions d
//   d x uint32  the size of each dimension
//   then the elements, row-major: product of the sizes, times the element size.
// A file that starts with the gzip magic (1f 8b) is decompressed with zlib first.
//
// Every error names the file and says what is wrong: cannot open, wrong magic, unsupported element
// type, truncated (expected vs actual bytes), extra bytes after the data, corrupt gzip stream.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace minidl {

struct IdxArray {
  std::vector<int64_t> dims;  // e.g. {60000, 28, 28}
  std::vector<uint8_t> data;  // product(dims) bytes, row-major
};

IdxArray read_idx(const std::string& path);

// Throws unless images.dims[0] == labels.dims[0], naming both files and both counts.
void check_idx_counts_match(const IdxArray& images, const std::string& images_path, const IdxArray& labels,
                            const std::string& labels_path);

}  // namespace minidl
