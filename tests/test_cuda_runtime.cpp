// tests/test_cuda_runtime.cpp — the CUDA backend: allocator, copies between devices, random numbers, and
// every kernel of the CUDA runtime (cuda/copy.cu, elementwise.cu, reduce.cu, softmax.cu, dropout.cu,
// optim.cu) against the naive CPU reference on the same data.
//
// Cases tagged [cuda] need a GPU: each starts by skipping (with a visible warning) when none is usable, so
// the whole suite passes on a machine without one. The kernel comparisons use for_each_kernel and skip its
// CPU iterations: the CPU kernels (other than the naive reference used here) have their own tests. The [cuda-runtime] cases test the parts of the CUDA
// build that run without a GPU (limit parsing, error messages, the "no device" path).
// The whole file is empty in a build without CUDA.
#ifdef MINIDL_WITH_CUDA

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>

#include "core/backend.h"
#include "core/philox.h"
#include "core/random.h"
#include "cuda/allocator.h"
#include "cuda/cuda_common.h"
#include "nn/data.h"
#include "ops/optim_ops.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

#define SKIP_WITHOUT_GPU() \
  if (!have_gpu()) return

const Device kGpu = Device::cuda(0);

std::string op_of(const std::string& key) { return key.substr(0, key.find('.')); }

// Runs `key` on the CPU with the naive kernel (the reference), restoring the selection afterwards.
template <class Sig, class... Args>
void run_naive_cpu(const std::string& key, Args&&... args) {
  SelectionReset reset;
  select_kernel(op_of(key), DeviceType::cpu, "naive");
  dispatch<Sig>(key, Device::cpu(), std::forward<Args>(args)...);
  REQUIRE(last_kernel(key, DeviceType::cpu) == "naive");
}

// A float32 tensor on `device` holding the same values as the CPU tensor `t`, with the same layout
// (the storage is moved whole, then viewed with t's shape, strides and offset).
Tensor same_layout_on(const Tensor& t, Device device) {
  if (device.is_cpu()) return t;
  const Tensor base = make_view(t, {static_cast<int64_t>(t.impl()->storage->nbytes / dtype_size(t.dtype()))}, {1}, 0);
  const Tensor moved = base.to(device);
  return make_view(moved, t.shape(), t.strides(), t.offset());
}

// Output poisoned with NaN so an element a kernel forgot to write cannot pass.
Tensor poisoned(const Shape& shape, DType dtype, Device device) { return full(shape, NAN, TensorOptions(dtype, device)); }

// Integer-valued int64 tensor with entries uniform in [0, n).
Tensor random_indices(const Shape& shape, int64_t n) {
  std::vector<double> v(shape_numel(shape));
  const std::vector<float> u = rand({static_cast<int64_t>(v.size())}).to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::min<double>(n - 1, std::floor(u[i] * n));
  return from_vector(v, shape, DType::int64);
}

// ---- layouts of elementwise inputs: each is a view of a freshly drawn base tensor.
struct Layout {
  std::string name;
  Shape base;
  std::function<Tensor(const Tensor&)> view;
  bool contiguous;  // the view is contiguous (cuDNN accepts it)
  bool aligned;     // ... and starts on a 16-byte boundary (v2_vectorized accepts it)
};

Tensor identity(const Tensor& t) { return t; }

std::vector<Layout> unary_layouts() {
  return {
      {"[1]", {1}, identity, true, true},
      {"[7]", {7}, identity, true, true},
      {"[1000]", {1000}, identity, true, true},
      {"[4097]", {4097}, identity, true, true},
      {"[33,129] transposed", {129, 33}, [](const Tensor& t) { return t.transpose(0, 1); }, false, false},
      {"[4097] at offset 1", {4098}, [](const Tensor& t) { return t.slice(0, 1, 4098); }, true, false},
      {"[2,2049] step 2", {2, 4097}, [](const Tensor& t) { return t.slice(1, 0, 4097, 2); }, false, false},
      {"[1,129] broadcast to [33,129]", {1, 129}, [](const Tensor& t) { return t.expand({33, 129}); }, false, false},
  };
}

struct BinaryLayout {
  std::string name;
  Layout a, b;
};

std::vector<BinaryLayout> binary_layouts() {
  const auto expand_to = [](Shape s) { return [s](const Tensor& t) { return t.expand(s); }; };
  return {
      {"[1] + [1]", {"", {1}, identity, true, true}, {"", {1}, identity, true, true}},
      {"[7] + [7]", {"", {7}, identity, true, true}, {"", {7}, identity, true, true}},
      {"[1000] + [1000]", {"", {1000}, identity, true, true}, {"", {1000}, identity, true, true}},
      {"[4097] + [4097]", {"", {4097}, identity, true, true}, {"", {4097}, identity, true, true}},
      {"[33,129] + [129] broadcast",
       {"", {33, 129}, identity, true, true},
       {"", {129}, expand_to({33, 129}), false, false}},
      {"[33,129] transposed + [33,1] broadcast",
       {"", {129, 33}, [](const Tensor& t) { return t.transpose(0, 1); }, false, false},
       {"", {33, 1}, expand_to({33, 129}), false, false}},
      {"[4097] at offset 1 + [4097]",
       {"", {4098}, [](const Tensor& t) { return t.slice(0, 1, 4098); }, true, false},
       {"", {4097}, identity, true, true}},
  };
}

// Which CUDA kernel serves a call when `name` is selected: kernels that decline a layout fall through to
// v1_strided, which takes any.
std::string expected_kernel(const std::string& name, const std::vector<const Layout*>& inputs) {
  for (const Layout* l : inputs) {
    if (name == "v2_vectorized" && !l->aligned) return "v1_strided";
    if (name == "cudnn" && !l->contiguous) return "v1_strided";
  }
  return name;
}

// Input values where every op of `key` is defined and smooth.
std::pair<double, double> domain(const std::string& key) {
  if (key == "log" || key == "sqrt" || key == "pow_scalar") return {0.2, 3.0};
  return {-3.0, 3.0};
}

