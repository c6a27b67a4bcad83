// tests/test_cuda_kernels_vs_cpu.cpp — the CUDA matmul, conv2d and pooling kernels (cuda/matmul*.cu,
// cuda/conv_*.cu, cuda/pool_*.cu) against the naive CPU reference, kernel by kernel through the dispatch
// table, then GPU against CPU through the ops with autograd (outputs and every input gradient). Batch norm
// has its own file: tests/test_cuda_batchnorm_vs_cpu.cpp.
//
// All cases are tagged [cuda]. Without a usable GPU, `minidl_tests "[cuda]"` exits 77 (ctest: skipped)
// and an untagged run returns from each case after a warning. Comparisons are in float32 with
// tolerances that grow with the length of the sums involved (atol_for, tests/cuda_vs_cpu.h).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/dispatch.h"
#include "core/random.h"
#include "ops/ops.h"
#include "tests/cuda_vs_cpu.h"
#include "tests/env_scope.h"
#include "tests/kernel_contract_check.h"
#include "tests/skips.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

// Small integers as float32: many equal values, to exercise max-pooling ties.
Tensor small_integers_f32(const Shape& shape, int levels, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> pick(0, levels - 1);
  std::vector<double> values(static_cast<size_t>(shape_numel(shape)));
  for (double& v : values) v = pick(gen);
  return from_vector(values, shape, DType::float32);
}

// ---------------------------------------------------------------- shapes used below

struct MatmulCase {
  int64_t batch, M, N, K;
};
// Odd sizes (ragged tiles, unaligned rows), aligned sizes (float4 paths), K = 1, N = 1, and batches
// with enough tiles for every multiprocessor: [33, 256, 250] takes v3's 128x128 path on a GPU of up
// to 132 multiprocessors; [40, 130, 131] stays on 64x64 tiles (128x128 ones would be half empty).
// The last three have too few tiles for the GPU and enough K to split it (splitk, v7_autotuned;
// cuda/sgemm_split_k.cuh): MNIST fc1 (116 splits of 80 on 132 multiprocessors), and two with a ragged last
// split (1000 = 12 x 80 + 40; 999 with unaligned rows).
const std::vector<MatmulCase> kMatmulCases = {{1, 1, 1, 1},      {1, 7, 33, 129},    {2, 33, 7, 1},
                                              {3, 129, 65, 33},  {1, 64, 64, 64},    {2, 100, 260, 72},
                                              {1, 1, 300, 17},   {40, 130, 131, 36}, {1, 257, 1, 40},
                                              {33, 256, 250, 20}, {1, 64, 128, 9216}, {2, 33, 65, 1000},
                                              {1, 5, 7, 999}};

// Random float32 operands of case c, stored as the transpose flags say (a [B, K, M] when ta, ...), on the CPU.
std::pair<Tensor, Tensor> matmul_operands(const MatmulCase& c, bool ta, bool tb) {
  return {random_f32(ta ? Shape{c.batch, c.K, c.M} : Shape{c.batch, c.M, c.K}),
          random_f32(tb ? Shape{c.batch, c.N, c.K} : Shape{c.batch, c.K, c.N})};
}

// Runs body(c, ta, tb) for every case and both transpose flags, naming them in failure messages.
void for_each_matmul_case(const std::vector<MatmulCase>& cases,
                          const std::function<void(const MatmulCase&, bool, bool)>& body) {
  for (const MatmulCase& c : cases)
    for (const bool ta : {false, true})
      for (const bool tb : {false, true}) {
        INFO("batch " << c.batch << " M " << c.M << " N " << c.N << " K " << c.K << " trans_a " << ta << " trans_b "
                      << tb);
        body(c, ta, tb);
      }
}

// op(a) op(b) by the naive CPU kernel: the reference.
Tensor naive_matmul(const Tensor& a, const Tensor& b, const MatmulCase& c, bool ta, bool tb) {
  Tensor ref = empty({c.batch, c.M, c.N});
  with_cpu_naive("matmul", [&] { dispatch<MatmulKernel>("matmul", Device::cpu(), a, b, ref, ta, tb); });
  return ref;
}

struct ConvCase {
  Shape x, w;
  Conv2dParams p;
};
// Strides 1/2/3, paddings 0/1/2, square and non-square kernels, 1 and more than 32 channels, the 1x1
// shortcut of im2col_gemm (stride 1, no padding), a strided 1x1 that must not take it, batches that
// make im2col_gemm's weight gradient split the batch (one sample per group, then three on a GPU of 132
// multiprocessors) and the implicit GEMM kernels' split K, and each of their tile sizes.
const std::vector<ConvCase> kConvCases = {
    {{1, 1, 1, 1}, {1, 1, 1, 1}, conv_params(1, 1, 0, 0)},
    {{2, 3, 7, 9}, {4, 3, 3, 3}, conv_params(1, 1, 1, 1)},
    {{1, 1, 8, 8}, {2, 1, 3, 5}, conv_params(2, 1, 2, 1)},
    {{2, 35, 9, 7}, {33, 35, 3, 3}, conv_params(2, 2, 1, 1)},
    {{3, 5, 11, 13}, {6, 5, 1, 1}, conv_params(1, 1, 0, 0)},
    {{2, 4, 6, 6}, {3, 4, 1, 1}, conv_params(2, 2, 0, 0)},
    {{1, 2, 5, 5}, {3, 2, 5, 5}, conv_params(1, 1, 2, 2)},
    {{4, 16, 16, 16}, {32, 16, 3, 3}, conv_params(1, 1, 1, 1)},
    {{2, 3, 33, 17}, {5, 3, 4, 2}, conv_params(3, 2, 0, 1)},
    {{33, 1, 12, 12}, {7, 1, 5, 5}, conv_params(1, 1, 0, 0)},
    {{33, 64, 5, 7}, {130, 64, 5, 5}, conv_params(1, 2, 0, 1)},  // im2col_gemm weight gradient: groups of 3
    // The implicit GEMM kernels' larger tiles (on a GPU of up to 136 multiprocessors): 17*32*32 pixels make
    // 136 column tiles, so 128 (then 64) channels take the 128-row (64-row) tiles in every stage.
    {{17, 128, 32, 32}, {128, 128, 1, 1}, conv_params(1, 1, 0, 0)},
    {{17, 64, 32, 32}, {64, 64, 1, 1}, conv_params(1, 1, 0, 0)},
    {{4, 32, 10, 10}, {32, 32, 3, 3}, conv_params(1, 1, 1, 1)},  // their 32x64 weight-gradient tile (N = 288)
};

