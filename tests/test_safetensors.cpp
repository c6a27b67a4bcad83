// tests/test_safetensors.cpp — nn/safetensors.h: the bytes written (header length, JSON, alignment, raw
// little-endian buffers), a round trip of every dtype and of views, and damaged files refused with one
// line. tests/safetensors_test.py checks the programs' export and import with a reader of its own.
#include <catch2/catch.hpp>
#include <cstring>
#include <nlohmann/json.hpp>

#include "nn/safetensors.h"
#include "tests/test_util.h"

using namespace minidl;

namespace {

uint64_t header_length(const std::vector<uint8_t>& bytes) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  return n;
}

nlohmann::json header_of(const std::vector<uint8_t>& bytes) {
  const uint64_t n = header_length(bytes);
  return nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
}

std::string parse_error(const std::vector<uint8_t>& bytes) {
  try {
    parse_safetensors(bytes, "t.safetensors");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("safetensors: the bytes are the format's, and every dtype comes back", "[safetensors]") {
  SafetensorsFile file;
  file.metadata = {{"format", "pt"}, {"model", "m"}};
  const Tensor w = from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  file.tensors = {{"w_t", w.transpose(0, 1)},  // a view: written row-major as its own shape
                  {"d", from_vector({0.25, -1e300}, {2}, DType::float64)},
                  {"i", from_vector(std::vector<int32_t>{-3, 7}, {2}, DType::int32)},
                  {"n", zeros({}, DType::int64)},
                  {"b", from_vector({1.5, -2}, {2}, DType::bfloat16)},
                  {"empty", zeros({0, 4})}};
  const std::vector<uint8_t> bytes = safetensors_bytes(file);
  const uint64_t n = header_length(bytes);
  CHECK(n % 8 == 0);  // the buffer starts aligned
  const nlohmann::json h = header_of(bytes);
  CHECK(h["__metadata__"]["model"] == "m");
  CHECK(h["w_t"]["dtype"] == "F32");
  CHECK(h["w_t"]["shape"] == nlohmann::json::array({3, 2}));
  CHECK(h["w_t"]["data_offsets"] == nlohmann::json::array({0, 24}));
  CHECK(h["d"]["data_offsets"] == nlohmann::json::array({24, 40}));
  CHECK(h["n"]["dtype"] == "I64");
  CHECK(h["n"]["shape"] == nlohmann::json::array());
  CHECK(h["b"]["dtype"] == "BF16");
  CHECK(bytes.size() == 8 + n + 24 + 16 + 8 + 8 + 4 + 0);
  float first_row[2];
  std::memcpy(first_row, bytes.data() + 8 + n, sizeof first_row);
  CHECK(first_row[0] == 1.0f);  // w_t[0] = (w[0][0], w[1][0])
  CHECK(first_row[1] == 4.0f);

  const SafetensorsFile back = parse_safetensors(bytes, "t.safetensors");
  CHECK(back.metadata == file.metadata);
  REQUIRE(back.tensors.size() == file.tensors.size());
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    INFO(file.tensors[i].first);
    CHECK(back.tensors[i].first == file.tensors[i].first);  // in buffer order, which is the written order
    const Tensor& got = back.tensors[i].second;
    const Tensor want = file.tensors[i].second.contiguous();
    CHECK(got.shape() == want.shape());
    CHECK(got.dtype() == want.dtype());
    CHECK(std::memcmp(got.raw_data(), want.raw_data(), want.numel() * dtype_size(want.dtype())) == 0);
  }
}

TEST_CASE("safetensors: damaged files are refused with one line", "[safetensors]") {
  SafetensorsFile file;
  file.tensors = {{"a", from_vector({1, 2, 3}, {3})}, {"b", from_vector({4, 5}, {2})}};
  const std::vector<uint8_t> good = safetensors_bytes(file);
  const uint64_t n = header_length(good);

  CHECK_THAT(parse_error({1, 2, 3}), Catch::Contains("too short"));
  std::vector<uint8_t> long_header = good;
  long_header[5] = 1;  // N = 2^40
  CHECK_THAT(parse_error(long_header), Catch::Contains("does not fit"));
  const std::vector<uint8_t> truncated(good.begin(), good.end() - 4);
  CHECK_THAT(parse_error(truncated), Catch::Contains("tensor 'b': data_offsets [12, 20] lie outside"));

  auto with_header = [&](const std::string& json) {
    std::string text = json;
    while (text.size() % 8) text += ' ';
    std::string all(8, '\0');
    for (int i = 0; i < 8; ++i) all[i] = static_cast<char>(text.size() >> (8 * i));
    all += text;
    all.append(good.begin() + 8 + static_cast<std::ptrdiff_t>(n), good.end());
    return std::vector<uint8_t>(all.begin(), all.end());
  };
  CHECK_THAT(parse_error(with_header("{not json")), Catch::Contains("not JSON"));
  CHECK_THAT(parse_error(with_header(R"({"a": {"dtype": "F16", "shape": [3], "data_offsets": [0, 6]}})")),
             Catch::Contains("tensor 'a': dtype F16 is not supported"));
  CHECK_THAT(parse_error(with_header(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 12]}})")),
             Catch::Contains("hold 12 bytes, shape [4] of F32 needs 16"));
  CHECK_THAT(parse_error(with_header(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]},
                                         "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})")),
             Catch::Contains("overlap"));
  CHECK_THAT(parse_error(with_header(R"({"a": {"dtype": "F32", "shape": [-3], "data_offsets": [0, 12]}})")),
             Catch::Contains("bad dimension -3"));
  CHECK_THAT(parse_error(with_header(R"({"a": {"dtype": "F32", "shape": [3]}})")),
             Catch::Contains("needs dtype, shape and data_offsets"));
  CHECK_THAT(parse_error(with_header(R"({"__metadata__": {"k": 1}})")), Catch::Contains("is not a string"));
  CHECK(parse_error(good).empty());
}