// Kernel tolerances: our kernels use the same formulas as the CPU, so a few float ulps; cuDNN may
// use other approximations.
double rtol_for(const std::string& name) { return name == "cudnn" ? 1e-4 : 1e-5; }
double atol_for(const std::string& name) { return name == "cudnn" ? 1e-5 : 1e-6; }

// Sets the allocator limit for the scope, removes it after.
struct MemoryLimitScope {
  explicit MemoryLimitScope(size_t bytes) { set_cuda_memory_limit(0, bytes); }
  ~MemoryLimitScope() { set_cuda_memory_limit(0, 0); }
};

}  // namespace

// ================================================================ without a GPU

TEST_CASE("cuda runtime: memory limit parsing", "[cuda-runtime]") {
  const size_t G = size_t(1) << 30;
  CHECK(parse_cuda_memory_limit("4000000000", 0) == 4000000000ull);
  CHECK(parse_cuda_memory_limit("512M", 0) == 512ull << 20);
  CHECK(parse_cuda_memory_limit("4G", 0) == 4 * G);
  CHECK(parse_cuda_memory_limit("4GiB", 0) == 4 * G);
  CHECK(parse_cuda_memory_limit("4gb", 0) == 4 * G);
  CHECK(parse_cuda_memory_limit("1.5G", 0) == 3 * G / 2);
  CHECK(parse_cuda_memory_limit("64k", 0) == 64 * 1024);
  CHECK(parse_cuda_memory_limit("50%", 8 * G) == 4 * G);
  CHECK(parse_cuda_memory_limit(" 25 % ", 8 * G) == 2 * G);
  CHECK_THROWS_WITH(parse_cuda_memory_limit("lots", 0), Catch::Contains("MINIDL_CUDA_MEMORY_LIMIT") &&
                                                            Catch::Contains("'lots'"));
  CHECK_THROWS_WITH(parse_cuda_memory_limit("4X", 0), Catch::Contains("cannot parse '4X'"));
  CHECK_THROWS_WITH(parse_cuda_memory_limit("150%", 8 * G), Catch::Contains("above 100"));
  CHECK_THROWS_WITH(parse_cuda_memory_limit("0", 0), Catch::Contains("out of range"));
  CHECK(cuda::format_bytes(17) == "17 B");
  CHECK(cuda::format_bytes(3 * G / 2) == "1.50 GiB");
}

TEST_CASE("cuda runtime: checked calls name the call, file and error", "[cuda-runtime]") {
  const auto failing = [] { MINIDL_CUDA_CHECK(cudaErrorMemoryAllocation); };
  CHECK_THROWS_WITH(failing(), Catch::StartsWith("CUDA error at ") && Catch::Contains("test_cuda_runtime.cpp:") &&
                                   Catch::Contains("cudaErrorMemoryAllocation") &&
                                   Catch::Contains(cudaGetErrorString(cudaErrorMemoryAllocation)));
  const auto failing_blas = [] { MINIDL_CUBLAS_CHECK(CUBLAS_STATUS_INVALID_VALUE); };
  CHECK_THROWS_WITH(failing_blas(), Catch::StartsWith("cuBLAS error at ") &&
                                        Catch::Contains("CUBLAS_STATUS_INVALID_VALUE"));
}

TEST_CASE("cuda runtime: without a usable GPU, cuda tensors fail with the reason", "[cuda-runtime]") {
  DeviceBackend& b = backend_for(DeviceType::cuda);
  if (b.device_count() > 0) {
    CHECK(b.unavailable_reason().empty());
    return;
  }
  const std::string why = b.unavailable_reason();
  CHECK_FALSE(why.empty());
  CHECK_THROWS_WITH(zeros({2}, Device::cuda(0)), Catch::Contains("cuda:0: no usable device") && Catch::Contains(why));
}

// ================================================================ allocator and copies

TEST_CASE("cuda allocator: freed blocks are reused and the statistics follow", "[cuda]") {
  SKIP_WITHOUT_GPU();
  cuda_empty_cache();
  const CudaMemoryStats s0 = cuda_memory_stats(0);
  CHECK(s0.cached == 0);

  void* first = nullptr;
  {
    Tensor a = empty({1000}, kGpu);  // 4000 bytes -> one 4096-byte block
    first = a.raw_data();
    const CudaMemoryStats s1 = cuda_memory_stats(0);
    CHECK(s1.in_use == s0.in_use + 4096);
    CHECK(s1.malloc_calls == s0.malloc_calls + 1);
    CHECK(s1.peak_in_use >= s1.in_use);
  }
  const CudaMemoryStats s2 = cuda_memory_stats(0);
  CHECK(s2.in_use == s0.in_use);
  CHECK(s2.cached == 4096);

  Tensor b = empty({1000}, kGpu);
  const CudaMemoryStats s3 = cuda_memory_stats(0);
  CHECK(b.raw_data() == first);  // the cached block, not a new one
  CHECK(s3.malloc_calls == s2.malloc_calls);
  CHECK(s3.cache_hits == s2.cache_hits + 1);
  CHECK(s3.cached == 0);
  CHECK(s3.in_use == s0.in_use + 4096);

  // Large blocks round up to 2 MiB; the peak remembers the high-water mark after the block is gone.
  reset_cuda_peak_memory(0);
  {
    Tensor big = empty({3 << 18}, kGpu);  // 3 MiB -> 4 MiB
    CHECK(cuda_memory_stats(0).in_use == s3.in_use + (size_t(4) << 20));
  }
  const CudaMemoryStats s4 = cuda_memory_stats(0);
  CHECK(s4.in_use == s3.in_use);
  CHECK(s4.peak_in_use == s3.in_use + (size_t(4) << 20));
  CHECK(s4.cached == size_t(4) << 20);

  // A zero-element tensor still gets a valid, distinct block.
  Tensor none = empty({0}, kGpu);
  CHECK(none.raw_data() != nullptr);
  CHECK(none.raw_data() != b.raw_data());

  cuda_empty_cache();
  CHECK(cuda_memory_stats(0).cached == 0);
}