// compare() for a conv2d kernel whose outputs are sums of `terms` products of numbers in [-1, 1]:
// FP32 kernels within atol_for(terms), TF32 kernels within the TF32 tolerance (tests/test_util.h).
std::string compare_conv(const std::string& kernel, const Tensor& got, const Tensor& ref, int64_t terms) {
  if (is_tf32_kernel(kernel)) return compare(got, ref, kTf32Rtol, tf32_atol_bound(terms));
  return compare(got, ref, kRtol, atol_for(terms));
}

Shape conv_out_shape(const ConvCase& c) {
  return {c.x[0], c.w[0], out_size(c.x[2], int(c.w[2]), c.p.stride_h, c.p.pad_h),
          out_size(c.x[3], int(c.w[3]), c.p.stride_w, c.p.pad_w)};
}

struct PoolCase {
  Shape x;
  Pool2dParams p;
};
// Overlapping windows (stride < kernel), padding, non-square windows, odd sizes, > 32 channels.
const std::vector<PoolCase> kPoolCases = {
    {{2, 3, 7, 9}, pool_params(3, 3, 2, 2, 1, 1)}, {{1, 1, 8, 8}, pool_params(2, 2, 2, 2, 0, 0)},
    {{2, 35, 6, 5}, pool_params(3, 2, 1, 2, 1, 0)}, {{1, 2, 5, 5}, pool_params(5, 5, 1, 1, 2, 2)},
    {{3, 4, 13, 11}, pool_params(3, 3, 1, 1, 1, 1)}, {{1, 1, 1, 1}, pool_params(1, 1, 1, 1, 0, 0)},
};

Shape pool_out_shape(const PoolCase& c) {
  return {c.x[0], c.x[1], out_size(c.x[2], c.p.kernel_h, c.p.stride_h, c.p.pad_h),
          out_size(c.x[3], c.p.kernel_w, c.p.stride_w, c.p.pad_w)};
}

}  // namespace

// ================================================================ kernels against the CPU reference

TEST_CASE("cuda matmul kernels match the naive CPU kernel (float32, transposes, batches)", "[cuda][matmul]") {
  if (!have_gpu()) return;
  manual_seed(1);
  for_each_matmul_case(kMatmulCases, [](const MatmulCase& c, bool ta, bool tb) {
    const std::pair<Tensor, Tensor> ab = matmul_operands(c, ta, tb);
    const Tensor a = ab.first, b = ab.second;
    const Tensor ref = naive_matmul(a, b, c, ta, tb);
    for_each_kernel("matmul", [&](Device d, const std::string& name) {
      if (d.is_cpu()) return;
      const Tensor ad = a.to(d), bd = b.to(d);
      Tensor out = empty_on({c.batch, c.M, c.N}, d);
      dispatch<MatmulKernel>("matmul", d, ad, bd, out, ta, tb);
      CHECK(last_kernel("matmul", d.type) == name);
      const Tolerance tol = matmul_tolerance(name, c.K, {kRtol, atol_for(c.K)});
      CHECK(compare(out, ref, tol.rtol, tol.atol) == "");
    });
  });
}

TEST_CASE("cuda matmul kernels that take float64 match the naive CPU kernel", "[cuda][matmul]") {
  if (!have_gpu()) return;
  manual_seed(2);
  const Tensor a = uniform({2, 31, 45}, -1, 1), b = uniform({2, 33, 45}, -1, 1);  // float64
  Tensor ref = empty({2, 31, 33}, DType::float64);
  with_cpu_naive("matmul", [&] { dispatch<MatmulKernel>("matmul", Device::cpu(), a, b, ref, false, true); });
  for_each_kernel("matmul", [&](Device d, const std::string& name) {
    if (d.is_cpu()) return;
    const Tensor ad = a.to(d), bd = b.to(d);
    Tensor out = empty({2, 31, 33}, TensorOptions(DType::float64, d));
    dispatch<MatmulKernel>("matmul", d, ad, bd, out, false, true);
    // v1, v2 and cuBLAS take float64; the others (v3 onwards) are float32 only and must decline it.
    if (name != "v1_naive" && name != "v2_smem_tiled" && name != "cublas") {
      CHECK(last_kernel("matmul", d.type) != name);
      CHECK(served_or_declined("matmul", d.type, name, true));
    } else {
      CHECK(last_kernel("matmul", d.type) == name);
    }
    CHECK(compare(out, ref, 1e-12, 1e-12) == "");
  });
}

