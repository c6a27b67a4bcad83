// tests/test_checkpoint.cpp — the checkpoint file: round trips (tensors of every dtype, metadata, a
// model with its optimizer state) and every way a file can be wrong: magic, version, truncation, a
// flipped byte, crafted sizes; a model or optimizer state that does not fit (another kind of model, other
// dtypes), strict metadata values; plus atomic saving (a failed save leaves the old file intact).
#include <dirent.h>
#include <stdlib.h>
#include <zlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "nn/checkpoint.h"
#include "nn/optim.h"
#include "ops/ops.h"

using namespace minidl;

namespace {

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/minidl_test_ckpt_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string file(const std::string& name) const { return path + "/" + name; }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    DIR* d = ::opendir(path.c_str());
    while (dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) out.push_back(e->d_name);
    ::closedir(d);
    return out;
  }
  std::string path;
};

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::vector<uint8_t> out;
  int c;
  while ((c = std::fgetc(f)) != EOF) out.push_back(static_cast<uint8_t>(c));
  std::fclose(f);
  return out;
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  if (!bytes.empty()) std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

// Rewrites the trailing CRC so a deliberately edited file passes the checksum.
void fix_crc(std::vector<uint8_t>& bytes) {
  const uint32_t crc = static_cast<uint32_t>(crc32_z(0L, bytes.data(), bytes.size() - 4));
  for (int i = 0; i < 4; ++i) bytes[bytes.size() - 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
}

// A module built without any op, so this file tests only the checkpoint code.
class TinyNet : public Module {
 public:
  explicit TinyNet(int64_t width = 3) {
    weight = register_parameter("weight", width == 3 ? from_vector({1, 2, 3, 4, 5, 6}, {2, 3}) : zeros({2, width}));
    bias = register_parameter("bias", from_vector({0.5, -0.5}, {2}));
    running = register_buffer("running", from_vector({7, 8}, {2}, DType::float64));
  }
  std::string type_name() const override { return "TinyNet"; }
  Tensor weight, bias, running;
};

void give_gradients(TinyNet& net, double scale) {
  net.weight.set_grad(from_vector({0.1 * scale, -0.2, 0.3, 0.4, -0.5 * scale, 0.6}, {2, 3}));
  net.bias.set_grad(from_vector({1.0, -2.0 * scale}, {2}));
}

Checkpoint sample_checkpoint() {
  Checkpoint ck;
  ck.metadata["model"] = "tiny";
  ck.metadata["charset"] = "0123456789abc";
  ck.metadata[""] = "an empty key is allowed";
  ck.tensors.emplace_back("f32", from_vector({1.5, -2.25, 3e-8, 4e8}, {2, 2}));
  ck.tensors.emplace_back("f64", from_vector({3.141592653589793}, {1}, DType::float64));
  ck.tensors.emplace_back("i32", from_vector({-7, 8, 9}, {3}, DType::int32));
  ck.tensors.emplace_back("i64", from_vector({1e15, -3}, {2, 1}, DType::int64));
  ck.tensors.emplace_back("empty", zeros({0, 4}));
  ck.tensors.emplace_back("view", from_vector({1, 2, 3, 4, 5, 6}, {2, 3}).transpose(0, 1));  // non-contiguous
  return ck;
}

}  // namespace

TEST_CASE("checkpoint: tensors of every dtype and metadata round trip exactly", "[checkpoint]") {
  TempDir dir;
  const Checkpoint ck = sample_checkpoint();
  write_checkpoint(dir.file("a.ckpt"), ck);
  const Checkpoint back = read_checkpoint(dir.file("a.ckpt"));
  CHECK(back.metadata == ck.metadata);
  REQUIRE(back.tensors.size() == ck.tensors.size());
  for (size_t i = 0; i < ck.tensors.size(); ++i) {
    INFO(ck.tensors[i].first);
    CHECK(back.tensors[i].first == ck.tensors[i].first);
    CHECK(back.tensors[i].second.dtype() == ck.tensors[i].second.dtype());
    CHECK(back.tensors[i].second.shape() == ck.tensors[i].second.shape());
    CHECK(back.tensors[i].second.device() == Device::cpu());
    CHECK(back.tensors[i].second.to_vector<double>() == ck.tensors[i].second.to_vector<double>());
  }
  CHECK(dir.entries() == std::vector<std::string>{"a.ckpt"});  // no temporary file left behind
}