TEST_CASE("cuda allocator: the memory limit gives an OutOfMemoryError with the numbers", "[cuda]") {
  SKIP_WITHOUT_GPU();
  cuda_empty_cache();
  const size_t MiB = size_t(1) << 20;
  const size_t base = cuda_memory_stats(0).in_use;
  MemoryLimitScope limit(base + 64 * MiB);

  Tensor a = empty({8 << 20}, kGpu);  // 32 MiB: fits
  CHECK_THROWS_AS(empty({16 << 20}, kGpu), OutOfMemoryError);  // 32 + 64 MiB > 64 MiB
  CHECK_THROWS_WITH(empty({16 << 20}, kGpu),
                    Catch::Contains("cuda:0: out of memory") && Catch::Contains("67108864 bytes requested") &&
                        Catch::Contains("would pass the memory limit") && Catch::Contains("In use by minidl: ") &&
                        Catch::Contains("limit " + cuda::format_bytes(base + 64 * MiB) + " (set_cuda_memory_limit)"));
  // The failed attempts left nothing behind.
  CHECK(cuda_memory_stats(0).in_use == base + 32 * MiB);

  // Cached blocks count against the limit, and are released to make room before giving up.
  a = Tensor();
  CHECK(cuda_memory_stats(0).cached == 32 * MiB);
  Tensor b = empty({12 << 20}, kGpu);  // 48 MiB: fits only once the cached 32 MiB are released
  CHECK(cuda_memory_stats(0).cached == 0);
  CHECK(cuda_memory_stats(0).in_use == base + 48 * MiB);
}

TEST_CASE("cuda: DeviceGuard makes factories default to the GPU", "[cuda]") {
  SKIP_WITHOUT_GPU();
  CHECK(zeros({3}).device() == Device::cpu());
  {
    DeviceGuard guard(kGpu);
    CHECK(default_device() == kGpu);
    Tensor z = zeros({3});
    CHECK(z.device() == kGpu);
    CHECK(z.to_vector<float>() == std::vector<float>{0, 0, 0});
    CHECK(ones({2}, DType::float64).device() == kGpu);
    CHECK(arange(4, DType::int64).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3});
    CHECK(zeros({1}, Device::cpu()).device() == Device::cpu());
  }
  CHECK(zeros({3}).device() == Device::cpu());
}

TEST_CASE("cuda: host/device round trips of every dtype, contiguous or not", "[cuda]") {
  SKIP_WITHOUT_GPU();
  for (DType t : {DType::float32, DType::float64, DType::int32, DType::int64}) {
    INFO("dtype " << dtype_name(t));
    std::vector<double> values(5 * 7);
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i) * 3 - 50;
    const Tensor x = from_vector(values, {5, 7}, t);

    // Contiguous there and back.
    const Tensor g = x.to(kGpu);
    CHECK(g.device() == kGpu);
    CHECK(g.dtype() == t);
    CHECK(g.to(Device::cpu()).to_vector<double>() == values);

    // A non-contiguous CPU view sent over, a non-contiguous GPU view brought back.
    const Tensor xt = x.transpose(0, 1).slice(0, 1, 7, 2);
    CHECK(xt.to(kGpu).to_vector<double>() == xt.contiguous().to_vector<double>());
    const Tensor gt = g.transpose(0, 1).slice(0, 1, 7, 2);
    CHECK_FALSE(gt.is_contiguous());
    CHECK(gt.to(Device::cpu()).to_vector<double>() == xt.contiguous().to_vector<double>());
    CHECK(gt.contiguous().to_vector<double>() == xt.contiguous().to_vector<double>());

    // Writing into a non-contiguous GPU destination, from the CPU and from the GPU.
    Tensor dst = zeros({7, 5}, TensorOptions(t, kGpu));
    copy_(dst.transpose(0, 1), x);
    CHECK(dst.to_vector<double>() == x.transpose(0, 1).contiguous().to_vector<double>());
    Tensor dst2 = zeros({7, 5}, TensorOptions(t, kGpu));
    copy_(dst2.transpose(0, 1), g);
    CHECK(dst2.to_vector<double>() == x.transpose(0, 1).contiguous().to_vector<double>());

    // Casts on the GPU agree with casts on the CPU, through strides.
    for (DType u : {DType::float32, DType::float64, DType::int32, DType::int64}) {
      INFO("cast to " << dtype_name(u));
      CHECK(gt.to(u).to_vector<double>() == xt.to(u).to_vector<double>());
      CHECK(g.to(u).to_vector<double>() == x.to(u).to_vector<double>());
    }

    // Fill: contiguous (zero and non-zero) and through strides.
    CHECK(full({5}, 0.0, TensorOptions(t, kGpu)).to_vector<double>() == std::vector<double>(5, 0.0));
    CHECK(full({5}, 3.0, TensorOptions(t, kGpu)).to_vector<double>() == std::vector<double>(5, 3.0));
    Tensor f = zeros({4, 6}, TensorOptions(t, kGpu));
    fill_(f.slice(1, 1, 6, 2), 7.0);
    std::vector<double> expect(24, 0.0);
    for (int r = 0; r < 4; ++r)
      for (int c = 1; c < 6; c += 2) expect[r * 6 + c] = 7.0;
    CHECK(f.to_vector<double>() == expect);
  }
}