namespace {

// out = op(a) op(b) by the CUDA matmul kernel `name` (selected, and checked to have run), as floats.
std::vector<float> cuda_matmul_with(const std::string& name, const Tensor& a, const Tensor& b, const MatmulCase& c,
                                    bool ta, bool tb) {
  SelectionReset reset;
  select_kernel("matmul", DeviceType::cuda, name);
  Tensor out = empty_on({c.batch, c.M, c.N}, a.device());
  dispatch<MatmulKernel>("matmul", a.device(), a, b, out, ta, tb);
  CHECK(last_kernel("matmul", DeviceType::cuda) == name);
  return out.to_vector<float>();
}

}  // namespace

// The FP32 ladder from v3 on sums every output as fmaf(a_k, b_k, acc) for k = 0, 1, 2, ..., whatever its
// tiles and pipeline, so where K is not split its kernels give identical bits; splitk and v7_autotuned
// split K by one plan (cuda/sgemm_split_k.cuh), so they agree with each other on every shape, and
// v7_autotuned's timing never changes a result (docs/gemm-ladder.md). K < 128 is never split.
TEST_CASE("cuda FP32 ladder kernels give identical bits", "[cuda][matmul]") {
  if (!have_gpu()) return;
  manual_seed(11);
  const std::vector<MatmulCase> cases = {{3, 129, 65, 100}, {1, 300, 520, 127}, {1, 64, 128, 9216}, {2, 33, 65, 1000}};
  for_each_matmul_case(cases, [](const MatmulCase& c, bool ta, bool tb) {
    const std::pair<Tensor, Tensor> ab = matmul_operands(c, ta, tb);
    const Tensor a = ab.first.to(Device::cuda(0)), b = ab.second.to(Device::cuda(0));
    const std::vector<float> v3 = cuda_matmul_with("v3_register_blocked", a, b, c, ta, tb);
    for (const char* name : {"v4_warptiled", "v5_double_buffered", "v6_cp_async", "v8_tuned"}) {
      INFO("kernel " << name);
      CHECK(cuda_matmul_with(name, a, b, c, ta, tb) == v3);
    }
    const std::vector<float> split = cuda_matmul_with("splitk", a, b, c, ta, tb);
    CHECK(cuda_matmul_with("splitk", a, b, c, ta, tb) == split);        // run to run
    CHECK(cuda_matmul_with("v7_autotuned", a, b, c, ta, tb) == split);  // tunes this class
    CHECK(cuda_matmul_with("v7_autotuned", a, b, c, ta, tb) == split);  // its choice
    if (c.K < 128) CHECK(split == v3);
  });
}

namespace {

// The function of CUDA matmul kernel `name` in the dispatch table; nullptr when the build has none.
MatmulKernel* cuda_matmul_kernel(const std::string& name) {
  for (const KernelInfo* k : KernelRegistry::instance().candidates("matmul", DeviceType::cuda))
    if (k->name == name) return reinterpret_cast<MatmulKernel*>(k->fn);
  return nullptr;
}

// v8_tuned's configuration names, read from the error an unknown MINIDL_V8_CONFIG raises (lines
// "  INDEX  NAME ..." after the message): the list the user is shown. It looks the configuration up
// before it touches a device, so this runs without a GPU. Empty when the build has no v8_tuned.
std::vector<std::string> v8_config_names() {
  MatmulKernel* v8 = cuda_matmul_kernel("v8_tuned");
  if (v8 == nullptr) return {};
  EnvScope env("MINIDL_V8_CONFIG", "no_such_config");
  const Tensor a = random_f32({1, 4, 4}), b = random_f32({1, 4, 4});
  Tensor out = empty({1, 4, 4});
  std::string message;
  try {
    v8(a, b, out, false, false);
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK(message.find("MINIDL_V8_CONFIG=\"no_such_config\" is not a configuration") != std::string::npos);
  std::vector<std::string> names;
  std::istringstream lines(message);
  std::string line;
  std::getline(lines, line);  // the message itself
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    int index = -1;
    std::string name;
    fields >> index >> name;
    CHECK(index == static_cast<int>(names.size()));
    names.push_back(name);
  }
  return names;
}

}  // namespace

// cuda/matmul_v8_tuned.cu: MINIDL_V8_CONFIG picks a tile configuration; an unknown value is an error that
// lists the valid ones, by index and name (one of them marked as the default). No GPU needed.
TEST_CASE("matmul v8_tuned: an unknown MINIDL_V8_CONFIG is an error listing the configurations", "[matmul][v8]") {
  if (cuda_matmul_kernel("v8_tuned") == nullptr) {
    skip_test("this build has no CUDA kernels");
    return;
  }
  const std::vector<std::string> names = v8_config_names();
  CHECK(names.size() >= 6);
  for (const std::string& name : names) CHECK(name.find("x") != std::string::npos);
}

