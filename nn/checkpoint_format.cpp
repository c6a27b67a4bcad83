// nn/checkpoint_format.cpp — the checkpoint file's bytes: header, metadata, tensors, CRC-32
// (nn/checkpoint_format.h; byte by byte in docs/checkpoint-format.md).
#include "nn/checkpoint_format.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>

#include "core/error.h"
#include "nn/atomic_file.h"
#include "nn/files.h"

namespace minidl {

namespace {

constexpr char kMagic[8] = {'M', 'I', 'N', 'I', 'D', 'L', 'C', 'K'};
constexpr size_t kHeaderBytes = 24;  // magic, version, flags, file size
constexpr size_t kTrailerBytes = 4;  // CRC-32
constexpr uint32_t kMaxNameBytes = 1u << 16;
constexpr int kMaxDims = 16;

bool host_is_little_endian() {
  const uint16_t one = 1;
  uint8_t first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

// Stable on-disk dtype codes (independent of the DType enum's order).
uint8_t dtype_code(DType t) {
  switch (t) {
    case DType::float32: return 0;
    case DType::float64: return 1;
    case DType::int32: return 2;
    case DType::int64: return 3;
    case DType::bfloat16: break;  // not a checkpoint dtype: parameters and state are float32/float64
  }
  return 255;
}

bool dtype_from_code(uint8_t code, DType& t) {
  switch (code) {
    case 0: t = DType::float32; return true;
    case 1: t = DType::float64; return true;
    case 2: t = DType::int32; return true;
    case 3: t = DType::int64; return true;
    default: return false;
  }
}

// ------------------------------------------------------------------ writing

class Writer {
 public:
  void u8(uint8_t v) { bytes.push_back(v); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void raw(const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
  }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    raw(s.data(), s.size());
  }
  void put_u64_at(size_t pos, uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes[pos + i] = static_cast<uint8_t>(v >> (8 * i));
  }
  std::vector<uint8_t> bytes;
};

std::vector<uint8_t> serialize(const std::string& path, const Checkpoint& ck) {
  MINIDL_CHECK(host_is_little_endian(), "checkpoint: writing needs a little-endian host");
  Writer w;
  w.raw(kMagic, sizeof kMagic);
  w.u32(kCheckpointVersion);
  w.u32(0);  // flags, reserved
  w.u64(0);  // file size, patched below
  w.u32(static_cast<uint32_t>(ck.metadata.size()));
  for (const auto& [key, value] : ck.metadata) {
    MINIDL_CHECK(key.size() <= kMaxNameBytes && value.size() <= UINT32_MAX, "checkpoint: '", path,
                 "': metadata entry '", key.substr(0, 64), "' is too long");
    w.str(key);
    w.str(value);
  }
  w.u32(static_cast<uint32_t>(ck.tensors.size()));
  std::set<std::string> names;
  for (const auto& [name, tensor] : ck.tensors) {
    MINIDL_CHECK(names.insert(name).second, "checkpoint: '", path, "': the tensor name '", name, "' appears twice");
    MINIDL_CHECK(tensor.defined(), "checkpoint: '", path, "': tensor '", name, "' is undefined");
    MINIDL_CHECK(name.size() <= kMaxNameBytes && tensor.dim() <= kMaxDims, "checkpoint: '", path, "': tensor '",
                 name.substr(0, 64), "' has too long a name or too many dims");
    MINIDL_CHECK(dtype_code(tensor.dtype()) != 255, "checkpoint: '", path, "': tensor '", name, "' is ",
                 dtype_name(tensor.dtype()), ", which checkpoints do not store (float32, float64, int32, int64)");
    const Tensor host = tensor.detach().to(Device::cpu()).contiguous();
    w.str(name);
    w.u8(dtype_code(host.dtype()));
    w.u8(static_cast<uint8_t>(host.dim()));
    for (int64_t s : host.shape()) w.u64(static_cast<uint64_t>(s));
    const size_t nbytes = host.numel() * dtype_size(host.dtype());
    w.u64(nbytes);
    w.raw(host.raw_data(), nbytes);
  }
  w.put_u64_at(16, w.bytes.size() + kTrailerBytes);
  w.u32(static_cast<uint32_t>(crc32_z(0L, w.bytes.data(), w.bytes.size())));
  return w.bytes;
}

// ------------------------------------------------------------------ reading

// Bounds-checked reads over the part of the file covered by the checksum.
class Reader {
 public:
  Reader(const std::vector<uint8_t>& bytes, size_t begin, size_t end, std::string what)
      : b_(bytes), pos_(begin), end_(end), what_(std::move(what)) {}

  size_t remaining() const { return end_ - pos_; }
  void need(size_t n, const std::string& field) const {
    if (n > remaining())
      throw Error(str_cat(what_, ": corrupt: ", field, " needs ", n, " bytes at offset ", pos_, " but only ",
                          remaining(), " remain"));
  }
  uint8_t u8(const std::string& field) {
    need(1, field);
    return b_[pos_++];
  }
  uint32_t u32(const std::string& field) {
    need(4, field);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(b_[pos_ + i]) << (8 * i);
    pos_ += 4;
    return v;
  }
  uint64_t u64(const std::string& field) {
    need(8, field);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(b_[pos_ + i]) << (8 * i);
    pos_ += 8;
    return v;
  }
  std::string str(const std::string& field, uint32_t max_len) {
    const uint32_t n = u32(field + " length");
    if (n > max_len) throw Error(str_cat(what_, ": corrupt: ", field, " length ", n, " exceeds the limit ", max_len));
    need(n, field);
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  const uint8_t* take(size_t n, const std::string& field) {
    need(n, field);
    const uint8_t* p = b_.data() + pos_;
    pos_ += n;
    return p;
  }
  Error corrupt(const std::string& why) const { return Error(str_cat(what_, ": corrupt: ", why)); }

 private:
  const std::vector<uint8_t>& b_;
  size_t pos_, end_;
  std::string what_;
};

uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

uint64_t le64(const uint8_t* p) { return static_cast<uint64_t>(le32(p)) | static_cast<uint64_t>(le32(p + 4)) << 32; }

// The header checks, in order: identity first (so a random file is called "not a checkpoint", not
// "truncated"), then size and version. `head` holds the first min(size, kHeaderBytes) bytes of a file of
// `size` bytes. The checksum and the structure are checked by the caller.
void check_header(const uint8_t* head, size_t size, const std::string& what) {
  MINIDL_CHECK(size > 0 && std::memcmp(head, kMagic, std::min(size, sizeof kMagic)) == 0, what,
               ": not a minidl checkpoint (wrong magic; expected the file to start with \"MINIDLCK\")");
  MINIDL_CHECK(size >= kHeaderBytes + kTrailerBytes, what, ": truncated: the file has ", size,
               " bytes, less than the ", kHeaderBytes + kTrailerBytes, " of an empty checkpoint");
  const uint32_t version = le32(head + 8);
  MINIDL_CHECK(version == kCheckpointVersion, what, ": unsupported format version ", version,
               " (this build reads version ", kCheckpointVersion, ")");
  const uint64_t declared = le64(head + 16);
  MINIDL_CHECK(declared >= size, what, ": ", size - declared, " unexpected bytes after the end (the header says the file has ",
               declared, " bytes, it has ", size, ")");
  MINIDL_CHECK(declared == size, what, ": truncated: the header says the file has ", declared, " bytes, it has ", size);
}

// Reads the file in two steps: the header first, checked, then the rest; so a large file that is not a
// checkpoint is rejected without being loaded into memory.
std::vector<uint8_t> read_checked_file(const std::string& path, const std::string& what) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(open_regular_file(path, "checkpoint"), &std::fclose);
  struct stat st;
  MINIDL_CHECK(::fstat(fileno(f.get()), &st) == 0, what, ": cannot read: ", std::strerror(errno));
  const size_t size = static_cast<size_t>(st.st_size);
  std::vector<uint8_t> bytes(std::min(size, kHeaderBytes));
  auto read_into = [&](size_t from) {
    const size_t want = bytes.size() - from;
    const size_t got = want == 0 ? 0 : std::fread(bytes.data() + from, 1, want, f.get());
    MINIDL_CHECK(got == want, what, ": read error after ", from + got, " of ", size, " bytes");
  };
  read_into(0);
  check_header(bytes.data(), size, what);
  bytes.resize(size);
  read_into(kHeaderBytes);
  return bytes;
}

}  // namespace

void write_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
  const std::vector<uint8_t> bytes = serialize(path, checkpoint);
  write_bytes_atomically(path, bytes.data(), bytes.size(), "checkpoint");
}

Checkpoint read_checkpoint(const std::string& path) {
  MINIDL_CHECK(host_is_little_endian(), "checkpoint: reading needs a little-endian host");
  return parse_checkpoint(read_checked_file(path, str_cat("checkpoint '", path, "'")), path);
}

Checkpoint parse_checkpoint(const std::vector<uint8_t>& bytes, const std::string& path) {
  MINIDL_CHECK(host_is_little_endian(), "checkpoint: reading needs a little-endian host");
  const std::string what = str_cat("checkpoint '", path, "'");
  const size_t size = bytes.size();
  check_header(bytes.data(), size, what);
  const uint32_t stored_crc = le32(bytes.data() + size - kTrailerBytes);
  const uint32_t crc = static_cast<uint32_t>(crc32_z(0L, bytes.data(), size - kTrailerBytes));
  if (crc != stored_crc) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "stored 0x%08x, computed 0x%08x", stored_crc, crc);
    throw Error(str_cat(what, ": checksum mismatch (", buf, "): the file is corrupt"));
  }

  Reader r(bytes, kHeaderBytes, size - kTrailerBytes, what);
  Checkpoint ck;
  const uint32_t n_meta = r.u32("metadata count");
  if (n_meta > r.remaining() / 8) throw r.corrupt(str_cat("metadata count ", n_meta, " is larger than the file allows"));
  for (uint32_t i = 0; i < n_meta; ++i) {
    std::string key = r.str("metadata key", kMaxNameBytes);
    std::string value = r.str("metadata value of '" + key + "'", UINT32_MAX);
    if (!ck.metadata.emplace(std::move(key), std::move(value)).second) throw r.corrupt("a metadata key appears twice");
  }
  const uint32_t n_tensors = r.u32("tensor count");
  if (n_tensors > r.remaining() / 14) throw r.corrupt(str_cat("tensor count ", n_tensors, " is larger than the file allows"));
  std::set<std::string> names;
  for (uint32_t i = 0; i < n_tensors; ++i) {
    std::string name = r.str(str_cat("name of tensor ", i), kMaxNameBytes);
    const std::string field = "tensor '" + name + "'";
    if (!names.insert(name).second) throw r.corrupt(field + " appears twice");
    DType dtype;
    const uint8_t code = r.u8(field + " dtype");
    if (!dtype_from_code(code, dtype)) throw r.corrupt(str_cat(field, " has an unknown dtype code ", int(code)));
    const int ndim = r.u8(field + " rank");
    if (ndim > kMaxDims) throw r.corrupt(str_cat(field, " has ", ndim, " dimensions (at most ", kMaxDims, ")"));
    Shape shape;
    uint64_t numel = 1;
    const uint64_t max_elems = r.remaining();  // no element takes less than a byte
    for (int d = 0; d < ndim; ++d) {
      const uint64_t s = r.u64(field + " shape");
      if (s > max_elems || (s != 0 && numel > max_elems / s))
        throw r.corrupt(str_cat(field, " has an absurd shape (dimension ", d, " is ", s, ")"));
      numel *= s;
      shape.push_back(static_cast<int64_t>(s));
    }
    const uint64_t nbytes = r.u64(field + " byte count");
    if (nbytes != numel * dtype_size(dtype))
      throw r.corrupt(str_cat(field, " ", shape_str(shape), " ", dtype_name(dtype), " declares ", nbytes,
                              " data bytes, expected ", numel * dtype_size(dtype)));
    const uint8_t* data = r.take(nbytes, field + " data");
    Tensor t = empty(shape, TensorOptions(dtype, Device::cpu()));
    if (nbytes > 0) std::memcpy(t.raw_data(), data, nbytes);
    ck.tensors.emplace_back(std::move(name), t);
  }
  if (r.remaining() != 0) throw r.corrupt(str_cat(r.remaining(), " bytes after the last tensor"));
  return ck;
}

}  // namespace minidl