TEST_CASE("cuda: copy, cast and fill kernels against the CPU reference", "[cuda]") {
  SKIP_WITHOUT_GPU();
  const Tensor x = uniform({33, 129}, -5, 5, DType::float32);
  const Tensor view_cpu = x.transpose(0, 1).slice(0, 1, 128, 3);
  Tensor ref = empty(view_cpu.shape(), DType::float32);
  run_naive_cpu<CopyKernel>("copy", view_cpu, ref);
  for_each_kernel("copy", [&](Device d, const std::string& name) {
    if (d.is_cpu()) return;  // CPU kernels are tested in their own files
    const Tensor view = same_layout_on(view_cpu, d);
    Tensor out = poisoned(view.shape(), DType::float32, d);
    dispatch<CopyKernel>("copy", d, view, out);
    // memcpy declines non-contiguous copies; the strided kernel serves them.
    const std::string expected = name == "memcpy" ? "strided" : name;
    CHECK(last_kernel("copy", d.type) == expected);
    CHECK(compare(out, ref, 0, 0) == "");
    Tensor flat = poisoned(x.shape(), DType::float32, d);
    dispatch<CopyKernel>("copy", d, same_layout_on(x, d), flat);
    CHECK(last_kernel("copy", d.type) == name);
    CHECK(compare(flat, x, 0, 0) == "");
  });
  Tensor ref_cast = empty(view_cpu.shape(), DType::int64);
  run_naive_cpu<CopyKernel>("cast", view_cpu, ref_cast);
  for_each_kernel("cast", [&](Device d, const std::string& name) {
    if (d.is_cpu()) return;  // CPU kernels are tested in their own files
    Tensor out = zeros(view_cpu.shape(), TensorOptions(DType::int64, d));
    dispatch<CopyKernel>("cast", d, same_layout_on(view_cpu, d), out);
    CHECK(last_kernel("cast", d.type) == name);
    CHECK(compare(out, ref_cast, 0, 0) == "");
  });
  for_each_kernel("fill", [&](Device d, const std::string& name) {
    if (d.is_cpu()) return;  // CPU kernels are tested in their own files
    Tensor out = zeros({5, 9}, d);
    Tensor view = out.slice(1, 2, 9, 3);
    dispatch<FillKernel>("fill", d, view, -1.25);
    CHECK(last_kernel("fill", d.type) == name);
    const std::vector<float> v = out.to_vector<float>();
    for (int r = 0; r < 5; ++r)
      for (int c = 0; c < 9; ++c) CHECK(v[r * 9 + c] == ((c >= 2 && (c - 2) % 3 == 0) ? -1.25f : 0.0f));
  });
}

// ================================================================ random numbers

TEST_CASE("cuda: rand and randn give the same numbers on both devices", "[cuda]") {
  SKIP_WITHOUT_GPU();
  manual_seed(7);
  const std::vector<float> u_cpu = rand({4097}).to_vector<float>();
  const std::vector<double> n_cpu = randn({1001}, DType::float64).to_vector<double>();
  manual_seed(7);
  const Tensor u_gpu = rand({4097}, kGpu);
  const Tensor n_gpu = randn({1001}, TensorOptions(DType::float64, kGpu));
  CHECK(u_gpu.device() == kGpu);
  CHECK(u_gpu.to_vector<float>() == u_cpu);
  CHECK(n_gpu.to_vector<double>() == n_cpu);
}

TEST_CASE("cuda: dropout masks are bit-identical to the CPU's for the same seed and offset", "[cuda]") {
  SKIP_WITHOUT_GPU();
  const bool have_cpu_kernel = !kernels_for("dropout_mask", DeviceType::cpu).empty();
  for (double p : {0.1, 0.5, 0.9}) {
    for (int64_t n : {1, 7, 4097}) {
      INFO("p " << p << ", n " << n);
      const uint64_t seed = 1234, offset = 77;
      // The contract, evaluated on the host with the same header the kernels use.
      std::vector<float> expected(n);
      for (int64_t i = 0; i < n; ++i)
        expected[i] = philox_uniform(seed, offset + i) >= p ? static_cast<float>(1.0 / (1.0 - p)) : 0.0f;
      Tensor mask = poisoned({n}, DType::float32, kGpu);
      dispatch<DropoutMaskKernel>("dropout_mask", kGpu, mask, p, seed, offset, Tensor());
      CHECK(last_kernel("dropout_mask", DeviceType::cuda) == "philox");
      const std::vector<float> got = mask.to_vector<float>();
      CHECK(got == expected);
      if (have_cpu_kernel) {
        Tensor cpu_mask = poisoned({n}, DType::float32, Device::cpu());
        run_naive_cpu<DropoutMaskKernel>("dropout_mask", cpu_mask, p, seed, offset, Tensor());
        CHECK(cpu_mask.to_vector<float>() == got);
      }
    }
  }
  // float64 masks too.
  const double p = 0.3;
  Tensor m64 = poisoned({4097}, DType::float64, kGpu);
  dispatch<DropoutMaskKernel>("dropout_mask", kGpu, m64, p, 99, 5, Tensor());
  const std::vector<double> got64 = m64.to_vector<double>();
  for (int64_t i = 0; i < 4097; ++i) CHECK(got64[i] == (philox_uniform(99, 5 + i) >= p ? 1.0 / (1.0 - p) : 0.0));
}

// ================================================================ elementwise kernels

TEST_CASE("cuda elementwise: unary kernels against the naive CPU reference", "[cuda]") {
  SKIP_WITHOUT_GPU();
  for (const std::string key : {"neg", "exp", "log", "sqrt", "relu", "sigmoid", "tanh"}) {
    for (const Layout& layout : unary_layouts()) {
      INFO("key " << key << ", input " << layout.name);
      const auto range = domain(key);
      const Tensor x_cpu = layout.view(uniform(layout.base, range.first, range.second, DType::float32));
      Tensor ref = empty(x_cpu.shape(), DType::float32);
      run_naive_cpu<UnaryKernel>(key, x_cpu, ref);
      for_each_kernel(key, [&](Device d, const std::string& name) {
        if (d.is_cpu()) return;  // CPU kernels are tested in their own files
        const Tensor x = same_layout_on(x_cpu, d);
        Tensor out = poisoned(x.shape(), DType::float32, d);
        dispatch<UnaryKernel>(key, d, x, out);
        CHECK(last_kernel(key, d.type) == expected_kernel(name, {&layout}));
        CHECK(compare(out, ref, rtol_for(name), atol_for(name)) == "");
      });
    }
  }
}

TEST_CASE("cuda elementwise: scalar kernels against the naive CPU reference", "[cuda]") {
  SKIP_WITHOUT_GPU();
  for (const std::string key : {"add_scalar", "mul_scalar", "pow_scalar"}) {
    for (double s : {-1.5, 2.5}) {
      for (const Layout& layout : unary_layouts()) {
        INFO("key " << key << ", scalar " << s << ", input " << layout.name);
        const auto range = domain(key);
        const Tensor x_cpu = layout.view(uniform(layout.base, range.first, range.second, DType::float32));
        Tensor ref = empty(x_cpu.shape(), DType::float32);
        run_naive_cpu<UnaryScalarKernel>(key, x_cpu, s, ref);
        for_each_kernel(key, [&](Device d, const std::string& name) {
          if (d.is_cpu()) return;  // CPU kernels are tested in their own files
          const Tensor x = same_layout_on(x_cpu, d);
          Tensor out = poisoned(x.shape(), DType::float32, d);
          dispatch<UnaryScalarKernel>(key, d, x, s, out);
          CHECK(last_kernel(key, d.type) == expected_kernel(name, {&layout}));
          CHECK(compare(out, ref, rtol_for(name), atol_for(name)) == "");
        });
      }
    }
  }
}