// Every configuration of v8_tuned, chosen by index and by name, serves every transpose flag on ragged,
// batched, unaligned and tile-sized shapes, and gives v3's bits: the same fmaf order over k as the rest of
// the FP32 ladder, whatever the tile, thread tile or buffering.
TEST_CASE("cuda matmul v8_tuned: every configuration gives v3's bits", "[cuda][matmul][v8]") {
  if (!have_gpu()) return;
  manual_seed(15);
  const std::vector<std::string> names = v8_config_names();
  REQUIRE(names.size() >= 6);
  const std::vector<MatmulCase> cases = {{3, 129, 65, 100}, {1, 300, 520, 127}, {2, 256, 256, 64}, {1, 1, 1, 1},
                                         {2, 33, 7, 1}, {1, 257, 1, 40}};
  for_each_matmul_case(cases, [&](const MatmulCase& c, bool ta, bool tb) {
    const std::pair<Tensor, Tensor> ab = matmul_operands(c, ta, tb);
    const Tensor a = ab.first.to(Device::cuda(0)), b = ab.second.to(Device::cuda(0));
    const std::vector<float> v3 = cuda_matmul_with("v3_register_blocked", a, b, c, ta, tb);
    for (size_t i = 0; i < names.size(); ++i) {
      INFO("MINIDL_V8_CONFIG " << i << " " << names[i]);
      {
        EnvScope env("MINIDL_V8_CONFIG", std::to_string(i));
        CHECK(cuda_matmul_with("v8_tuned", a, b, c, ta, tb) == v3);
      }
      EnvScope env("MINIDL_V8_CONFIG", names[i]);
      CHECK(cuda_matmul_with("v8_tuned", a, b, c, ta, tb) == v3);
    }
  });
}

// TF32 kernels trade precision for speed, so they never serve a call the user did not ask them for:
// declined unless MINIDL_TF32=1 or selected by name (then they must run: tf32_wgmma needs an H100/H200).
TEST_CASE("cuda TF32 matmul kernels run only when selected or with MINIDL_TF32=1", "[cuda][matmul][tf32]") {
  if (!have_gpu()) return;
  manual_seed(12);
  const char* env = std::getenv("MINIDL_TF32");
  const bool tf32_on = env != nullptr && std::string(env) == "1";
  const MatmulCase c{1, 64, 48, 32};
  const std::pair<Tensor, Tensor> ab = matmul_operands(c, false, false);
  const Tensor a = ab.first, b = ab.second;
  const Tensor ref = naive_matmul(a, b, c, false, false);
  const Tensor ad = a.to(Device::cuda(0)), bd = b.to(Device::cuda(0));
  int tf32_kernels = 0;
  for (const KernelInfo* k : KernelRegistry::instance().all()) {
    if (k->key != "matmul" || k->device != DeviceType::cuda || !is_tf32_kernel(k->name)) continue;
    INFO("kernel " << k->name);
    ++tf32_kernels;
    MatmulKernel* fn = reinterpret_cast<MatmulKernel*>(k->fn);
    SelectionReset reset;
    reset_kernel_selection();
    Tensor out = empty_on({c.batch, c.M, c.N}, Device::cuda(0));
    CHECK(fn(ad, bd, out, false, false) == tf32_on);
    select_kernel("matmul", DeviceType::cuda, k->name);
    REQUIRE(fn(ad, bd, out, false, false));
    const Tolerance tol = matmul_tolerance(k->name, c.K, {kRtol, atol_for(c.K)});
    CHECK(compare(out, ref, tol.rtol, tol.atol) == "");
  }
  CHECK(tf32_kernels >= 1);  // tf32_mma is always built with CUDA
}

// A quick self-check of the tensor-core kernels alone (`minidl_tests "[tf32]"`): tile-sized, ragged,
// batched and tall-skinny products, every transpose flag, against the float32 reference within the TF32
// tolerance (tests/test_util.h). The sweep above covers them too, among all kernels.
TEST_CASE("cuda TF32 matmul kernels are within TF32 error of the FP32 reference", "[cuda][matmul][tf32]") {
  if (!have_gpu()) return;
  manual_seed(13);
  const std::vector<MatmulCase> cases = {{1, 128, 128, 32}, {1, 256, 384, 512}, {2, 130, 70, 300}, {1, 1, 1, 1},
                                         {1, 64, 128, 9216}, {3, 17, 200, 33}};
  for_each_matmul_case(cases, [](const MatmulCase& c, bool ta, bool tb) {
    const std::pair<Tensor, Tensor> ab = matmul_operands(c, ta, tb);
    const Tensor a = ab.first, b = ab.second;
    const Tensor ref = naive_matmul(a, b, c, ta, tb);
    for (const std::string& name : kernels_for("matmul", DeviceType::cuda)) {
      if (!is_tf32_kernel(name)) continue;
      INFO("kernel " << name);
      const std::vector<float> got = cuda_matmul_with(name, a.to(Device::cuda(0)), b.to(Device::cuda(0)), c, ta, tb);
      const Tolerance tol = matmul_tolerance(name, c.K, {kRtol, atol_for(c.K)});
      CHECK(compare(from_vector(std::vector<double>(got.begin(), got.end()), ref.shape(), DType::float32), ref,
                    tol.rtol, tol.atol) == "");
    }
  });
}