TEST_CASE("checkpoint: a model and its Adam state resume exactly", "[checkpoint]") {
  TempDir dir;
  TinyNet net;
  Adam adam(net.parameters(), AdamOptions{});
  for (int s = 1; s <= 3; ++s) {
    give_gradients(net, s);
    adam.step();
  }
  fill_(net.running, 42);
  save_checkpoint(dir.file("m.ckpt"), net, &adam, {{"epoch", "3"}});

  TinyNet net2;
  Adam adam2(net2.parameters(), AdamOptions{});
  const auto meta = load_checkpoint(dir.file("m.ckpt"), net2, &adam2);
  CHECK(meta.at("epoch") == "3");
  CHECK(meta.at("optimizer") == "Adam");
  CHECK(adam2.step_count() == 3);
  CHECK(net2.weight.to_vector<float>() == net.weight.to_vector<float>());
  CHECK(net2.running.to_vector<double>() == std::vector<double>{42, 42});
  CHECK(net2.weight.requires_grad());

  // The resumed pair takes the same next step as the original (the moments and step counts came back).
  give_gradients(net, 4);
  give_gradients(net2, 4);
  adam.step();
  adam2.step();
  CHECK(net2.weight.to_vector<float>() == net.weight.to_vector<float>());
  CHECK(net2.bias.to_vector<float>() == net.bias.to_vector<float>());

  // Loading the model alone works; asking for optimizer state of another kind does not.
  TinyNet net3;
  CHECK_NOTHROW(load_checkpoint(dir.file("m.ckpt"), net3));
  SGD sgd(net3.parameters(), SgdOptions{});
  CHECK_THROWS_WITH(load_checkpoint(dir.file("m.ckpt"), net3, &sgd), Catch::Contains("holds Adam state, not SGD"));
  TinyNet wide(4);
  CHECK_THROWS_WITH(load_checkpoint(dir.file("m.ckpt"), wide),
                    Catch::Contains("m.ckpt") && Catch::Contains("shape mismatch: weight (expected [2,4], got [2,3])"));
  save_checkpoint(dir.file("model_only.ckpt"), net, nullptr);
  CHECK_THROWS_WITH(load_checkpoint(dir.file("model_only.ckpt"), net3, &sgd), Catch::Contains("holds no optimizer state"));
}

