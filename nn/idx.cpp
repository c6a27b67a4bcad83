#include "nn/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace minidl {

namespace {

// A byte stream over a plain or a gzip file (chosen by the file's first two bytes).
class ByteSource {
 public:
  explicit ByteSource(const std::string& path) : path_(path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    MINIDL_CHECK(f != nullptr, "idx: cannot open '", path, "': ", std::strerror(errno));
    unsigned char magic[2] = {0, 0};
    const size_t n = std::fread(magic, 1, 2, f);
    gzip_ = n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (gzip_) {
      std::fclose(f);
      gz_ = gzopen(path.c_str(), "rb");
      MINIDL_CHECK(gz_ != nullptr, "idx: cannot open '", path, "' as gzip");
    } else {
      std::rewind(f);
      file_ = f;
    }
  }
  ~ByteSource() {
    if (file_) std::fclose(file_);
    if (gz_) gzclose(gz_);
  }
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  bool gzip() const { return gzip_; }

  // Reads up to n bytes; returns how many it got (fewer only at the end of the data). A damaged gzip
  // stream is an error; a gzip stream cut short just ends (and the caller reports the truncation).
  size_t read(void* dst, size_t n) {
    if (!gzip_) return std::fread(dst, 1, n, file_);
    size_t got = 0;
    while (got < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - got, 1u << 30));
      const int r = gzread(gz_, static_cast<char*>(dst) + got, chunk);
      if (r < 0 || (r == 0 && !gzeof(gz_))) {
        int code = 0;
        const char* msg = gzerror(gz_, &code);
        if (code == Z_BUF_ERROR) break;  // "unexpected end of file": truncated
        throw Error(str_cat("idx: '", path_, "': corrupt gzip data (", msg, ")"));
      }
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    return got;
  }

 private:
  std::string path_;
  bool gzip_ = false;
  std::FILE* file_ = nullptr;
  gzFile gz_ = nullptr;
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

}  // namespace

IdxArray read_idx(const std::string& path) {
  ByteSource src(path);
  const std::string what = str_cat("idx: '", path, "'", src.gzip() ? " (gzip)" : "");

  unsigned char magic[4];
  const size_t got_magic = src.read(magic, 4);
  MINIDL_CHECK(got_magic == 4, what, ": truncated: expected a 4-byte header, the file has ", got_magic,
               " bytes");
  MINIDL_CHECK(magic[0] == 0 && magic[1] == 0, what, ": not an IDX file: wrong magic number (first bytes ",
               hex_bytes(magic, 4), "; an IDX file starts 00 00 <type> <dims>)");
  MINIDL_CHECK(magic[2] == 0x08, what, ": unsupported element type 0x", hex_bytes(magic + 2, 1), " (",
               type_code_name(magic[2]), "); only unsigned byte (0x08) is supported");
  const int ndims = magic[3];
  MINIDL_CHECK(ndims >= 1, what, ": the header says the data has 0 dimensions");

  IdxArray out;
  constexpr int64_t kMaxBytes = int64_t(1) << 40;  // anything larger is a corrupt header, not data
  int64_t expected = 1;
  for (int d = 0; d < ndims; ++d) {
    unsigned char b[4];
    const size_t got = src.read(b, 4);
    MINIDL_CHECK(got == 4, what, ": truncated in the header: expected ", 4 + 4 * ndims, " header bytes for ", ndims,
                 " dimensions, got ", 4 + 4 * d + static_cast<int>(got));
    const int64_t size = (int64_t(b[0]) << 24) | (int64_t(b[1]) << 16) | (int64_t(b[2]) << 8) | int64_t(b[3]);
    out.dims.push_back(size);
    expected = size == 0 ? 0 : (expected > kMaxBytes / size ? kMaxBytes + 1 : expected * size);
  }
  std::string dims_text;
  for (int64_t s : out.dims) dims_text += (dims_text.empty() ? "" : "x") + std::to_string(s);
  MINIDL_CHECK(expected <= kMaxBytes, what, ": the header's sizes (", dims_text, ") are absurd; corrupt file?");

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
  return out;
}

void check_idx_counts_match(const IdxArray& images, const std::string& images_path, const IdxArray& labels,
                            const std::string& labels_path) {
  MINIDL_CHECK(!images.dims.empty() && !labels.dims.empty() && images.dims[0] == labels.dims[0],
               "idx: '", images_path, "' has ", images.dims.empty() ? 0 : images.dims[0], " images but '",
               labels_path, "' has ", labels.dims.empty() ? 0 : labels.dims[0], " labels");
}

}  // namespace minidl
