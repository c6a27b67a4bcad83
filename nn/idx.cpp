#include "nn/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "nn/files.h"

namespace minidl {

namespace {

// Where the file's bytes come from: the file itself, or memory.
class RawInput {
 public:
  virtual ~RawInput() = default;
  // Up to n bytes; fewer only at the end.
  virtual size_t read(uint8_t* dst, size_t n) = 0;
};

class FileInput : public RawInput {
 public:
  explicit FileInput(const std::string& path) : file_(open_regular_file(path, "idx"), &std::fclose), path_(path) {}
  size_t read(uint8_t* dst, size_t n) override {
    const size_t got = std::fread(dst, 1, n, file_.get());
    MINIDL_CHECK(got == n || !std::ferror(file_.get()), "idx: cannot read '", path_, "': ", std::strerror(errno));
    return got;
  }

 private:
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
  std::string path_;
};

class MemoryInput : public RawInput {
 public:
  MemoryInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t read(uint8_t* dst, size_t n) override {
    const size_t got = std::min(n, size_ - pos_);
    if (got > 0) std::memcpy(dst, data_ + pos_, got);
    pos_ += got;
    return got;
  }

 private:
  const uint8_t* data_;
  size_t size_, pos_ = 0;
};

// The decoded byte stream: the raw bytes, or their gzip decompression when they start with 1f 8b.
// zlib's inflate() is driven directly (not gzread, which silently ignores whatever follows the last
// gzip member) so that every byte of the file is accounted for: after a member ends, the next bytes
// must be another member or nothing.
class ByteSource {
 public:
  ByteSource(std::unique_ptr<RawInput> raw, std::string what) : raw_(std::move(raw)), what_(std::move(what)) {
    in_.resize(1 << 16);
    in_size_ = raw_->read(in_.data(), 2);
    gzip_ = in_size_ == 2 && in_[0] == 0x1f && in_[1] == 0x8b;
    if (gzip_) {
      what_ += " (gzip)";
      MINIDL_CHECK(inflateInit2(&z_, 16 + MAX_WBITS) == Z_OK, what_, ": zlib cannot start (out of memory?)");
      z_open_ = true;
      z_.next_in = in_.data();
      z_.avail_in = static_cast<uInt>(in_size_);
    }
  }
  ~ByteSource() {
    if (z_open_) inflateEnd(&z_);
  }
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  bool gzip() const { return gzip_; }
  // True when the gzip input ended inside a member (before its CRC and length trailer).
  bool gzip_cut_short() const { return cut_short_; }

  // Reads up to n bytes; returns how many it got (fewer only at the end of the data). A damaged gzip
  // stream and bytes after the gzip stream are errors; a gzip stream cut short just ends (the caller
  // reports the truncation).
  size_t read(void* dst, size_t n) {
    uint8_t* out = static_cast<uint8_t*>(dst);
    if (!gzip_) {
      const size_t from_peek = std::min(n, in_size_ - in_pos_);
      if (from_peek > 0) std::memcpy(out, in_.data() + in_pos_, from_peek);
      in_pos_ += from_peek;
      return from_peek + (from_peek < n ? raw_->read(out + from_peek, n - from_peek) : 0);
    }
    size_t got = 0;
    while (got < n && !finished_) {
      if (z_.avail_in == 0 && !refill()) {
        cut_short_ = true;  // the input ended inside a member
        finished_ = true;
        break;
      }
      const uInt want = static_cast<uInt>(std::min<size_t>(n - got, 1u << 30));
      z_.next_out = out + got;
      z_.avail_out = want;
      const int r = inflate(&z_, Z_NO_FLUSH);
      got += want - z_.avail_out;
      if (r == Z_STREAM_END) {
        next_member();
      } else if (r != Z_OK && r != Z_BUF_ERROR) {  // Z_BUF_ERROR: no progress until more input comes
        throw Error(str_cat(what_, ": corrupt gzip data (", z_.msg ? z_.msg : zError(r), ")"));
      }
    }
    return got;
  }

 private:
  bool refill() {
    in_size_ = raw_->read(in_.data(), in_.size());
    z_.next_in = in_.data();
    z_.avail_in = static_cast<uInt>(in_size_);
    return in_size_ > 0;
  }

  // After a member's end: the data ends here, or another member follows, or it is an error.
  void next_member() {
    if (z_.avail_in == 0 && !refill()) {
      finished_ = true;
      return;
    }
    if (z_.avail_in == 1) {  // one byte in the buffer: fetch one more to see the magic
      in_[0] = *z_.next_in;
      in_size_ = 1 + raw_->read(in_.data() + 1, in_.size() - 1);
      z_.next_in = in_.data();
      z_.avail_in = static_cast<uInt>(in_size_);
    }
    if (z_.avail_in >= 2 && z_.next_in[0] == 0x1f && z_.next_in[1] == 0x8b) {
      inflateReset(&z_);
      return;
    }
    uint64_t junk = z_.avail_in;
    while (refill()) junk += z_.avail_in;
    throw Error(str_cat(what_, ": ", junk, " bytes after the end of the gzip stream that are not gzip data "
                        "(a damaged or appended-to file?)"));
  }

