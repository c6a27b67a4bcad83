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
// Every error is one line that names the file and says what is wrong: cannot open (with the system's
// reason), a folder or FIFO in place of the file, wrong magic, unsupported element type, more than
// kMaxIdxDims dimensions (a corrupt byte 3), sizes whose product exceeds kMaxIdxDataBytes, truncated
// (expected vs actual bytes), extra bytes after the data, corrupt gzip stream, a gzip stream cut before its
// trailer, bytes after the gzip stream that are not another gzip member.
//
// Memory follows the bytes that actually arrive, not the header's claim: the data is read in 4 MB chunks
// (so a header promising more than the file holds costs no more than the file), sizes beyond
// kMaxIdxDataBytes are refused before anything is allocated, and a caller that knows what it needs
// (check_header: MNIST's image count must equal its label count) refuses a header before its data is
// read. A 150 KB gzip file can hold 150 MB of zeros; it is read only when its header is what the caller
// wants.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace minidl {

// At most this many dimensions (byte 3 of the header; MNIST has 3 for images, 1 for labels).
constexpr int kMaxIdxDims = 8;
// At most this many data bytes (the product of the sizes): 1 GiB, over 1.3 million 28x28 images (EMNIST's
// largest file, 698k images, is 547 MB). Anything larger is taken for a corrupt header.
constexpr int64_t kMaxIdxDataBytes = int64_t(1) << 30;

struct IdxArray {
  std::vector<int64_t> dims;  // e.g. {60000, 28, 28}
  std::vector<uint8_t> data;  // product(dims) bytes, row-major
};

// Called with the header's sizes before any data is read; throws (a minidl::Error) to refuse the file.
using IdxHeaderCheck = std::function<void(const std::vector<int64_t>& dims)>;

IdxArray read_idx(const std::string& path, const IdxHeaderCheck& check_header = {});
// The same from bytes in memory (fuzzing, tests); `name` stands for the file in messages.
IdxArray read_idx_bytes(const uint8_t* data, size_t size, const std::string& name,
                        const IdxHeaderCheck& check_header = {});

// Throws unless the counts are equal, naming both files and both counts:
// "idx: 'images' has 60000 images but 'labels' has 10 labels".
void check_idx_counts_match(int64_t images, const std::string& images_path, int64_t labels,
                            const std::string& labels_path);
// The same with the first dimension of each array.
void check_idx_counts_match(const IdxArray& images, const std::string& images_path, const IdxArray& labels,
                            const std::string& labels_path);

}  // namespace minidl