TEST_CASE("cuda elementwise: binary kernels against the naive CPU reference, broadcasts included", "[cuda]") {
  SKIP_WITHOUT_GPU();
  for (const std::string key : {"add", "sub", "mul", "div", "relu_backward"}) {
    for (const BinaryLayout& layout : binary_layouts()) {
      INFO("key " << key << ", inputs " << layout.name);
      const Tensor a_cpu = layout.a.view(uniform(layout.a.base, -3, 3, DType::float32));
      // Divisors kept away from zero.
      const Tensor b_cpu = layout.b.view(key == "div" ? uniform(layout.b.base, 0.5, 2.5, DType::float32)
                                                      : uniform(layout.b.base, -3, 3, DType::float32));
      REQUIRE(a_cpu.shape() == b_cpu.shape());
      Tensor ref = empty(a_cpu.shape(), DType::float32);
      run_naive_cpu<BinaryKernel>(key, a_cpu, b_cpu, ref);
      for_each_kernel(key, [&](Device d, const std::string& name) {
        if (d.is_cpu()) return;  // CPU kernels are tested in their own files
        const Tensor a = same_layout_on(a_cpu, d), b = same_layout_on(b_cpu, d);
        Tensor out = poisoned(a.shape(), DType::float32, d);
        dispatch<BinaryKernel>(key, d, a, b, out);
        CHECK(last_kernel(key, d.type) == expected_kernel(name, {&layout.a, &layout.b}));
        CHECK(compare(out, ref, 1e-5, 1e-6) == "");
      });
    }
  }
}

TEST_CASE("cuda elementwise: float64 through v1_strided", "[cuda]") {
  SKIP_WITHOUT_GPU();
  SelectionReset reset;
  const Tensor a = uniform({129, 33}, 0.5, 2, DType::float64).transpose(0, 1);
  const Tensor b = uniform({33, 1}, 0.5, 2, DType::float64).expand({33, 129});
  const Tensor ref = div(exp(a), b);
  const Tensor got = div(exp(same_layout_on(a, kGpu)), same_layout_on(b, kGpu));
  CHECK(last_kernel("div", DeviceType::cuda) == "v1_strided");  // v2 is float32-only
  CHECK(got.dtype() == DType::float64);
  CHECK(compare(got, ref, 1e-13, 1e-14) == "");
}

TEST_CASE("cuda elementwise: gradients on the GPU match the CPU's", "[cuda]") {
  SKIP_WITHOUT_GPU();
  const Tensor x0 = uniform({33, 129}, 0.2, 2.0, DType::float32);
  const Tensor y0 = uniform({1, 129}, 0.2, 2.0, DType::float32);
  const Tensor w0 = uniform({33, 129}, -1.0, 1.0, DType::float32);
  // Every elementwise op and a broadcast, so the gradient formulas run their kernels on each device.
  const auto loss = [](const Tensor& x, const Tensor& y, const Tensor& w) {
    Tensor h = add(mul(x, y), sigmoid(sub(x, y)));
    h = add(div(tanh(h), add_scalar(exp(neg(relu(sub(x, mul_scalar(y, 0.5))))), 1.0)), sqrt(add(mul(x, x), y)));
    h = add(h, mul_scalar(log(add_scalar(pow_scalar(x, 1.5), 1.0)), 0.25));
    return sum(mul(h, w));
  };
  std::vector<Tensor> grads[2];
  double values[2];
  const Device devices[2] = {Device::cpu(), kGpu};
  for (int k = 0; k < 2; ++k) {
    Tensor x = x0.to(devices[k]).detach().requires_grad_();
    Tensor y = y0.to(devices[k]).detach().requires_grad_();
    Tensor l = loss(x, y, w0.to(devices[k]));
    CHECK(l.device() == devices[k]);
    values[k] = l.item<double>();
    l.backward();
    grads[k] = {x.grad(), y.grad()};
  }
  CHECK(values[1] == Approx(values[0]).epsilon(1e-4).margin(1e-3));
  CHECK(grads[1][0].device() == kGpu);
  CHECK(compare(grads[1][0], grads[0][0], 1e-4, 1e-5) == "");
  CHECK(compare(grads[1][1], grads[0][1], 1e-4, 1e-4) == "");
}

// ================================================================ reductions and gather

TEST_CASE("cuda reductions: sum and max over rows against the naive CPU reference", "[cuda]") {
  SKIP_WITHOUT_GPU();
  // Short rows (warp per row), long rows (block per row), and few very long rows (split over blocks).
  const std::vector<Shape> shapes = {{1, 1},    {7, 1},   {1, 7},     {1000, 7},  {3, 1000}, {2, 1025},
                                     {5, 4097}, {1, 4097}, {2, 300001}, {1, 1000003}, {4097, 33}};
  for (const Shape& shape : shapes) {
    INFO("x " << shape_str(shape));
    const Tensor x_cpu = uniform(shape, -2, 2, DType::float32);
    Tensor ref = empty({shape[0]}, DType::float32);
    run_naive_cpu<RowReduceKernel>("sum", x_cpu, ref);
    // The reference accumulates in double; allow for float rounding of a long sum.
    const double atol = 1e-6 * std::sqrt(static_cast<double>(shape[1])) + 1e-6;
    for_each_kernel("sum", [&](Device d, const std::string& name) {
      if (d.is_cpu()) return;  // CPU kernels are tested in their own files
      Tensor out = poisoned({shape[0]}, DType::float32, d);
      dispatch<RowReduceKernel>("sum", d, x_cpu.to(d), out);
      CHECK(last_kernel("sum", d.type) == name);
      CHECK(compare(out, ref, 1e-5, atol) == "");
    });

    // Few distinct values, so rows have ties: the first maximum must win.
    const Tensor xi_cpu = from_vector(
        [&] {
          std::vector<double> v = uniform(shape, 0, 5, DType::float64).to_vector<double>();
          for (double& e : v) e = std::floor(e);
          return v;
        }(),
        shape, DType::float32);
    for (const Tensor& input : {x_cpu, xi_cpu}) {
      Tensor ref_v = empty({shape[0]}, DType::float32);
      Tensor ref_i = empty({shape[0]}, DType::int64);
      run_naive_cpu<RowMaxKernel>("max", input, ref_v, ref_i);
      for_each_kernel("max", [&](Device d, const std::string& name) {
        if (d.is_cpu()) return;  // CPU kernels are tested in their own files
        Tensor v = poisoned({shape[0]}, DType::float32, d);
        Tensor i = full({shape[0]}, -1, TensorOptions(DType::int64, d));
        dispatch<RowMaxKernel>("max", d, input.to(d), v, i);
        CHECK(last_kernel("max", d.type) == name);
        CHECK(compare(v, ref_v, 0, 0) == "");
        CHECK(i.to_vector<int64_t>() == ref_i.to_vector<int64_t>());
      });
    }
  }
}