  std::unique_ptr<RawInput> raw_;
  std::string what_;
  std::vector<uint8_t> in_;
  size_t in_size_ = 0, in_pos_ = 0;
  bool gzip_ = false, z_open_ = false, finished_ = false, cut_short_ = false;
  z_stream z_{};
};

const char* type_code_name(int code) {
  switch (code) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
    default: return "unknown";
  }
}

std::string hex_bytes(const unsigned char* b, int n) {
  std::string out;
  char buf[4];
  for (int i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", b[i]);
    out += (i ? " " : "") + std::string(buf);
  }
  return out;
}

IdxArray read_idx_from(std::unique_ptr<RawInput> raw, const std::string& name, const IdxHeaderCheck& check_header) {
  ByteSource src(std::move(raw), str_cat("idx: '", name, "'"));
  const std::string what = str_cat("idx: '", name, "'", src.gzip() ? " (gzip)" : "");

  unsigned char magic[4];
  const size_t got_magic = src.read(magic, 4);
  MINIDL_CHECK(got_magic == 4, what, ": truncated: expected a 4-byte header, the file has ", got_magic,
               " bytes", src.gzip() ? " (decompressed)" : "");
  MINIDL_CHECK(magic[0] == 0 && magic[1] == 0, what, ": not an IDX file: wrong magic number (first bytes ",
               hex_bytes(magic, 4), "; an IDX file starts 00 00 <type> <dims>)");
  MINIDL_CHECK(magic[2] == 0x08, what, ": unsupported element type 0x", hex_bytes(magic + 2, 1), " (",
               type_code_name(magic[2]), "); only unsigned byte (0x08) is supported");
  const int ndims = magic[3];
  MINIDL_CHECK(ndims >= 1 && ndims <= kMaxIdxDims, what, ": header byte 3 (the number of dimensions) is ", ndims,
               "; this reader accepts 1 to ", kMaxIdxDims, " (MNIST: 3 for images, 1 for labels); a corrupt byte?");

  // The sizes, and their product checked as each arrives (it cannot overflow: it stays at most
  // kMaxIdxDataBytes times one size, below 2^62).
  IdxArray out;
  int64_t expected = 1;
  bool empty = false;
  std::string dims_text;
  for (int d = 0; d < ndims; ++d) {
    unsigned char b[4];
    const size_t got = src.read(b, 4);
    MINIDL_CHECK(got == 4, what, ": truncated in the header: expected ", 4 + 4 * ndims, " header bytes for ", ndims,
                 " dimensions, got ", 4 + 4 * d + static_cast<int>(got));
    const int64_t size = (int64_t(b[0]) << 24) | (int64_t(b[1]) << 16) | (int64_t(b[2]) << 8) | int64_t(b[3]);
    out.dims.push_back(size);
    dims_text += (d ? "x" : "") + std::to_string(size);
    if (expected <= kMaxIdxDataBytes) expected *= size;
    empty = empty || size == 0;
  }
  if (empty) expected = 0;
  MINIDL_CHECK(expected <= kMaxIdxDataBytes, what, ": the header's sizes ", dims_text, " make more than ",
               kMaxIdxDataBytes, " bytes (1 GiB), the most this reader accepts; a corrupt header?");
  if (check_header) check_header(out.dims);

  // Read in chunks, so a header that promises more than the file holds costs no more memory than the
  // file itself.
  constexpr size_t kChunk = size_t(1) << 22;
  while (static_cast<int64_t>(out.data.size()) < expected) {
    const size_t want = std::min<size_t>(kChunk, static_cast<size_t>(expected) - out.data.size());
    const size_t before = out.data.size();
    out.data.resize(before + want);
    const size_t got = src.read(out.data.data() + before, want);
    out.data.resize(before + got);
    if (got < want) break;
  }
  MINIDL_CHECK(static_cast<int64_t>(out.data.size()) == expected, what, ": truncated: the header (", dims_text,
               ") needs ", expected, " data bytes, the file has ", out.data.size(), src.gzip() ? " (decompressed)" : "");

  unsigned char extra[4096];
  size_t surplus = 0;
  for (size_t got; (got = src.read(extra, sizeof extra)) > 0;) surplus += got;
  MINIDL_CHECK(surplus == 0, what, ": ", surplus, " unexpected bytes after the ", expected,
               " data bytes the header (", dims_text, ") describes");
  MINIDL_CHECK(!src.gzip_cut_short(), what, ": truncated: the gzip stream ends before its trailer (the CRC and "
               "length that close it)");
  return out;
}

}  // namespace

IdxArray read_idx(const std::string& path, const IdxHeaderCheck& check_header) {
  return read_idx_from(std::make_unique<FileInput>(path), path, check_header);
}

IdxArray read_idx_bytes(const uint8_t* data, size_t size, const std::string& name, const IdxHeaderCheck& check_header) {
  return read_idx_from(std::make_unique<MemoryInput>(data, size), name, check_header);
}

void check_idx_counts_match(int64_t images, const std::string& images_path, int64_t labels,
                            const std::string& labels_path) {
  MINIDL_CHECK(images == labels, "idx: '", images_path, "' has ", images, " images but '", labels_path, "' has ",
               labels, " labels");
}

void check_idx_counts_match(const IdxArray& images, const std::string& images_path, const IdxArray& labels,
                            const std::string& labels_path) {
  check_idx_counts_match(images.dims.empty() ? 0 : images.dims[0], images_path, labels.dims.empty() ? 0 : labels.dims[0],
                         labels_path);
}

}  // namespace minidl