// BF16 kernels round their operands to bfloat16, so they serve only under --precision bf16 or when selected
// by name; and what they compute is exactly defined: the products of the rounded operands, summed in
// float32. So against the naive kernel run on operands rounded to bfloat16 first they must agree to
// float32 accumulation (the FP32 tolerance), which a kernel that rounded wrongly, dropped a k-step or
// mixed up elements would miss; against the unrounded operands they differ by BF16's error. bf16_wgmma
// is built for sm_90a and runs on compute capability 9.0 only (an H100/H200).
TEST_CASE("cuda BF16 matmul kernels: rounded operands, float32 sums, only when asked", "[cuda][matmul][bf16]") {
  if (!have_gpu()) return;
  std::vector<std::string> bf16_kernels;
  for (const std::string& name : kernels_for("matmul", DeviceType::cuda))
    if (is_bf16_kernel(name)) bf16_kernels.push_back(name);
  if (bf16_kernels.empty()) {
    WARN("no BF16 matmul kernel in this build (bf16_wgmma needs an sm_90a build)");
    return;
  }
  manual_seed(14);
  const std::vector<MatmulCase> cases = {{1, 128, 256, 64}, {1, 256, 384, 512}, {2, 130, 70, 300}, {1, 1, 1, 1},
                                         {1, 64, 128, 9216}, {3, 17, 200, 33}, {2, 257, 129, 65}};
  for_each_matmul_case(cases, [&](const MatmulCase& c, bool ta, bool tb) {
    const std::pair<Tensor, Tensor> ab = matmul_operands(c, ta, tb);
    const Tensor a = ab.first, b = ab.second;
    const Tensor a16 = a.to(DType::bfloat16).to(DType::float32), b16 = b.to(DType::bfloat16).to(DType::float32);
    const Tensor ref_rounded = naive_matmul(a16, b16, c, ta, tb);
    const Tensor ref = naive_matmul(a, b, c, ta, tb);
    for (const std::string& name : bf16_kernels) {
      INFO("kernel " << name);
      const Tensor ad = a.to(Device::cuda(0)), bd = b.to(Device::cuda(0));
      {  // not asked for: declines (the plain float32 precision of this test binary)
        SelectionReset reset;
        reset_kernel_selection();
        for (const KernelInfo* k : KernelRegistry::instance().all()) {
          if (k->key != "matmul" || k->device != DeviceType::cuda || k->name != name) continue;
          Tensor out = empty_on({c.batch, c.M, c.N}, Device::cuda(0));
          CHECK_FALSE(reinterpret_cast<MatmulKernel*>(k->fn)(ad, bd, out, ta, tb));
        }
      }
      const std::vector<float> got = cuda_matmul_with(name, ad, bd, c, ta, tb);
      const Tensor got_t = from_vector(std::vector<double>(got.begin(), got.end()), ref.shape(), DType::float32);
      CHECK(compare(got_t, ref_rounded, kRtol, atol_for(c.K)) == "");
      const Tolerance tol = matmul_tolerance(name, c.K, {kRtol, atol_for(c.K)});
      CHECK(compare(got_t, ref, tol.rtol, tol.atol) == "");
    }
  });
}

TEST_CASE("cuda conv2d kernels match the naive CPU kernels (all three stages)", "[cuda][conv2d]") {
  if (!have_gpu()) return;
  manual_seed(3);
  for (const ConvCase& c : kConvCases) {
    const Shape ys = conv_out_shape(c);
    INFO("x " << shape_str(c.x) << " w " << shape_str(c.w) << " y " << shape_str(ys) << " stride " << c.p.stride_h
              << "x" << c.p.stride_w << " pad " << c.p.pad_h << "x" << c.p.pad_w);
    const Tensor x = random_f32(c.x), w = random_f32(c.w), gy = random_f32(ys);
    Tensor y_ref = empty(ys), gx_ref = empty(c.x), gw_ref = empty(c.w);
    with_cpu_naive("conv2d", [&] {
      dispatch<Conv2dKernel>("conv2d", Device::cpu(), x, w, y_ref, c.p);
      dispatch<Conv2dBackwardInputKernel>("conv2d.backward_input", Device::cpu(), gy, w, gx_ref, c.p);
      dispatch<Conv2dBackwardWeightKernel>("conv2d.backward_weight", Device::cpu(), x, gy, gw_ref, c.p);
    });
    const int64_t fwd_terms = c.w[1] * c.w[2] * c.w[3];
    const int64_t bwd_input_terms = c.w[0] * c.w[2] * c.w[3];
    const int64_t bwd_weight_terms = ys[0] * ys[2] * ys[3];

    for_each_kernel("conv2d", [&](Device d, const std::string& name) {
      if (d.is_cpu()) return;
      const Tensor xd = x.to(d), wd = w.to(d);
      Tensor y = empty_on(ys, d);
      CHECK(call_under_contract<Conv2dKernel>("conv2d", d, name, xd, wd, y, c.p).verdict == "");  // partial kernels
      CHECK(compare_conv(name, y, y_ref, fwd_terms) == "");
    });
    for_each_kernel("conv2d.backward_input", [&](Device d, const std::string& name) {
      if (d.is_cpu()) return;
      const Tensor gyd = gy.to(d), wd = w.to(d);
      Tensor gx = empty_on(c.x, d);
      CHECK(call_under_contract<Conv2dBackwardInputKernel>("conv2d.backward_input", d, name, gyd, wd, gx, c.p)
                .verdict == "");
      CHECK(compare_conv(name, gx, gx_ref, bwd_input_terms) == "");
    });
    for_each_kernel("conv2d.backward_weight", [&](Device d, const std::string& name) {
      if (d.is_cpu()) return;
      const Tensor xd = x.to(d), gyd = gy.to(d);
      Tensor gw = empty_on(c.w, d);
      CHECK(call_under_contract<Conv2dBackwardWeightKernel>("conv2d.backward_weight", d, name, xd, gyd, gw, c.p)
                .verdict == "");
      CHECK(compare_conv(name, gw, gw_ref, bwd_weight_terms) == "");
    });
  }
}


