// tests/test_bench_ragged.cpp — the ragged check of `minidl bench`: every kernel of a key is also run once
// on sizes that divide no tile and compared with the naive CPU kernel. A matmul kernel that is right only
// on whole 16x16 tiles passes the error column at the timed shapes (multiples of 16) and is caught here;
// every key has a ragged shape that reads; minidl's own kernels all pass (test_kernel_lab.cpp's run of
// every key checks that too).
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/bench_test_util.h"
#include "tests/test_util.h"
#include "tools/bench/bench.h"
#include "tools/bench/case.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

// A matmul right only when M, N and K are multiples of 16, as a tiled kernel without edge handling: it
// computes whole 16x16 tiles of out over whole 16-deep slices of K, and ignores the remainder (the rows and
// columns past the last whole tile stay 0, the terms past the last whole slice are not added).
bool tiles16_matmul(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  if (out.dtype() != DType::float32 || trans_a || trans_b) return false;
  constexpr int64_t kTile = 16;
  const int64_t batch = out.shape()[0], m_size = out.shape()[1], n_size = out.shape()[2], k_size = a.shape()[2];
  const int64_t m_tiles = m_size / kTile * kTile, n_tiles = n_size / kTile * kTile, k_tiles = k_size / kTile * kTile;
  for (int64_t i = 0; i < batch; ++i) {
    const float* ai = a.data<float>() + i * m_size * k_size;
    const float* bi = b.data<float>() + i * k_size * n_size;
    float* oi = out.data<float>() + i * m_size * n_size;
    std::fill(oi, oi + m_size * n_size, 0.0f);
    for (int64_t m = 0; m < m_tiles; ++m)
      for (int64_t n = 0; n < n_tiles; ++n) {
        float sum = 0;
        for (int64_t k = 0; k < k_tiles; ++k) sum += ai[m * k_size + k] * bi[k * n_size + n];
        oi[m * n_size + n] = sum;
      }
  }
  return true;
}

bench::BenchOptions quick() {
  bench::BenchOptions o;
  o.repeat = 2;
  o.budget_seconds = 1e-3;
  return o;
}

}  // namespace

TEST_CASE("bench: the ragged check catches a matmul kernel that is right only on whole tiles",
          "[bench][ragged]") {
  ScopedKernel<MatmulKernel> tiles16("matmul", DeviceType::cpu, "test_tiles16", tiles16_matmul);
  bench::BenchOptions o = quick();
  o.ops = {"matmul"};
  o.kernels = {"test_tiles16", "ikj"};
  o.shapes = {"matmul:32x48x16", "matmul:64x64x64"};  // whole tiles only: the kernel is right on both
  o.json_path = temp_file("minidl_test_ragged.jsonl");
  int status = -1;
  const std::string table = printed_by([&](std::FILE* f) { status = bench::run_bench(o, f); });
  INFO(table);
  CHECK(status == bench::kExitWrong);

  // The timed shapes: no row WRONG.
  const std::vector<std::string> lines = lines_in(table);
  const auto ragged_header = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.rfind("matmul 37x53x29 -- ragged", 0) == 0;
  });
  REQUIRE(ragged_header != lines.end());
  for (auto it = lines.begin(); it != ragged_header; ++it) CHECK_THAT(*it, !Catch::Contains("WRONG"));
  // The ragged shape: a line per kernel, test_tiles16 WRONG, ikj ok, naive left out (it is the reference).
  std::string tiles_line, ikj_line;
  for (auto it = ragged_header + 2; it != lines.end() && !it->empty(); ++it) {
    if (it->find("  test_tiles16 ") == 0) tiles_line = *it;
    if (it->find("  ikj ") == 0) ikj_line = *it;
    CHECK(it->find("  naive ") != 0);
  }
  CHECK_THAT(tiles_line, Catch::EndsWith("WRONG"));
  CHECK_THAT(ikj_line, Catch::EndsWith("ok"));
  CHECK_THAT(table, Catch::Contains("RAGGED CHECK FAILED: test_tiles16 is wrong on matmul 37x53x29"));
  CHECK_THAT(table, Catch::Contains("1 kernel(s) WRONG on their key's ragged shape: matmul test_tiles16"));

  // JSON: a "ragged" record per kernel, with its error.
  int ragged_records = 0;
  for (const std::string& line : lines_in(text_of(o.json_path))) {
    const nlohmann::json r = nlohmann::json::parse(line);
    if (r["record"] == "kernel") CHECK(r["wrong"] == false);
    if (r["record"] != "ragged") continue;
    ++ragged_records;
    CHECK(r["shape"] == "37x53x29");
    CHECK(r["wrong"] == (r["kernel"] == "test_tiles16"));
    if (r["kernel"] == "test_tiles16") CHECK(r["max_rel_err"].get<double>() > 0.1);
  }
  CHECK(ragged_records == 2);
  std::filesystem::remove(o.json_path);

  // Without the faulty kernel the same run passes.
  o.kernels = {"ikj"};
  o.json_path = "";
  std::FILE* sink = std::tmpfile();
  CHECK(bench::run_bench(o, sink) == 0);
  std::fclose(sink);
}

TEST_CASE("bench: every key has a ragged shape that reads, and it is small", "[bench][ragged]") {
  for (const bench::CaseFamily& family : bench::case_families())
    for (const bench::CaseKey& k : family.keys) {
      const std::string spec = bench::ragged_spec(k.key);
      INFO(k.key << ":" << spec);
      REQUIRE(!spec.empty());
      CHECK_NOTHROW(family.check(k.key, spec));
      const bench::BenchCase c = family.make(k.key, spec, Device::cpu());
      CHECK(c.flops < 1e7);  // the naive reference is instant
    }
  CHECK(bench::ragged_spec("matmul") == "37x53x29");
  CHECK(bench::ragged_spec("conv2d.backward_weight") == bench::ragged_spec("conv2d"));
  CHECK(bench::ragged_spec("no_such_key") == "");
}