TEST_CASE("cuda reductions: sum and max in float64", "[cuda]") {
  SKIP_WITHOUT_GPU();
  const Tensor x = uniform({5, 4097}, -2, 2, DType::float64);
  Tensor ref = empty({5}, DType::float64), got = poisoned({5}, DType::float64, kGpu);
  run_naive_cpu<RowReduceKernel>("sum", x, ref);
  dispatch<RowReduceKernel>("sum", kGpu, x.to(kGpu), got);
  CHECK(compare(got, ref, 1e-12, 1e-12) == "");
  Tensor ref_v = empty({5}, DType::float64), ref_i = empty({5}, DType::int64);
  Tensor v = poisoned({5}, DType::float64, kGpu), i = full({5}, -1, TensorOptions(DType::int64, kGpu));
  run_naive_cpu<RowMaxKernel>("max", x, ref_v, ref_i);
  dispatch<RowMaxKernel>("max", kGpu, x.to(kGpu), v, i);
  CHECK(compare(v, ref_v, 0, 0) == "");
  CHECK(i.to_vector<int64_t>() == ref_i.to_vector<int64_t>());
}

TEST_CASE("cuda gather and its backward against the naive CPU reference", "[cuda]") {
  SKIP_WITHOUT_GPU();
  struct Case {
    int64_t outer, n, k, inner;
  };
  for (const Case& c : {Case{3, 7, 4, 5}, Case{1, 1, 1, 1}, Case{1, 1000, 4097, 1}, Case{2, 7, 1000, 3}}) {
    INFO("outer " << c.outer << ", n " << c.n << ", k " << c.k << ", inner " << c.inner);
    const Tensor x = uniform({c.outer, c.n, c.inner}, -2, 2, DType::float32);
    const Tensor index = random_indices({c.outer, c.k, c.inner}, c.n);  // repeats: atomics must add up
    const Tensor grad_out = uniform({c.outer, c.k, c.inner}, -2, 2, DType::float32);
    Tensor ref = empty({c.outer, c.k, c.inner}, DType::float32);
    run_naive_cpu<GatherKernel>("gather", x, index, ref);
    Tensor ref_grad = empty({c.outer, c.n, c.inner}, DType::float32);
    run_naive_cpu<ScatterAddKernel>("gather.backward", grad_out, index, ref_grad);
    for_each_kernel("gather", [&](Device d, const std::string& name) {
      if (d.is_cpu()) return;  // CPU kernels are tested in their own files
      Tensor out = poisoned(ref.shape(), DType::float32, d);
      dispatch<GatherKernel>("gather", d, x.to(d), index.to(d), out);
      CHECK(last_kernel("gather", d.type) == name);
      CHECK(compare(out, ref, 0, 0) == "");
    });
    for_each_kernel("gather.backward", [&](Device d, const std::string& name) {
      if (d.is_cpu()) return;  // CPU kernels are tested in their own files
      Tensor grad_x = poisoned(ref_grad.shape(), DType::float32, d);
      dispatch<ScatterAddKernel>("gather.backward", d, grad_out.to(d), index.to(d), grad_x);
      CHECK(last_kernel("gather.backward", d.type) == name);
      CHECK(compare(grad_x, ref_grad, 1e-5, 1e-5) == "");
    });
  }
}

TEST_CASE("cuda: a DataLoader with the data resident on the GPU yields the CPU loader's batches, bit for bit",
          "[cuda][data]") {
  SKIP_WITHOUT_GPU();
  // 29 samples of [3, 2] float32 images and int64 labels; batches of 6 (the last one 5), shuffled.
  const Tensor images = uniform({29, 3, 2}, -1, 1, DType::float32);
  std::vector<double> labels;
  for (int i = 0; i < 29; ++i) labels.push_back(1000 + 7 * i);
  auto dataset = std::make_shared<TensorDataset>(images, from_vector(labels, {29}, DType::int64));
  for (int shards : {1, 3}) {
    for (int shard = 0; shard < shards; ++shard) {
      DataLoaderOptions o;
      o.batch_size = 6;
      o.shuffle = true;
      o.seed = 5;
      o.shard_index = shard;
      o.shard_count = shards;
      DataLoader on_host(dataset, o);
      o.device = kGpu;
      DataLoader on_gpu(dataset, o);
      CHECK_FALSE(on_host.resident());
      REQUIRE(on_gpu.resident());
      for (int64_t epoch : {0, 3})
        for (int64_t first : {0, 2}) {
          INFO("shard " << shard << " of " << shards << ", epoch " << epoch << ", first batch " << first);
          std::vector<Batch> expected;
          for (Batch& b : on_host.epoch(epoch, first)) expected.push_back(b);
          size_t k = 0;
          for (Batch& b : on_gpu.epoch(epoch, first)) {
            REQUIRE(k < expected.size());
            CHECK(b.inputs.device() == kGpu);
            CHECK(b.targets.device() == kGpu);
            CHECK(b.global_size == expected[k].global_size);
            CHECK(b.inputs.shape() == expected[k].inputs.shape());
            CHECK(b.inputs.to(Device::cpu()).to_vector<float>() == expected[k].inputs.to_vector<float>());
            CHECK(b.targets.to(Device::cpu()).to_vector<int64_t>() == expected[k].targets.to_vector<int64_t>());
            ++k;
          }
          CHECK(k == expected.size());
        }
    }
  }
  // A dataset that is not a TensorDataset keeps delivering CPU batches.
  DataLoaderOptions o;
  o.batch_size = 4;
  o.device = kGpu;
  DataLoader sliced(std::make_shared<DatasetSlice>(dataset, 3, 20), o);
  CHECK_FALSE(sliced.resident());
  for (Batch& b : sliced.epoch(0)) CHECK(b.inputs.device() == Device::cpu());
}

