// tests/test_core.cpp — tensors, views, dispatch selection, autograd, and how values are shown in errors.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/autograd.h"
#include "core/block_cache.h"
#include "core/dispatch.h"
#include "core/printable.h"
#include "core/random.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

TEST_CASE("tensor factories and metadata", "[core]") {
  Tensor z = zeros({2, 3});
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.strides() == Shape{3, 1});
  CHECK(z.numel() == 6);
  CHECK(z.dtype() == DType::float32);
  CHECK(z.device() == Device::cpu());
  CHECK(z.is_contiguous());
  for (float v : z.to_vector<float>()) CHECK(v == 0.0f);
  for (float v : full({4}, 2.5).to_vector<float>()) CHECK(v == 2.5f);
  CHECK(arange(5, DType::int64).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK_THROWS_WITH(zeros({2, -1}), Catch::Contains("negative dimension"));
}

TEST_CASE("seeded random numbers are reproducible and roughly distributed", "[core]") {
  manual_seed(42);
  const std::vector<float> a = randn({1000}).to_vector<float>();
  manual_seed(42);
  const std::vector<float> b = randn({1000}).to_vector<float>();
  CHECK(a == b);
  const std::vector<float> c = randn({1000}).to_vector<float>();
  CHECK(a != c);
  double m = 0, v = 0;
  for (float x : a) m += x;
  m /= a.size();
  for (float x : a) v += (x - m) * (x - m);
  v /= a.size();
  CHECK(std::fabs(m) < 0.1);
  CHECK(std::fabs(v - 1.0) < 0.15);
  for (float u : rand({1000}).to_vector<float>()) {
    CHECK(u >= 0.0f);
    CHECK(u < 1.0f);
  }
}