TEST_CASE("cuda conv2d implicit_gemm_tf32 runs only when selected or with MINIDL_TF32=1", "[cuda][conv2d]") {
  if (!have_gpu()) return;
  const char* env = std::getenv("MINIDL_TF32");
  if (env != nullptr && std::string(env) == "1") {
    WARN("MINIDL_TF32=1 is set: implicit_gemm_tf32 accepts every call, its decline is not tested");
    return;
  }
  manual_seed(11);
  const Device d = Device::cuda(0);
  const Conv2dParams p = conv_params(1, 1, 1, 1);
  const Tensor x = random_f32({2, 3, 8, 8}).to(d), w = random_f32({4, 3, 3, 3}).to(d), gy = random_f32({2, 4, 8, 8}).to(d);
  Tensor y = empty_on({2, 4, 8, 8}, d), gx = empty_on({2, 3, 8, 8}, d), gw = empty_on({4, 3, 3, 3}, d);
  auto* forward = cuda_kernel_function<Conv2dKernel>("conv2d", "implicit_gemm_tf32");
  auto* backward_input = cuda_kernel_function<Conv2dBackwardInputKernel>("conv2d.backward_input", "implicit_gemm_tf32");
  auto* backward_weight =
      cuda_kernel_function<Conv2dBackwardWeightKernel>("conv2d.backward_weight", "implicit_gemm_tf32");
  REQUIRE(forward != nullptr);
  REQUIRE(backward_input != nullptr);
  REQUIRE(backward_weight != nullptr);
  SelectionReset reset;
  for (const std::string& selected : {"default", "implicit_gemm", "implicit_gemm_tf32"}) {
    INFO("conv2d selected: " << selected);
    select_kernel("conv2d", DeviceType::cuda, selected);
    const bool runs = selected == "implicit_gemm_tf32";
    CHECK(forward(x, w, y, p) == runs);
    CHECK(backward_input(gy, w, gx, p) == runs);
    CHECK(backward_weight(x, gy, gw, p) == runs);
  }
}

TEST_CASE("cuda conv2d implicit GEMM kernels decline float64 and strided tensors", "[cuda][conv2d]") {
  if (!have_gpu()) return;
  manual_seed(12);
  const Device d = Device::cuda(0);
  const Conv2dParams p = conv_params(1, 1, 0, 0);
  const Tensor x = random_f32({2, 3, 6, 6}).to(d), w = random_f32({4, 3, 3, 3}).to(d);
  const Tensor x64 = x.to(DType::float64), w64 = w.to(DType::float64);
  const Tensor x_strided = random_f32({2, 3, 6, 6}).to(d).transpose(2, 3);
  Tensor y = empty_on({2, 4, 4, 4}, d), y64 = empty({2, 4, 4, 4}, TensorOptions(DType::float64, d));
  SelectionReset reset;
  for (const std::string& name : {"implicit_gemm", "implicit_gemm_tf32"}) {
    INFO(name);
    select_kernel("conv2d", DeviceType::cuda, name);  // so that the TF32 kernel does not decline for that reason
    auto* forward = cuda_kernel_function<Conv2dKernel>("conv2d", name);
    REQUIRE(forward != nullptr);
    CHECK_FALSE(forward(x64, w64, y64, p));
    CHECK_FALSE(forward(x_strided, w, y, p));
    CHECK(forward(x, w, y, p));
    // Through the dispatcher, float64 falls through to a kernel that takes it ("direct").
    dispatch<Conv2dKernel>("conv2d", d, x64, w64, y64, p);
    CHECK(last_kernel("conv2d", DeviceType::cuda) == "direct");
  }
}

// backward_weight splits K (the batch's pixels) and adds the partial sums in a fixed order: the same
// call gives the same bits every time. [8, 16, 20, 20] * [32, 16, 3, 3] splits K = 3200 in 12.
TEST_CASE("cuda conv2d implicit GEMM weight gradients are reproducible bit for bit", "[cuda][conv2d]") {
  if (!have_gpu()) return;
  manual_seed(13);
  const Device d = Device::cuda(0);
  const Conv2dParams p = conv_params(1, 1, 1, 1);
  const Tensor x = random_f32({8, 16, 20, 20}), gy = random_f32({8, 32, 20, 20});
  Tensor gw_ref = empty({32, 16, 3, 3});
  with_cpu_naive("conv2d", [&] { dispatch<Conv2dBackwardWeightKernel>("conv2d.backward_weight", Device::cpu(), x, gy, gw_ref, p); });
  const Tensor xd = x.to(d), gyd = gy.to(d);
  SelectionReset reset;
  for (const std::string& name : {"implicit_gemm", "implicit_gemm_tf32"}) {
    INFO(name);
    select_kernel("conv2d", DeviceType::cuda, name);
    Tensor first = empty_on({32, 16, 3, 3}, d), second = empty_on({32, 16, 3, 3}, d);
    dispatch<Conv2dBackwardWeightKernel>("conv2d.backward_weight", d, xd, gyd, first, p);
    dispatch<Conv2dBackwardWeightKernel>("conv2d.backward_weight", d, xd, gyd, second, p);
    CHECK(last_kernel("conv2d.backward_weight", DeviceType::cuda) == name);
    CHECK(compare(first, second, 0, 0) == "");
    CHECK(compare_conv(name, first, gw_ref, 8 * 20 * 20) == "");
  }
}