TEST_CASE("cuda reductions through the ops: values and gradients match the CPU's", "[cuda]") {
  SKIP_WITHOUT_GPU();
  const Tensor x0 = uniform({6, 33, 129}, -2, 2, DType::float32);
  const Tensor w0 = uniform({6, 129}, -1, 1, DType::float32);
  // sum over a middle dim (a permute and pack on the way), mean, max over the last dim (argmax + gather,
  // whose backward is gather.backward), on the same data on both devices.
  const auto f = [](const Tensor& x, const Tensor& w) {
    Tensor a = mul(sum(x, {1}), w);                  // [6, 129]
    Tensor b = max(x.transpose(1, 2), 2);            // [6, 129]
    Tensor c = mean(x, {0, 2}, /*keepdim=*/true);    // [1, 33, 1]
    return add(sum(mul(a, b)), sum(c));
  };
  double values[2];
  Tensor grads[2], argmaxes[2];
  const Device devices[2] = {Device::cpu(), kGpu};
  for (int k = 0; k < 2; ++k) {
    Tensor x = x0.to(devices[k]).detach().requires_grad_();
    Tensor l = f(x, w0.to(devices[k]));
    values[k] = l.item<double>();
    l.backward();
    grads[k] = x.grad();
    argmaxes[k] = argmax(x.detach(), 1);
  }
  CHECK(values[1] == Approx(values[0]).epsilon(1e-4).margin(1e-3));
  CHECK(grads[1].device() == kGpu);
  CHECK(compare(grads[1], grads[0], 1e-4, 1e-4) == "");
  CHECK(argmaxes[1].to_vector<int64_t>() == argmaxes[0].to_vector<int64_t>());
}

// ================================================================ softmax family

namespace {
// [rows, cols] shapes: warp per row (<= 1024 cols), block per row (> 1024), odd sizes.
const std::vector<Shape> kSoftmaxShapes = {{1, 1}, {7, 10}, {1000, 7}, {5, 32}, {64, 1000}, {2, 1025}, {3, 4097}};
}  // namespace

TEST_CASE("cuda softmax and log_softmax, forward and backward, against the naive CPU reference", "[cuda]") {
  SKIP_WITHOUT_GPU();
  for (const std::string op : {"softmax", "log_softmax"}) {
    const std::string bwd = op + ".backward";
    for (const Shape& shape : kSoftmaxShapes) {
      INFO(op << " on " << shape_str(shape));
      const Tensor x = uniform(shape, -5, 5, DType::float32);
      const Tensor grad_y = uniform(shape, -1, 1, DType::float32);
      Tensor y_ref = empty(shape, DType::float32);
      run_naive_cpu<SoftmaxKernel>(op, x, y_ref);
      Tensor gx_ref = empty(shape, DType::float32);
      run_naive_cpu<SoftmaxBackwardKernel>(bwd, y_ref, grad_y, gx_ref);
      for_each_kernel(op, [&](Device d, const std::string& name) {
        if (d.is_cpu()) return;  // CPU kernels are tested in their own files
        Tensor y = poisoned(shape, DType::float32, d);
        dispatch<SoftmaxKernel>(op, d, x.to(d), y);
        CHECK(last_kernel(op, d.type) == name);
        CHECK(compare(y, y_ref, rtol_for(name), atol_for(name)) == "");
        Tensor gx = poisoned(shape, DType::float32, d);
        dispatch<SoftmaxBackwardKernel>(bwd, d, y_ref.to(d), grad_y.to(d), gx);
        CHECK(last_kernel(bwd, d.type) == name);
        CHECK(compare(gx, gx_ref, rtol_for(name), atol_for(name)) == "");
      });
    }
  }
}

TEST_CASE("cuda cross_entropy, forward and backward, against the naive CPU reference", "[cuda]") {
  SKIP_WITHOUT_GPU();
  for (const Shape& shape : kSoftmaxShapes) {
    INFO("logits " << shape_str(shape));
    const Tensor logits = uniform(shape, -5, 5, DType::float32);
    const Tensor target = random_indices({shape[0]}, shape[1]);
    const Tensor grad_loss = uniform({shape[0]}, 0.5, 1.5, DType::float32);
    Tensor loss_ref = empty({shape[0]}, DType::float32);
    run_naive_cpu<CrossEntropyKernel>("cross_entropy", logits, target, loss_ref);
    Tensor grad_ref = empty(shape, DType::float32);
    run_naive_cpu<CrossEntropyBackwardKernel>("cross_entropy.backward", logits, target, grad_loss, grad_ref);
    for_each_kernel("cross_entropy", [&](Device d, const std::string& name) {
      if (d.is_cpu()) return;  // CPU kernels are tested in their own files
      Tensor loss = poisoned({shape[0]}, DType::float32, d);
      dispatch<CrossEntropyKernel>("cross_entropy", d, logits.to(d), target.to(d), loss);
      CHECK(last_kernel("cross_entropy", d.type) == name);
      CHECK(compare(loss, loss_ref, 1e-5, 1e-5) == "");
      Tensor grad = poisoned(shape, DType::float32, d);
      dispatch<CrossEntropyBackwardKernel>("cross_entropy.backward", d, logits.to(d), target.to(d), grad_loss.to(d),
                                           grad);
      CHECK(last_kernel("cross_entropy.backward", d.type) == name);
      CHECK(compare(grad, grad_ref, 1e-5, 1e-6) == "");
    });
  }
}