TEST_CASE("views share storage and index correctly", "[core]") {
  Tensor x = from_vector({0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor t = x.transpose(0, 1);
  CHECK(t.shape() == Shape{3, 2});
  CHECK_FALSE(t.is_contiguous());
  CHECK(t.shares_storage_with(x));
  CHECK(t.contiguous().to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK(x.slice(1, 1, 3).contiguous().to_vector<float>() == std::vector<float>{1, 2, 4, 5});
  CHECK(x.slice(1, 0, 3, 2).contiguous().to_vector<float>() == std::vector<float>{0, 2, 3, 5});
  CHECK(x.select(0, 1).to_vector<float>() == std::vector<float>{3, 4, 5});
  CHECK(x.reshape({3, -1}).shape() == Shape{3, 2});
  CHECK(x.unsqueeze(0).shape() == Shape{1, 2, 3});
  CHECK(x.unsqueeze(2).squeeze(2).shape() == Shape{2, 3});
  Tensor e = from_vector({1, 2, 3}, {3}).expand({2, 3});
  CHECK(e.strides() == Shape{0, 1});
  CHECK(e.contiguous().to_vector<float>() == std::vector<float>{1, 2, 3, 1, 2, 3});
  CHECK_THROWS_WITH(x.reshape({4, 2}), Catch::Contains("cannot reshape [2,3]"));
  CHECK_THROWS_WITH(t.view({6}), Catch::Contains("not contiguous"));
  CHECK_THROWS_WITH(x.expand({2, 4}), Catch::Contains("cannot expand"));
}

TEST_CASE("copy converts dtypes and writes through strides", "[core]") {
  Tensor x = from_vector({1.5, -2.25, 3}, {3}, DType::float64);
  CHECK(x.to(DType::float32).to_vector<float>() == std::vector<float>{1.5f, -2.25f, 3.0f});
  CHECK(x.to(DType::int64).to_vector<int64_t>() == std::vector<int64_t>{1, -2, 3});
  Tensor dst = zeros({2, 3});
  copy_(dst.transpose(0, 1), from_vector({1, 2, 3, 4, 5, 6}, {3, 2}));
  CHECK(dst.to_vector<float>() == std::vector<float>{1, 3, 5, 2, 4, 6});
}

TEST_CASE("dispatch: selection by API, environment spec and fall-through", "[core][dispatch]") {
  SelectionReset reset;
  Tensor a = rand({4, 5}), b = rand({4, 5});
  add(a, b);
  CHECK(last_kernel("add", DeviceType::cpu) == "vectorized");  // highest priority

  select_kernel("add", DeviceType::cpu, "naive");
  add(a, b);
  CHECK(last_kernel("add", DeviceType::cpu) == "naive");

  select_kernels_from_spec("add=vectorized");
  add(a, b);
  CHECK(last_kernel("add", DeviceType::cpu) == "vectorized");

  // memcpy declines non-contiguous copies: the next kernel (rows_omp) serves them.
  select_kernel("copy", DeviceType::cpu, "memcpy");
  a.transpose(0, 1).contiguous();
  CHECK(last_kernel("copy", DeviceType::cpu) == "rows_omp");
  a.clone();
  CHECK(last_kernel("copy", DeviceType::cpu) == "memcpy");

  CHECK_THROWS_WITH(select_kernel("nosuchop", DeviceType::cpu, "naive"),
                    Catch::Contains("unknown op 'nosuchop'") && Catch::Contains("add"));
  CHECK_THROWS_WITH(select_kernel("add", DeviceType::cpu, "nosuchkernel"),
                    Catch::Contains("no kernel 'nosuchkernel'") && Catch::Contains("naive") &&
                        Catch::Contains("vectorized"));
  CHECK_THROWS_WITH(select_kernels_from_spec("add"), Catch::Contains("OP=NAME"));
}

TEST_CASE("dispatch: every op has a naive CPU reference", "[core][dispatch]") {
  for (const KernelInfo* k : KernelRegistry::instance().all()) {
    if (k->device != DeviceType::cpu) continue;
    INFO("kernel key " << k->key);
    const auto names = kernels_for(k->key, DeviceType::cpu);
    CHECK(std::find(names.begin(), names.end(), "naive") != names.end());
  }
}

TEST_CASE("autograd: accumulation, shared subexpressions, no_grad, detach", "[core][autograd]") {
  Tensor x = from_vector({2.0}, {1}, DType::float64).requires_grad_();
  Tensor y = from_vector({3.0}, {1}, DType::float64).requires_grad_();
  // z = (x*y) + (x*y)*x  -> dz/dx = y + 2xy = 3 + 12 = 15, dz/dy = x + x^2 = 6
  Tensor s = mul(x, y);
  Tensor z = add(s, mul(s, x));
  z.backward();
  CHECK(x.grad().item<double>() == Approx(15.0));
  CHECK(y.grad().item<double>() == Approx(6.0));

  // A second backward through a fresh graph accumulates.
  mul(x, y).backward();
  CHECK(x.grad().item<double>() == Approx(18.0));
  x.zero_grad();
  CHECK_FALSE(x.grad().defined());

  {
    NoGradGuard ng;
    Tensor w = mul(x, y);
    CHECK_FALSE(w.requires_grad());
  }
  Tensor d = mul(x.detach(), y);
  d.backward();
  CHECK_FALSE(x.grad().defined());
  CHECK(y.grad().item<double>() == Approx(6.0 + 2.0 + 2.0));  // 6, then +x from each later product

  // Backward twice through the same graph fails with a clear message.
  Tensor q = mul(x, x);
  q.backward();
  CHECK_THROWS_WITH(q.backward(), Catch::Contains("already freed"));
  CHECK_THROWS_WITH(mul(x, y).expand({3}).backward(), Catch::Contains("explicit output gradient"));
}

TEST_CASE("shown_value: one printable line, cut with an ellipsis", "[core][errors]") {
  CHECK(shown_value("pixel3") == "pixel3");
  CHECK(shown_value("12\n34\r\t") == "12?34??");
  CHECK(shown_value(std::string("a\0b", 3)) == "a?b");
  CHECK(shown_value("caf\xc3\xa9") == "caf??");  // UTF-8 bytes are not ASCII
  CHECK(shown_value(std::string(43, 'x')) == std::string(43, 'x'));  // at the limit: whole
  CHECK(shown_value(std::string(44, 'x')) == std::string(40, 'x') + "...");
  CHECK(shown_value("abcdefghijklmnopqrstuvwxyz", 24) == "abcdefghijklmnopqrstu...");
  CHECK(shown_value("") == "");
}

TEST_CASE("the CPU cache limit: a quarter of what the process may use, a container's limit included", "[core]") {
  const size_t gib = size_t(1) << 30;
  CHECK(cpu_cache_limit(24 * gib, 0) == 6 * gib);        // no container: a quarter of the machine
  CHECK(cpu_cache_limit(512 * gib, 8 * gib) == 2 * gib);  // a container's 8 GiB on a large host
  CHECK(cpu_cache_limit(512 * gib, 1024 * gib) == 128 * gib);  // a cgroup limit above the machine's memory
  CHECK(cpu_cache_limit(2 * gib, 0) == gib);               // small machines keep 1 GiB...
  CHECK(cpu_cache_limit(gib, 0) == gib / 2);               // ...but never more than half of what there is
  CHECK(cpu_cache_limit(0, 0) == 0);
  // Reading the limit: cgroup v2 first ("max" is none), then v1 (a huge number is none); files that are
  // missing or unreadable as a number count as no limit.
  const std::string dir = "minidl_cgroup_test";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  const std::string v2_max = write("v2_max", "max\n"), v2_8g = write("v2_8g", "8589934592\n");
  const std::string v1_huge = write("v1_huge", "9223372036854771712\n"), v1_2g = write("v1_2g", "2147483648\n");
  const std::string junk = write("junk", "lots\n"), missing = dir + "/missing";
  CHECK(cgroup_memory_limit(v2_8g, v1_2g) == 8 * gib);
  CHECK(cgroup_memory_limit(v2_max, v1_2g) == 2 * gib);
  CHECK(cgroup_memory_limit(v2_max, v1_huge) == 0);
  CHECK(cgroup_memory_limit(missing, missing) == 0);
  CHECK(cgroup_memory_limit(junk, v1_2g) == 2 * gib);
  std::filesystem::remove_all(dir);
}

TEST_CASE("BlockCache: reuse by exact size, the limit kept by evicting the least recently freed", "[core]") {
  // Fake blocks: addresses of an array; `released` records what the cache gave back.
  char memory[8];
  std::vector<void*> released;
  {
    BlockCache cache(100, [&](void* p) { released.push_back(p); });
    CHECK(cache.take(10) == nullptr);
    cache.put(&memory[0], 40);
    cache.put(&memory[1], 40);
    cache.put(&memory[2], 10);
    CHECK(cache.cached_bytes() == 90);
    CHECK(cache.cached_blocks() == 3);
    // Exact sizes only; of two blocks of a size, the most recently freed comes back first.
    CHECK(cache.take(20) == nullptr);
    CHECK(cache.take(40) == &memory[1]);
    CHECK(cache.cached_bytes() == 50);
    cache.put(&memory[1], 40);
    // 90 + 30 > 100: the least recently freed block (memory[0]) goes, and 50 + 30 fits.
    cache.put(&memory[3], 30);
    CHECK(released == std::vector<void*>{&memory[0]});
    CHECK(cache.cached_bytes() == 80);
    // 80 + 60 > 100: memory[2] (10 bytes) goes, 130 still passes, so memory[1] goes too.
    cache.put(&memory[4], 60);
    CHECK(released == std::vector<void*>{&memory[0], &memory[2], &memory[1]});
    CHECK(cache.cached_bytes() == 90);
    CHECK(cache.take(40) == nullptr);
    CHECK(cache.take(60) == &memory[4]);
    // A block larger than the whole limit is released at once, and evicts nothing.
    cache.put(&memory[5], 101);
    CHECK(released.back() == &memory[5]);
    CHECK(cache.cached_bytes() == 30);
    cache.release_all();
    CHECK(released.back() == &memory[3]);
    CHECK(cache.cached_bytes() == 0);
    CHECK(cache.take(30) == nullptr);
    CHECK(released.size() == 5);
    cache.put(&memory[6], 50);
  }
  // Destruction releases what is left.
  CHECK(released.size() == 6);
  CHECK(released.back() == &memory[6]);
}
