// tests/test_pack.cpp — pack_ (ops/pack.cpp): tensors copied into ranges of one flat buffer. Every kernel
// of every device against what the ranges must hold (both element sizes, gaps left untouched, more
// tensors than one CUDA launch takes, empty and large tensors), and the front end's errors.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/dispatch.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

// `count` tensors of varied sizes (some empty, one above 256 x 1024 elements so that the CUDA kernel's
// threads loop), laid out with a gap of 3 elements before each.
struct Layout {
  std::vector<Tensor> srcs;  // on the CPU
  std::vector<int64_t> offsets;
  int64_t total = 0;
};
Layout make_layout(int count, DType dtype) {
  Layout l;
  for (int k = 0; k < count; ++k) {
    const int64_t n = k == 1 ? 300007 : (k % 5 == 3 ? 0 : 1 + (k * 37) % 101);
    l.total += 3;
    l.offsets.push_back(l.total);
    l.srcs.push_back(uniform({n}, -100, 100, DType::float64).to(dtype));
    l.total += n;
  }
  return l;
}

}  // namespace

TEST_CASE("pack: every kernel writes each tensor into its range and nothing else", "[pack]") {
  for (DType dtype : {DType::float32, DType::float64, DType::int32, DType::int64}) {
    for (int count : {1, 5, 32, 70}) {  // 70: three launches of the CUDA kernel
      const Layout l = make_layout(count, dtype);
      for_each_kernel("pack", [&](Device d, const std::string& name) {
        INFO(dtype_name(dtype) << ", " << count << " tensors, " << d.str() << " " << name);
        std::vector<Tensor> srcs;
        for (const Tensor& s : l.srcs) srcs.push_back(s.to(d));
        const Tensor flat = full({l.total}, -7, TensorOptions(dtype, d));  // the gaps must keep -7
        pack_(flat, srcs, l.offsets);
        CHECK(last_kernel("pack", d.type) == name);
        const Tensor got = flat.to(Device::cpu()).to(DType::float64);
        const std::vector<double> values = got.to_vector<double>();
        std::vector<double> expect(static_cast<size_t>(l.total), -7.0);
        for (size_t k = 0; k < l.srcs.size(); ++k) {
          const std::vector<double> s = l.srcs[k].to(DType::float64).to_vector<double>();
          for (size_t i = 0; i < s.size(); ++i) expect[static_cast<size_t>(l.offsets[k]) + i] = s[i];
        }
        CHECK(values == expect);
      });
    }
  }
}

TEST_CASE("pack: a non-contiguous tensor is packed in row-major order", "[pack]") {
  for (Device d : test_devices()) {
    const Tensor x = arange(12, TensorOptions(DType::float32, Device::cpu())).view({3, 4});
    const Tensor flat = zeros({14}, TensorOptions(DType::float32, d));
    pack_(flat, {x.to(d).transpose(0, 1)}, {2});
    const std::vector<float> got = flat.to(Device::cpu()).to_vector<float>();
    CHECK(got == std::vector<float>{0, 0, 0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  }
}

TEST_CASE("pack: errors name the tensor and the problem, and change nothing", "[pack][errors]") {
  const Tensor flat = zeros({10}, DType::float32);
  const Tensor a = ones({4}, DType::float32), b = ones({3}, DType::float32);
  CHECK_THROWS_WITH(pack_(flat, {a, b}, {0, 2}), Catch::Contains("[0, 4) and [2, 5) overlap"));
  CHECK_THROWS_WITH(pack_(flat, {a, b}, {0, 8}), Catch::Contains("tensor 1 of 3 elements at offset 8"));
  CHECK_THROWS_WITH(pack_(flat, {a}, {-1}), Catch::Contains("at offset -1"));
  CHECK_THROWS_WITH(pack_(flat, {a, b}, {0}), Catch::Contains("2 tensors but 1 offsets"));
  CHECK_THROWS_WITH(pack_(flat, {ones({2}, DType::float64)}, {0}), Catch::Contains("tensor 0 is float64"));
  CHECK_THROWS_WITH(pack_(zeros({2, 5}, DType::float32), {a}, {0}), Catch::Contains("1-D contiguous"));
  CHECK_THROWS_WITH(pack_(flat, {Tensor()}, {0}), Catch::Contains("tensor 0 is undefined"));
  CHECK(flat.to_vector<float>() == std::vector<float>(10, 0.0f));
  pack_(flat, {}, {});  // nothing to do
  CHECK(flat.to_vector<float>() == std::vector<float>(10, 0.0f));
}
