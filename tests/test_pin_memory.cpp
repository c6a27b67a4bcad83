// tests/test_pin_memory.cpp — page-locked host memory (Tensor::pin_memory, cuda/pinned_host.cu) and the data
// loader's pin_memory option (nn/data.h): refused with the reason where there is no GPU; on a GPU the
// pinned copies carry the same values, a released block is not handed out again while a copy queued before
// its release may still read it, and is handed out again once that copy has run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <vector>

#include "core/backend.h"
#include "nn/data.h"
#include "ops/ops.h"
#include "tests/test_util.h"

#ifdef MINIDL_WITH_CUDA
#include "cuda/allocator.h"
#endif

using namespace minidl;
using minidl::testing::have_gpu;

namespace {

std::shared_ptr<TensorDataset> small_dataset() {
  std::vector<float> x(40 * 3), y(40);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.5f;
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i % 7);
  const TensorOptions cpu(DType::float32, Device::cpu());
  return std::make_shared<TensorDataset>(from_vector(x, {40, 3}, cpu), from_vector(y, {40}, cpu));
}

}  // namespace

TEST_CASE("pin_memory: refused with the reason where no GPU is usable, and for a tensor not on the CPU", "[data]") {
  const Tensor t = from_vector(std::vector<float>{1, 2, 3}, {3}, TensorOptions(DType::float32, Device::cpu()));
  CHECK_FALSE(t.is_pinned());
  if (why_no_gpu().empty()) {  // a GPU: only the second refusal applies
    const Tensor on_gpu = t.to(Device::cuda(0));
    CHECK_THROWS_WITH(on_gpu.pin_memory(), Catch::Contains("only CPU tensors are pinned"));
    return;
  }
  CHECK_THROWS_WITH(t.pin_memory(), Catch::Contains("page-locked memory serves copies to a GPU, and there is none"));
  DataLoaderOptions o;
  o.pin_memory = true;
  CHECK_THROWS_WITH(DataLoader(small_dataset(), o), Catch::Contains("pin_memory is for batches copied to a GPU"));
}

#ifdef MINIDL_WITH_CUDA

TEST_CASE("pin_memory on a GPU: same values, contiguous, and copies to the GPU carry them", "[cuda][data]") {
  if (!have_gpu()) return;
  const Tensor base = arange(24, TensorOptions(DType::float32, Device::cpu())).reshape({4, 6});
  const Tensor strided = base.transpose(0, 1);  // not contiguous: pinned as a contiguous copy
  const Tensor pinned = strided.pin_memory();
  CHECK(pinned.is_pinned());
  CHECK(pinned.is_contiguous());
  CHECK(pinned.pin_memory().raw_data() == pinned.raw_data());  // already pinned: the same tensor
  CHECK(pinned.to_vector<float>() == strided.contiguous().to_vector<float>());
  CHECK(pinned.to(Device::cuda(0)).to(Device::cpu()).to_vector<float>() == strided.contiguous().to_vector<float>());
  const Tensor ints =
      from_vector(std::vector<int64_t>{5, -3, 9}, {3}, TensorOptions(DType::int64, Device::cpu())).pin_memory();
  CHECK(ints.dtype() == DType::int64);
  CHECK(ints.to(Device::cuda(0)).to_vector<int64_t>() == std::vector<int64_t>{5, -3, 9});
}

TEST_CASE("pin_memory on a GPU: a block released while its copy may be queued is not reused until the copy ran",
          "[cuda][data]") {
  if (!have_gpu()) return;
  const Device gpu = Device::cuda(0);
  const int64_t n = 1 << 20;  // 4 MiB of float32
  const Tensor a = randn({2048, 2048}, TensorOptions(DType::float32, gpu));
  std::vector<Tensor> on_gpu;
  std::vector<float> expected;
  const PinnedHostStats before = cuda_pinned_host_stats();
  for (int round = 0; round < 6; ++round) {
    // Work queued ahead of the copy (some milliseconds of matrix products), so the copy is still waiting
    // when its pinned source is released and the next round asks for a block of the same size.
    Tensor busy = a;
    for (int i = 0; i < 4; ++i) busy = matmul(busy, a) * 1e-3;
    Tensor dst = empty({n}, TensorOptions(DType::float32, gpu));
    {
      const Tensor src = full({n}, static_cast<double>(round + 1), TensorOptions(DType::float32, Device::cpu()))
                             .pin_memory();
      copy_(dst, src);
    }  // src released here, its copy perhaps not run yet
    on_gpu.push_back(dst);
    expected.push_back(static_cast<float>(round + 1));
  }
  for (size_t r = 0; r < on_gpu.size(); ++r) {
    const std::vector<float> v = on_gpu[r].to_vector<float>();
    CHECK(std::count(v.begin(), v.end(), expected[r]) == n);
  }
  // Once the device has run everything, a block of the same size is handed out again.
  backend_for(DeviceType::cuda).synchronize(0);
  const PinnedHostStats middle = cuda_pinned_host_stats();
  CHECK(middle.host_alloc_calls > before.host_alloc_calls);
  { const Tensor again = full({n}, 7.0, TensorOptions(DType::float32, Device::cpu())).pin_memory(); }
  const PinnedHostStats after = cuda_pinned_host_stats();
  CHECK(after.reuses == middle.reuses + 1);
  CHECK(after.host_alloc_calls == middle.host_alloc_calls);
  CHECK(after.in_use == before.in_use);
}

TEST_CASE("data: pin_memory on a GPU delivers pinned batches with the same samples as without it", "[cuda][data]") {
  if (!have_gpu()) return;
  auto data = small_dataset();
  DataLoaderOptions plain;
  plain.batch_size = 8;
  plain.shuffle = true;
  plain.seed = 5;
  DataLoaderOptions pinned = plain;
  pinned.pin_memory = true;
  DataLoader a(data, plain), b(data, pinned);
  std::vector<Batch> from_a, from_b;
  for (Batch& batch : a.epoch(1)) from_a.push_back(batch);
  for (Batch& batch : b.epoch(1)) from_b.push_back(batch);
  REQUIRE(from_a.size() == from_b.size());
  for (size_t k = 0; k < from_a.size(); ++k) {
    CHECK_FALSE(from_a[k].inputs.is_pinned());
    CHECK(from_b[k].inputs.is_pinned());
    CHECK(from_b[k].targets.is_pinned());
    CHECK(from_b[k].inputs.to_vector<float>() == from_a[k].inputs.to_vector<float>());
    CHECK(from_b[k].targets.to_vector<float>() == from_a[k].targets.to_vector<float>());
  }
}

#endif  // MINIDL_WITH_CUDA