TEST_CASE("checkpoint: wrong magic, unsupported version", "[checkpoint]") {
  TempDir dir;
  write_bytes(dir.file("text.ckpt"), {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'});
  CHECK_THROWS_WITH(read_checkpoint(dir.file("text.ckpt")),
                    Catch::Contains("text.ckpt") && Catch::Contains("not a minidl checkpoint (wrong magic"));
  write_bytes(dir.file("empty.ckpt"), {});
  CHECK_THROWS_WITH(read_checkpoint(dir.file("empty.ckpt")), Catch::Contains("not a minidl checkpoint"));
  CHECK_THROWS_WITH(read_checkpoint(dir.file("missing.ckpt")), Catch::Contains("cannot open") && Catch::Contains("missing.ckpt"));

  write_checkpoint(dir.file("a.ckpt"), sample_checkpoint());
  std::vector<uint8_t> bytes = read_bytes(dir.file("a.ckpt"));
  bytes[8] = 2;  // version 2
  fix_crc(bytes);
  write_bytes(dir.file("v2.ckpt"), bytes);
  CHECK_THROWS_WITH(read_checkpoint(dir.file("v2.ckpt")),
                    Catch::Contains("unsupported format version 2 (this build reads version 1)"));
}

TEST_CASE("checkpoint: truncation at any point is reported as such", "[checkpoint]") {
  TempDir dir;
  write_checkpoint(dir.file("a.ckpt"), sample_checkpoint());
  const std::vector<uint8_t> full = read_bytes(dir.file("a.ckpt"));
  for (size_t cut : {size_t(4), size_t(8), size_t(20), size_t(27), size_t(40), full.size() / 2, full.size() - 5,
                     full.size() - 1}) {
    INFO("cut at " << cut << " of " << full.size());
    write_bytes(dir.file("t.ckpt"), std::vector<uint8_t>(full.begin(), full.begin() + cut));
    CHECK_THROWS_WITH(read_checkpoint(dir.file("t.ckpt")), Catch::Contains("truncated"));
  }
  std::vector<uint8_t> longer = full;
  longer.push_back(0);
  write_bytes(dir.file("long.ckpt"), longer);
  CHECK_THROWS_WITH(read_checkpoint(dir.file("long.ckpt")), Catch::Contains("1 unexpected bytes after the end"));
}

TEST_CASE("checkpoint: a flipped byte is a checksum mismatch", "[checkpoint]") {
  TempDir dir;
  write_checkpoint(dir.file("a.ckpt"), sample_checkpoint());
  const std::vector<uint8_t> full = read_bytes(dir.file("a.ckpt"));
  for (size_t at : {size_t(24), full.size() / 2, full.size() - 5, full.size() - 1}) {
    INFO("flip at " << at);
    std::vector<uint8_t> bytes = full;
    bytes[at] ^= 0x10;
    write_bytes(dir.file("f.ckpt"), bytes);
    CHECK_THROWS_WITH(read_checkpoint(dir.file("f.ckpt")), Catch::Contains("checksum mismatch") && Catch::Contains("corrupt"));
  }
}

TEST_CASE("checkpoint: crafted sizes with a valid checksum are rejected without allocating", "[checkpoint]") {
  TempDir dir;
  Checkpoint ck;
  ck.tensors.emplace_back("w", from_vector({1, 2, 3}, {3}));
  write_checkpoint(dir.file("a.ckpt"), ck);
  const std::vector<uint8_t> good = read_bytes(dir.file("a.ckpt"));
  // Layout: header 24 | metadata count 4 (=0) | tensor count 4 | name len 4 | "w" | dtype 1 | ndim 1 | dim 8 | ...
  const size_t meta_count = 24, tensor_count = 28, dtype_at = 37, ndim_at = 38, dim_at = 39;

  std::vector<uint8_t> b = good;
  b[meta_count + 3] = 0x7f;  // ~2 billion metadata entries
  fix_crc(b);
  write_bytes(dir.file("x.ckpt"), b);
  CHECK_THROWS_WITH(read_checkpoint(dir.file("x.ckpt")), Catch::Contains("metadata count") && Catch::Contains("larger than the file allows"));

  b = good;
  b[tensor_count + 3] = 0x7f;
  fix_crc(b);
  write_bytes(dir.file("x.ckpt"), b);
  CHECK_THROWS_WITH(read_checkpoint(dir.file("x.ckpt")), Catch::Contains("tensor count"));

  b = good;
  for (int i = 0; i < 8; ++i) b[dim_at + i] = 0xff;  // dimension 2^64 - 1
  fix_crc(b);
  write_bytes(dir.file("x.ckpt"), b);
  CHECK_THROWS_WITH(read_checkpoint(dir.file("x.ckpt")), Catch::Contains("tensor 'w' has an absurd shape"));

  b = good;
  b[dim_at] = 4;  // 4 elements declared, 3 stored
  fix_crc(b);
  write_bytes(dir.file("x.ckpt"), b);
  CHECK_THROWS_WITH(read_checkpoint(dir.file("x.ckpt")), Catch::Contains("declares 12 data bytes, expected 16"));

  b = good;
  b[dtype_at] = 9;
  fix_crc(b);
  write_bytes(dir.file("x.ckpt"), b);
  CHECK_THROWS_WITH(read_checkpoint(dir.file("x.ckpt")), Catch::Contains("unknown dtype code 9"));

  b = good;
  b[ndim_at] = 200;
  fix_crc(b);
  write_bytes(dir.file("x.ckpt"), b);
  CHECK_THROWS_WITH(read_checkpoint(dir.file("x.ckpt")), Catch::Contains("has 200 dimensions"));
}

TEST_CASE("checkpoint: a failed save leaves the previous file intact", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("model.ckpt");
  write_checkpoint(path, sample_checkpoint());
  const std::vector<uint8_t> before = read_bytes(path);

  Checkpoint bad;
  bad.tensors.emplace_back("ok", ones({2}));
  bad.tensors.emplace_back("undefined", Tensor());
  CHECK_THROWS_WITH(write_checkpoint(path, bad), Catch::Contains("tensor 'undefined' is undefined"));
  CHECK(read_bytes(path) == before);

  // A directory is refused before a temporary file is made (tests/test_checkpoint_save.cpp has the rest).
  std::system(("mkdir '" + dir.file("adir") + "'").c_str());
  CHECK_THROWS_WITH(write_checkpoint(dir.file("adir"), sample_checkpoint()), Catch::Contains("is a folder"));
  CHECK_THROWS_WITH(write_checkpoint(dir.file("no/such/dir.ckpt"), sample_checkpoint()),
                    Catch::Contains("cannot create a temporary file"));
  std::vector<std::string> left = dir.entries();
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"adir", "model.ckpt"});
  CHECK(read_checkpoint(path).metadata.at("model") == "tiny");
}

