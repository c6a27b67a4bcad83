// nn/safetensors.cpp — the safetensors format (nn/safetensors.h): a JSON header, then raw buffers.
#include "nn/safetensors.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "nn/atomic_file.h"

namespace minidl {

namespace {

// A header larger than this is a damaged or crafted file (the real ones are a few kilobytes per
// hundred tensors); the reference implementation's limit is the same 100 MB.
constexpr uint64_t kMaxHeaderBytes = 100u * 1000u * 1000u;

void put_u64_le(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

uint64_t get_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// minidl stores tensors in the host's byte order; the format is little-endian.
void check_little_endian() {
  const uint16_t probe = 1;
  uint8_t first = 0;
  std::memcpy(&first, &probe, 1);
  MINIDL_CHECK(first == 1, "safetensors: this machine is big-endian; the format is little-endian");
}

}  // namespace

const char* safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::float32: return "F32";
    case DType::float64: return "F64";
    case DType::int32: return "I32";
    case DType::int64: return "I64";
    case DType::bfloat16: return "BF16";
  }
  return "?";
}

DType safetensors_dtype(const std::string& name, const std::string& context) {
  if (name == "F32") return DType::float32;
  if (name == "F64") return DType::float64;
  if (name == "I32") return DType::int32;
  if (name == "I64") return DType::int64;
  if (name == "BF16") return DType::bfloat16;
  throw Error(str_cat(context, ": dtype ", name, " is not supported (minidl reads F32, F64, I32, I64, BF16)"));
}

std::vector<uint8_t> safetensors_bytes(const SafetensorsFile& file) {
  check_little_endian();
  nlohmann::json header = nlohmann::json::object();
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  std::vector<Tensor> host;
  uint64_t offset = 0;
  for (const auto& [name, t] : file.tensors) {
    MINIDL_CHECK(!name.empty() && name != "__metadata__", "safetensors: bad tensor name '", name, "'");
    MINIDL_CHECK(!header.contains(name), "safetensors: tensor '", name, "' given twice");
    const Tensor h = t.detach().to(Device::cpu()).contiguous();
    const uint64_t bytes = static_cast<uint64_t>(h.numel()) * dtype_size(h.dtype());
    header[name] = {{"dtype", safetensors_dtype_name(h.dtype())},
                    {"shape", h.shape()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    host.push_back(h);
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';  // the buffer starts 8-byte aligned
  std::vector<uint8_t> out;
  out.reserve(8 + text.size() + offset);
  put_u64_le(out, text.size());
  out.insert(out.end(), text.begin(), text.end());
  for (const Tensor& h : host) {
    const auto* p = static_cast<const uint8_t*>(h.raw_data());
    out.insert(out.end(), p, p + h.numel() * dtype_size(h.dtype()));
  }
  return out;
}

void write_safetensors(const std::string& path, const SafetensorsFile& file) {
  const std::vector<uint8_t> bytes = safetensors_bytes(file);
  write_bytes_atomically(path, bytes.data(), bytes.size(), "safetensors");
}

SafetensorsFile read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  MINIDL_CHECK(in.good(), "safetensors: cannot open '", path, "'");
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  MINIDL_CHECK(!in.bad(), "safetensors: cannot read '", path, "'");
  return parse_safetensors(bytes, path);
}

SafetensorsFile parse_safetensors(const std::vector<uint8_t>& bytes, const std::string& path) {
  check_little_endian();
  const std::string where = str_cat("safetensors: '", path, "'");
  MINIDL_CHECK(bytes.size() >= 8, where, " is too short to be a safetensors file (", bytes.size(), " bytes)");
  const uint64_t n = get_u64_le(bytes.data());
  MINIDL_CHECK(n <= kMaxHeaderBytes && n <= bytes.size() - 8, where, ": the header length ", n,
               " does not fit the file's ", bytes.size(), " bytes (not a safetensors file?)");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  } catch (const nlohmann::json::exception& e) {
    throw Error(str_cat(where, ": the header is not JSON (", e.what(), ")"));
  }
  MINIDL_CHECK(header.is_object(), where, ": the header is not a JSON object");
  const uint8_t* buffer = bytes.data() + 8 + n;
  const uint64_t buffer_size = bytes.size() - 8 - n;

  SafetensorsFile file;
  struct Entry {
    uint64_t begin, end;
    std::string name;
    DType dtype;
    Shape shape;
  };
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      MINIDL_CHECK(value.is_object(), where, ": __metadata__ is not an object");
      for (const auto& [k, v] : value.items()) {
        MINIDL_CHECK(v.is_string(), where, ": __metadata__ value of '", k, "' is not a string");
        file.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    const std::string ctx = str_cat(where, ", tensor '", name, "'");
    MINIDL_CHECK(value.is_object() && value.contains("dtype") && value.contains("shape") &&
                     value.contains("data_offsets"),
                 ctx, ": needs dtype, shape and data_offsets");
    MINIDL_CHECK(value["dtype"].is_string(), ctx, ": dtype is not a string");
    Entry e;
    e.name = name;
    e.dtype = safetensors_dtype(value["dtype"].get<std::string>(), ctx);
    const nlohmann::json& shape = value["shape"];
    const nlohmann::json& range = value["data_offsets"];
    MINIDL_CHECK(shape.is_array(), ctx, ": shape is not a list");
    uint64_t numel = 1;
    for (const nlohmann::json& d : shape) {
      MINIDL_CHECK(d.is_number_unsigned() && d.get<uint64_t>() <= buffer_size, ctx, ": bad dimension ", d.dump());
      const uint64_t dim = d.get<uint64_t>();
      MINIDL_CHECK(dim == 0 || numel <= buffer_size / dim, ctx, ": shape ", shape.dump(), " is larger than the file");
      numel *= dim;
      e.shape.push_back(static_cast<int64_t>(dim));
    }
    MINIDL_CHECK(range.is_array() && range.size() == 2 && range[0].is_number_unsigned() &&
                     range[1].is_number_unsigned(),
                 ctx, ": data_offsets is not [begin, end]");
    e.begin = range[0].get<uint64_t>();
    e.end = range[1].get<uint64_t>();
    MINIDL_CHECK(e.begin <= e.end && e.end <= buffer_size, ctx, ": data_offsets [", e.begin, ", ", e.end,
                 "] lie outside the file's ", buffer_size, " bytes of data");
    MINIDL_CHECK(e.end - e.begin == numel * dtype_size(e.dtype), ctx, ": data_offsets hold ", e.end - e.begin,
                 " bytes, shape ", shape.dump(), " of ", value["dtype"].get<std::string>(), " needs ",
                 numel * dtype_size(e.dtype));
    entries.push_back(e);
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < entries.size(); ++i)
    MINIDL_CHECK(entries[i].begin >= entries[i - 1].end, where, ": tensors '", entries[i - 1].name, "' and '",
                 entries[i].name, "' overlap");
  for (const Entry& e : entries) {
    Tensor t = empty(e.shape, TensorOptions(e.dtype, Device::cpu()));
    if (e.end > e.begin) std::memcpy(t.raw_data(), buffer + e.begin, e.end - e.begin);
    file.tensors.emplace_back(e.name, t);
  }
  return file;
}

}  // namespace minidl