TEST_CASE("cuda softmax family in float64", "[cuda]") {
  SKIP_WITHOUT_GPU();
  for (const Shape& shape : {Shape{7, 10}, Shape{3, 4097}}) {
    INFO("shape " << shape_str(shape));
    const Tensor x = uniform(shape, -5, 5, DType::float64);
    const Tensor target = random_indices({shape[0]}, shape[1]);
    for (const std::string op : {"softmax", "log_softmax"}) {
      Tensor ref = empty(shape, DType::float64), got = poisoned(shape, DType::float64, kGpu);
      run_naive_cpu<SoftmaxKernel>(op, x, ref);
      dispatch<SoftmaxKernel>(op, kGpu, x.to(kGpu), got);
      CHECK(last_kernel(op, DeviceType::cuda) == "rows");  // cuDNN is float32-only
      CHECK(compare(got, ref, 1e-12, 1e-13) == "");
    }
    Tensor ref = empty({shape[0]}, DType::float64), got = poisoned({shape[0]}, DType::float64, kGpu);
    run_naive_cpu<CrossEntropyKernel>("cross_entropy", x, target, ref);
    dispatch<CrossEntropyKernel>("cross_entropy", kGpu, x.to(kGpu), target.to(kGpu), got);
    CHECK(compare(got, ref, 1e-12, 1e-12) == "");
  }
}

// ================================================================ optimizers

namespace {
// Parameter sizes: odd ones, and one spanning several chunks of the multi-tensor kernel.
const std::vector<Shape> kParamShapes = {{1}, {7}, {1000}, {4097}, {33, 129}, {100003}};

std::vector<Tensor> random_list(double lo, double hi, uint64_t seed) {
  manual_seed(seed);
  std::vector<Tensor> out;
  for (const Shape& s : kParamShapes) out.push_back(uniform(s, lo, hi, DType::float32));
  return out;
}

std::vector<Tensor> to_device(const std::vector<Tensor>& list, Device d) {
  std::vector<Tensor> out;
  for (const Tensor& t : list) out.push_back(t.to(d).clone());  // clone: never alias the CPU originals
  return out;
}

void compare_lists(const std::vector<Tensor>& got, const std::vector<Tensor>& ref, const char* what) {
  REQUIRE(got.size() == ref.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(what << " " << i << " " << shape_str(ref[i].shape()));
    CHECK(compare(got[i], ref[i], 1e-5, 1e-6) == "");
  }
}
}  // namespace

TEST_CASE("cuda sgd_step against the naive CPU reference", "[cuda]") {
  SKIP_WITHOUT_GPU();
  std::vector<SgdParams> configs(4);
  configs[0].lr = 0.1;  // plain SGD, no buffers
  configs[1].lr = 0.05, configs[1].momentum = 0.9, configs[1].first_step = true;
  configs[2].lr = 0.05, configs[2].momentum = 0.9, configs[2].dampening = 0.1, configs[2].weight_decay = 1e-2;
  configs[3].lr = 0.05, configs[3].momentum = 0.8, configs[3].nesterov = true, configs[3].weight_decay = 1e-3;
  for (size_t k = 0; k < configs.size(); ++k) {
    INFO("config " << k);
    const SgdParams& h = configs[k];
    const std::vector<Tensor> p0 = random_list(-1, 1, 11), g0 = random_list(-1, 1, 12), b0 = random_list(-1, 1, 13);
    std::vector<Tensor> p_ref = to_device(p0, Device::cpu()), b_ref = to_device(b0, Device::cpu());
    // Buffers are passed even without momentum, when the kernels must leave them alone.
    run_naive_cpu<SgdStepKernel>("sgd_step", p_ref, g0, b_ref, h);
    for_each_kernel("sgd_step", [&](Device d, const std::string& name) {
      if (d.is_cpu()) return;  // CPU kernels are tested in their own files
      std::vector<Tensor> p = to_device(p0, d), g = to_device(g0, d), b = to_device(b0, d);
      dispatch<SgdStepKernel>("sgd_step", d, p, g, b, h);
      CHECK(last_kernel("sgd_step", d.type) == name);
      compare_lists(p, p_ref, "param");
      compare_lists(b, b_ref, "momentum buffer");
    });
  }
}

TEST_CASE("cuda adam_step against the naive CPU reference", "[cuda]") {
  SKIP_WITHOUT_GPU();
  std::vector<AdamParams> configs(3);
  configs[0].lr = 1e-2, configs[0].step = 1;  // Adam, first step
  configs[1].lr = 1e-2, configs[1].step = 7, configs[1].weight_decay = 1e-2;
  configs[2].lr = 1e-2, configs[2].step = 3, configs[2].weight_decay = 1e-2, configs[2].decoupled_weight_decay = true;
  for (size_t k = 0; k < configs.size(); ++k) {
    INFO("config " << k);
    const AdamParams& h = configs[k];
    const std::vector<Tensor> p0 = random_list(-1, 1, 21), g0 = random_list(-1, 1, 22);
    const std::vector<Tensor> m0 = random_list(-0.1, 0.1, 23), v0 = random_list(0, 0.01, 24);
    std::vector<Tensor> p_ref = to_device(p0, Device::cpu()), m_ref = to_device(m0, Device::cpu()),
                        v_ref = to_device(v0, Device::cpu());
    run_naive_cpu<AdamStepKernel>("adam_step", p_ref, g0, m_ref, v_ref, h);
    for_each_kernel("adam_step", [&](Device d, const std::string& name) {
      if (d.is_cpu()) return;  // CPU kernels are tested in their own files
      std::vector<Tensor> p = to_device(p0, d), g = to_device(g0, d), m = to_device(m0, d), v = to_device(v0, d);
      dispatch<AdamStepKernel>("adam_step", d, p, g, m, v, h);
      CHECK(last_kernel("adam_step", d.type) == name);
      compare_lists(p, p_ref, "param");
      compare_lists(m, m_ref, "m");
      compare_lists(v, v_ref, "v");
    });
  }
}

#endif  // MINIDL_WITH_CUDA