TEST_CASE("checkpoint: a tensor of another dtype than the model's is refused, not converted", "[checkpoint]") {
  TempDir dir;
  TinyNet net;
  save_checkpoint(dir.file("m.ckpt"), net, nullptr);
  Checkpoint ck = read_checkpoint(dir.file("m.ckpt"));
  for (auto& [name, t] : ck.tensors)
    if (name == "model/bias") t = from_vector({3, 4}, {2}, DType::int32);  // float32 in the model
  write_checkpoint(dir.file("int32.ckpt"), ck);
  TinyNet into;
  CHECK_THROWS_WITH(load_checkpoint(dir.file("int32.ckpt"), into),
                    Catch::Contains("int32.ckpt") && Catch::Contains("dtype mismatch: bias (expected float32, got int32)"));
  CHECK(into.bias.to_vector<float>() == std::vector<float>{0.5f, -0.5f});  // nothing was copied
}

TEST_CASE("checkpoint: another kind of model is one line, a partial misfit lists a few names", "[checkpoint]") {
  TempDir dir;
  Checkpoint other;
  other.metadata["model"] = "mnist_cnn";
  for (int i = 0; i < 40; ++i) other.tensors.emplace_back(str_cat("model/layer", i, ".weight"), zeros({2}));
  write_checkpoint(dir.file("other.ckpt"), other);
  TinyNet net;
  std::string message;
  try {
    load_checkpoint(dir.file("other.ckpt"), net);
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK_THAT(message, Catch::Contains("holds another kind of model ('mnist_cnn'), not a TinyNet: none of its 40 model "
                                      "tensors (layer0.weight, layer1.weight and 38 more) is one of this model's 3"));
  CHECK(message.find("layer20") == std::string::npos);  // not a wall of names

  // One name shared: a misfit, listed briefly.
  other.tensors.emplace_back("model/weight", zeros({2, 3}));
  write_checkpoint(dir.file("partial.ckpt"), other);
  CHECK_THROWS_WITH(load_checkpoint(dir.file("partial.ckpt"), net),
                    Catch::Contains("does not fit this TinyNet; missing: bias, running; unexpected: layer0.weight, "
                                    "layer1.weight, layer2.weight and 37 more"));
}

TEST_CASE("checkpoint: optimizer entries must have the documented dtypes and sane values", "[checkpoint]") {
  TempDir dir;
  TinyNet net;
  Adam adam(net.parameters(), AdamOptions{});
  give_gradients(net, 1);
  adam.step();
  save_checkpoint(dir.file("m.ckpt"), net, &adam);
  const Checkpoint good = read_checkpoint(dir.file("m.ckpt"));
  auto with = [&](const std::string& name, const Tensor& value) {
    Checkpoint ck = good;
    for (auto& [n, t] : ck.tensors)
      if (n == name) t = value;
    write_checkpoint(dir.file("x.ckpt"), ck);
  };
  TinyNet net2;
  Adam adam2(net2.parameters(), AdamOptions{});
  with("optimizer/step", from_vector({1.5}, {1}, DType::float64));
  CHECK_THROWS_WITH(load_checkpoint(dir.file("x.ckpt"), net2, &adam2), Catch::Contains("step is float64 [1], not int64 [1]"));
  with("optimizer/step", from_vector({-3}, {1}, DType::int64));
  CHECK_THROWS_WITH(load_checkpoint(dir.file("x.ckpt"), net2, &adam2), Catch::Contains("step is -3"));
  with("optimizer/lr", from_vector({std::nan("")}, {1}, DType::float64));
  CHECK_THROWS_WITH(load_checkpoint(dir.file("x.ckpt"), net2, &adam2), Catch::Contains("lr is nan"));
  with("optimizer/param.0.exp_avg", from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, DType::int32));
  CHECK_THROWS_WITH(load_checkpoint(dir.file("x.ckpt"), net2, &adam2),
                    Catch::Contains("the Adam state does not fit: param.0.exp_avg is int32 [2,3], not float32 [2,3]"));
  Checkpoint extra = good;
  extra.tensors.emplace_back("optimizer/param.7.exp_avg", zeros({2}));
  write_checkpoint(dir.file("x.ckpt"), extra);
  CHECK_THROWS_WITH(load_checkpoint(dir.file("x.ckpt"), net2, &adam2),
                    Catch::Contains("param.7.exp_avg is for no parameter (the optimizer has 2)"));
  CHECK(adam2.step_count() == 0);  // nothing was restored
  CHECK_NOTHROW(load_checkpoint(dir.file("m.ckpt"), net2, &adam2));
  CHECK(adam2.step_count() == 1);
}

