// tests/test_cuda_memory.cpp — running out of GPU memory is an error a program can catch and survive
// (cuda/allocator.h): the caching allocator releases its cache and retries, then throws OutOfMemoryError
// whose info() has the numbers (requested, in use, cached, the device's free memory, the limit); the next
// small allocation and kernel work. Tagged [cuda]: skipped without a GPU. The file is empty in a build
// without CUDA.
#ifdef MINIDL_WITH_CUDA

#include <catch2/catch.hpp>

#include "cuda/allocator.h"
#include "tests/test_util.h"

using namespace minidl;
using minidl::testing::have_gpu;

namespace {

const Device kGpu = Device::cuda(0);

}  // namespace

TEST_CASE("cuda memory: more than the GPU has fails with the numbers, after releasing the cache, the program "
          "carries on",
          "[cuda]") {
  if (!have_gpu()) return;
  cuda_empty_cache();
  { Tensor scratch = empty({1 << 20}, kGpu); }  // 4 MiB, now cached
  const CudaMemoryStats before = cuda_memory_stats(0);
  REQUIRE(before.cached >= size_t(4) << 20);
  const int64_t huge = int64_t(1) << 42;  // float32 elements: 16 TiB, more than any GPU has

  bool thrown = false;
  try {
    empty({huge}, kGpu);
  } catch (const OutOfMemoryError& e) {
    thrown = true;
    const OutOfMemoryInfo& info = e.info();
    CHECK(info.device == "cuda:0");
    CHECK(info.requested == static_cast<size_t>(huge) * 4);
    CHECK(info.cached == before.cached);
    CHECK(info.in_use == before.in_use);
    CHECK(info.limit == 0);
    CHECK(info.device_free > 0);
    CHECK_THAT(e.what(), Catch::Contains("cuda:0: out of memory: cannot allocate 16.00 TiB") &&
                             Catch::Contains("cudaMalloc failed") && Catch::Contains("(released to retry)") &&
                             Catch::Contains("no limit set") && Catch::Contains(" free of "));
  }
  CHECK(thrown);
  const CudaMemoryStats after = cuda_memory_stats(0);
  CHECK(after.cached == 0);  // released to make room before giving up
  CHECK(after.in_use == before.in_use);

  // Nothing is left broken: a small allocation, a kernel and a copy back work.
  const Tensor x = full({1000}, 2.0, kGpu);
  CHECK(sum(x).item<double>() == 2000);
}

TEST_CASE("cuda memory: over the memory limit, the typed error has the limit, raising it lets the program "
          "continue",
          "[cuda]") {
  if (!have_gpu()) return;
  cuda_empty_cache();
  const size_t MiB = size_t(1) << 20;
  const size_t base = cuda_memory_stats(0).in_use;
  set_cuda_memory_limit(0, base + 16 * MiB);
  bool thrown = false;
  try {
    empty({8 << 20}, kGpu);  // 32 MiB
  } catch (const OutOfMemoryError& e) {
    thrown = true;
    CHECK(e.info().limit == base + 16 * MiB);
    CHECK(e.info().requested == 32 * MiB);
    CHECK_THAT(e.what(), Catch::Contains("would pass the memory limit"));
  }
  CHECK(thrown);
  // The program handles it: a smaller batch fits.
  const Tensor smaller = full({2 << 20}, 1.0, kGpu);  // 8 MiB
  CHECK(sum(smaller).item<double>() == 2 << 20);
  set_cuda_memory_limit(0, 0);
  const Tensor larger = full({8 << 20}, 1.0, kGpu);
  CHECK(sum(larger).item<double>() == 8 << 20);
}

#endif  // MINIDL_WITH_CUDA