TEST_CASE("cuda pooling kernels match the naive CPU kernels", "[cuda][pool]") {
  if (!have_gpu()) return;
  manual_seed(4);
  for (const PoolCase& c : kPoolCases) {
    const Shape ys = pool_out_shape(c);
    INFO("x " << shape_str(c.x) << " window " << c.p.kernel_h << "x" << c.p.kernel_w << " stride " << c.p.stride_h
              << "x" << c.p.stride_w << " pad " << c.p.pad_h << "x" << c.p.pad_w);
    const Tensor x = random_f32(c.x), gy = random_f32(ys);
    Tensor max_ref = empty(ys), max_gx_ref = empty(c.x), avg_ref = empty(ys), avg_gx_ref = empty(c.x);
    with_cpu_naive("max_pool2d", [&] {
      dispatch<Pool2dKernel>("max_pool2d", Device::cpu(), x, max_ref, c.p);
      dispatch<MaxPool2dBackwardKernel>("max_pool2d.backward", Device::cpu(), x, max_ref, gy, max_gx_ref, c.p);
    });
    with_cpu_naive("avg_pool2d", [&] {
      dispatch<Pool2dKernel>("avg_pool2d", Device::cpu(), x, avg_ref, c.p);
      dispatch<AvgPool2dBackwardKernel>("avg_pool2d.backward", Device::cpu(), gy, avg_gx_ref, c.p);
    });
    const int64_t window = int64_t{c.p.kernel_h} * c.p.kernel_w;

    for (const std::string key : {"max_pool2d", "avg_pool2d"}) {
      for_each_kernel(key, [&](Device d, const std::string& name) {
        if (d.is_cpu()) return;
        const Tensor xd = x.to(d);
        Tensor y = empty_on(ys, d);
        CHECK(call_under_contract<Pool2dKernel>(key, d, name, xd, y, c.p).verdict == "");
        CHECK(compare(y, key == "max_pool2d" ? max_ref : avg_ref, kRtol, atol_for(window)) == "");
      });
    }
    for_each_kernel("max_pool2d.backward", [&](Device d, const std::string& name) {
      if (d.is_cpu()) return;
      const Tensor xd = x.to(d), yd = max_ref.to(d), gyd = gy.to(d);
      Tensor gx = empty_on(c.x, d);
      CHECK(call_under_contract<MaxPool2dBackwardKernel>("max_pool2d.backward", d, name, xd, yd, gyd, gx, c.p)
                .verdict == "");
      CHECK(compare(gx, max_gx_ref, kRtol, atol_for(window)) == "");
    });
    for_each_kernel("avg_pool2d.backward", [&](Device d, const std::string& name) {
      if (d.is_cpu()) return;
      const Tensor gyd = gy.to(d);
      Tensor gx = empty_on(c.x, d);
      CHECK(call_under_contract<AvgPool2dBackwardKernel>("avg_pool2d.backward", d, name, gyd, gx, c.p).verdict == "");
      CHECK(compare(gx, avg_gx_ref, kRtol, atol_for(window)) == "");
    });
  }
}

// The contract's tie rule: a window's gradient goes to its first maximal position in row-major order.
// Our kernels must follow it exactly. cuDNN documents no tie rule: its result is reported, not
// asserted, so that whoever runs this learns which way it goes (see cuda/pool_cudnn.cu).
TEST_CASE("cuda max_pool2d.backward follows the first-maximum tie rule", "[cuda][pool]") {
  if (!have_gpu()) return;
  const PoolCase cases[] = {{{2, 3, 9, 8}, pool_params(3, 3, 2, 2, 1, 1)}, {{1, 2, 6, 6}, pool_params(2, 2, 2, 2, 0, 0)},
                            {{1, 1, 7, 7}, pool_params(3, 3, 1, 1, 1, 1)}};
  unsigned seed = 5;
  for (const PoolCase& c : cases) {
    const Shape ys = pool_out_shape(c);
    INFO("x " << shape_str(c.x) << " window " << c.p.kernel_h << "x" << c.p.kernel_w << " stride " << c.p.stride_h
              << " pad " << c.p.pad_h);
    const Tensor x = small_integers_f32(c.x, 3, seed++), gy = random_f32(ys, 0.5, 1.5);
    Tensor y_ref = empty(ys), gx_ref = empty(c.x);
    with_cpu_naive("max_pool2d", [&] {
      dispatch<Pool2dKernel>("max_pool2d", Device::cpu(), x, y_ref, c.p);
      dispatch<MaxPool2dBackwardKernel>("max_pool2d.backward", Device::cpu(), x, y_ref, gy, gx_ref, c.p);
    });
    for_each_kernel("max_pool2d", [&](Device d, const std::string& name) {
      if (d.is_cpu()) return;
      const Tensor xd = x.to(d), yd = y_ref.to(d), gyd = gy.to(d);
      Tensor y = empty_on(ys, d), gx = empty_on(c.x, d);
      CHECK(call_under_contract<Pool2dKernel>("max_pool2d", d, name, xd, y, c.p).verdict == "");
      CHECK(compare(y, y_ref, 0, 0) == "");
      CHECK(call_under_contract<MaxPool2dBackwardKernel>("max_pool2d.backward", d, name, xd, yd, gyd, gx, c.p)
                .verdict == "");
      const std::string diff = compare(gx, gx_ref, kRtol, 1e-5);
      if (name == "cudnn") {
        if (diff.empty())
          WARN("cudnn max_pool2d.backward agreed with the first-maximum tie rule on this input");
        else
          WARN("cudnn max_pool2d.backward resolves ties differently from the first-maximum rule:\n" << diff);
      } else {
        CHECK(diff == "");
      }
    });
  }
}

// ================================================================ through the ops, with autograd