TEST_CASE("checkpoint: parse_checkpoint reads bytes as read_checkpoint reads the file", "[checkpoint]") {
  TempDir dir;
  write_checkpoint(dir.file("a.ckpt"), sample_checkpoint());
  const std::vector<uint8_t> bytes = read_bytes(dir.file("a.ckpt"));
  CHECK(parse_checkpoint(bytes, "mem").metadata == sample_checkpoint().metadata);
  CHECK_THROWS_WITH(parse_checkpoint({}, "mem"), Catch::Contains("checkpoint 'mem': not a minidl checkpoint"));
  CHECK_THROWS_WITH(parse_checkpoint(std::vector<uint8_t>(bytes.begin(), bytes.end() - 1), "mem"),
                    Catch::Contains("truncated"));
  // A folder in place of the file is named, not read.
  std::system(("mkdir '" + dir.file("folder.ckpt") + "'").c_str());
  CHECK_THROWS_WITH(read_checkpoint(dir.file("folder.ckpt")), Catch::Contains("folder.ckpt' is a directory, not a file"));
  CHECK_THROWS_WITH(read_checkpoint(dir.file("missing.ckpt")), Catch::Contains("No such file or directory"));
}

TEST_CASE("checkpoint metadata: whole numbers only, within range, one line naming file and key", "[checkpoint]") {
  const std::map<std::string, std::string> m = {{"n", "64"},    {"neg", "-3"},  {"junk", "64abc"}, {"space", " 64"},
                                                {"plus", "+64"}, {"big", "99999999999999999999"},   {"empty", ""},
                                                {"p", "0.25"},  {"inf", "inf"}, {"hex", "0x10"},   {"e", "1e-3"}};
  CHECK(metadata_int(m, "n", 1, 100, "a.ckpt") == 64);
  CHECK(metadata_int(m, "neg", -5, 0, "a.ckpt") == -3);
  for (const char* bad : {"junk", "space", "plus", "big", "empty"}) {
    INFO(bad);
    CHECK_THROWS_WITH(metadata_int(m, bad, 1, 100, "a.ckpt"),
                      Catch::StartsWith("checkpoint 'a.ckpt': metadata ") && Catch::Contains("is not a whole number"));
  }
  CHECK_THROWS_WITH(metadata_int(m, "n", 1, 16, "a.ckpt"), Catch::Contains("metadata n = 64 is outside 1..16"));
  CHECK_THROWS_WITH(metadata_int(m, "absent", 1, 16, "a.ckpt"), Catch::Contains("has no 'absent' in its metadata"));
  CHECK(metadata_real(m, "p", 0, 1, "a.ckpt") == 0.25);
  CHECK(metadata_real(m, "e", 0, 1, "a.ckpt") == 1e-3);
  CHECK_THROWS_WITH(metadata_real(m, "inf", 0, 1, "a.ckpt"), Catch::Contains("metadata inf = 'inf' is not a number"));
  CHECK_THROWS_WITH(metadata_real(m, "hex", 0, 100, "a.ckpt"), Catch::Contains("is not a number"));
  CHECK_THROWS_WITH(metadata_real(m, "n", 0, 1, "a.ckpt"), Catch::Contains("metadata n = 64 is outside 0..1"));
}