namespace {

// `count` copies of matmul's TF32 atol for sums of up to `terms` products (the output's and every
// gradient's, held to the longest sum).
std::vector<double> tf32_atols(int64_t terms, size_t count) { return std::vector<double>(count, tf32_atol(terms)); }

// For every CUDA kernel of `op`: f on the GPU gives the CPU reference's output and input gradients
// (CPU with the naive kernels), and the kernels of every key in `keys` really ran. TF32 kernels
// (is_tf32_kernel) are held to kTf32Rtol and tf32_atols instead: the output's, then each gradient's; an
// op that has such a kernel must pass them. BF16 kernels to kBf16Rtol and 4 x tf32_atols.
void check_op_on_gpu(const std::string& op, const std::vector<std::string>& keys, const OpFn& f,
                     const std::vector<Tensor>& inputs, double atol_out, const std::vector<double>& atol_grads,
                     const std::vector<double>& tf32_atols = {}) {
  const Tensor probe = f(inputs);
  const Tensor weight = random_f32(probe.shape(), 0.5, 1.5);
  GradRun ref;
  with_cpu_naive(op, [&] { ref = run_with_grad(f, inputs, weight, Device::cpu()); });
  for_each_kernel(keys.front(), [&](Device d, const std::string& name) {
    if (d.is_cpu()) return;
    const GradRun got = run_with_grad(f, inputs, weight, d);
    for (const std::string& key : keys) CHECK(last_kernel(key, d.type) == name);
    // BF16 kernels (is_bf16_kernel, selected by name here) round to 7 mantissa bits where TF32 keeps 10:
    // their bound is TF32's times 4 (tests/test_util.h).
    const bool bf16 = is_bf16_kernel(name), tf32 = bf16 || is_tf32_kernel(name);
    if (tf32) REQUIRE(tf32_atols.size() == inputs.size() + 1);
    const double rtol = bf16 ? kBf16Rtol : tf32 ? kTf32Rtol : kRtol, scale = bf16 ? 4.0 : 1.0;
    CHECK(compare(got.out, ref.out, rtol, tf32 ? scale * tf32_atols[0] : atol_out) == "");
    for (size_t i = 0; i < inputs.size(); ++i) {
      INFO("gradient of input " << i);
      REQUIRE(got.grads[i].defined());
      CHECK(got.grads[i].device() == d);
      CHECK(compare(got.grads[i], ref.grads[i], rtol, tf32 ? scale * tf32_atols[i + 1] : atol_grads[i]) == "");
    }
  });
}

}  // namespace

TEST_CASE("cuda matmul and linear: outputs and gradients match the CPU", "[cuda][matmul][autograd]") {
  if (!have_gpu()) return;
  manual_seed(7);
  // Batched with a broadcast right operand, and plain 2-D.
  // The last argument: the longest sum in the output and gradients, for the TF32 kernels' tolerance.
  check_op_on_gpu("matmul", {"matmul"}, [](const std::vector<Tensor>& t) { return matmul(t[0], t[1]); },
                  {random_f32({3, 7, 33}), random_f32({33, 17})}, atol_for(33), {atol_for(17), atol_for(21)},
                  tf32_atols(33, 3));
  check_op_on_gpu("matmul", {"matmul"}, [](const std::vector<Tensor>& t) { return matmul(t[0], t[1]); },
                  {random_f32({65, 129}), random_f32({129, 31})}, atol_for(129), {atol_for(31), atol_for(65)},
                  tf32_atols(129, 3));
  check_op_on_gpu("matmul", {"matmul"}, [](const std::vector<Tensor>& t) { return linear(t[0], t[1], t[2]); },
                  {random_f32({9, 35}), random_f32({17, 35}), random_f32({17})}, atol_for(36),
                  {atol_for(17), atol_for(9), atol_for(9)}, tf32_atols(36, 4));
}

TEST_CASE("cuda conv2d with bias: outputs and gradients match the CPU", "[cuda][conv2d][autograd]") {
  if (!have_gpu()) return;
  manual_seed(8);
  const Conv2dParams p = conv_params(2, 1, 1, 0);
  const OpFn f = [p](const std::vector<Tensor>& t) { return conv2d(t[0], t[1], t[2], p); };
  // y is [2, 5, 5, 7]: 2*5*7 = 70 terms per weight gradient. For TF32: y sums 18 products of numbers
  // in [-1, 1] (mean |x w| = 1/4); the gradients multiply by grad_y = the weight of the loss, in
  // [0.5, 1.5] (mean |grad_y w| = |grad_y x| = 1/2); the bias gradient is a plain FP32 sum.
  check_op_on_gpu("conv2d", {"conv2d", "conv2d.backward_input", "conv2d.backward_weight"}, f,
                  {random_f32({2, 3, 9, 8}), random_f32({5, 3, 3, 2}), random_f32({5})}, atol_for(19),
                  {atol_for(30), atol_for(70), atol_for(70)},
                  {tf32_atol_bound(18), tf32_atol_bound(30, 0.5), tf32_atol_bound(70, 0.5), atol_for(70)});
}

TEST_CASE("cuda pooling: outputs and gradients match the CPU", "[cuda][pool][autograd]") {
  if (!have_gpu()) return;
  manual_seed(9);
  const Pool2dParams p = pool_params(3, 3, 2, 2, 1, 1);
  check_op_on_gpu("max_pool2d", {"max_pool2d", "max_pool2d.backward"},
                  [p](const std::vector<Tensor>& t) { return max_pool2d(t[0], p); }, {random_f32({2, 3, 9, 9})}, 1e-6,
                  {atol_for(9)});
  check_op_on_gpu("avg_pool2d", {"avg_pool2d", "avg_pool2d.backward"},
                  [p](const std::vector<Tensor>& t) { return avg_pool2d(t[0], p); }, {random_f32({2, 3, 9, 9})},
                  atol_for(9), {atol_for(9)});
}
