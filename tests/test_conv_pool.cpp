// tests/test_conv_pool.cpp — conv2d, max_pool2d and avg_pool2d: every kernel of every stage against the
// naive reference (strides, padding, non-square windows, overlapping windows, ties, the image grouping
// and 1x1 paths of im2col), hand-computed cases of the pooling rules, float64 gradient checks and errors.
// A kernel with a contract (core/kernel_contract.h: a forward-only kernel, one that declines strides) is
// checked where it accepts, its other stages skipped, its declines held to the contract.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "core/dispatch.h"
#include "tests/kernel_contract_check.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

struct ConvCase {
  int64_t n, c, h, w, o, kh, kw;
  int sh, sw, ph, pw;
  Conv2dParams params() const { return conv_params(sh, sw, ph, pw); }
  int64_t oh() const { return (h + 2 * ph - kh) / sh + 1; }
  int64_t ow() const { return (w + 2 * pw - kw) / sw + 1; }
};

// compare() for a conv2d kernel: FP32 kernels with (rtol, atol); TF32 kernels (names ending in "_tf32")
// with the TF32 tolerance of a sum of `terms` products (tests/test_util.h).
std::string compare_conv(const std::string& kernel, const Tensor& got, const Tensor& ref, int64_t terms, double rtol,
                         double atol) {
  if (is_tf32_kernel(kernel)) return compare(got, ref, kTf32Rtol, tf32_atol_bound(terms));
  return compare(got, ref, rtol, atol);
}

std::string describe(const ConvCase& c) {
  return str_cat("x [", c.n, ",", c.c, ",", c.h, ",", c.w, "] w [", c.o, ",", c.c, ",", c.kh, ",", c.kw, "] stride ",
                 c.sh, "x", c.sw, " pad ", c.ph, "x", c.pw);
}

// The contract verdicts (tests/kernel_contract_check.h) of the last conv2d calls of x by w with p, made
// through the front end with kernel `name` selected: the forward, and with `backward` both gradients.
// "" when each stage kept its contract. The contract is asked on tensors of each stage's shapes.
std::string conv_verdict(Device d, const std::string& name, const Tensor& x, const Tensor& w, const Conv2dParams& p,
                         bool backward) {
  const int64_t oh = (x.size(2) + 2 * p.pad_h - w.size(2)) / p.stride_h + 1;
  const int64_t ow = (x.size(3) + 2 * p.pad_w - w.size(3)) / p.stride_w + 1;
  Tensor y = empty({x.size(0), w.size(0), oh, ow}, x.options()), gx = empty(x.shape(), x.options()),
         gw = empty(w.shape(), w.options());
  const std::string shape = describe_call(x, w, y, p);
  const std::string fw = contract_declines<Conv2dKernel>("conv2d", d.type, name, x, w, y, p);
  std::string out = contract_verdict("conv2d", d.type, name, fw, shape);
  if (!backward) return out;
  const std::string bi =
      contract_declines<Conv2dBackwardInputKernel>("conv2d.backward_input", d.type, name, y, w, gx, p);
  const std::string bw =
      contract_declines<Conv2dBackwardWeightKernel>("conv2d.backward_weight", d.type, name, x, y, gw, p);
  for (const std::string& v : {contract_verdict("conv2d.backward_input", d.type, name, bi, shape),
                               contract_verdict("conv2d.backward_weight", d.type, name, bw, shape)})
    out += (out.empty() || v.empty() ? "" : "; ") + v;
  return out;
}

// The contract verdict of the last call of pooling `key` ("max_pool2d", "avg_pool2d") on x with p, made
// through the front end with kernel `name` selected.
std::string pool_verdict(const std::string& key, Device d, const std::string& name, const Tensor& x,
                         const Pool2dParams& p) {
  const int64_t oh = (x.size(2) + 2 * p.pad_h - p.kernel_h) / p.stride_h + 1;
  const int64_t ow = (x.size(3) + 2 * p.pad_w - p.kernel_w) / p.stride_w + 1;
  Tensor y = empty({x.size(0), x.size(1), oh, ow}, x.options());
  const std::string declined_as = contract_declines<Pool2dKernel>(key, d.type, name, x, y, p);
  return contract_verdict(key, d.type, name, declined_as, describe_call(x, y, p));
}

// Small images (grouped several per GEMM by im2col), large ones (one per GEMM), 1x1 (no unrolling),
// a single image (no thread split), strides, padding and non-square kernels.
const std::vector<ConvCase> kConvCases = {
    {2, 3, 7, 9, 4, 3, 3, 1, 1, 0, 0},   {3, 2, 8, 7, 5, 3, 2, 2, 1, 1, 0},   {1, 1, 5, 5, 1, 5, 5, 1, 1, 0, 0},
    {2, 4, 6, 6, 3, 1, 1, 1, 1, 0, 0},   {5, 3, 6, 5, 2, 1, 1, 1, 1, 0, 0},   {4, 2, 5, 6, 3, 3, 3, 2, 2, 1, 1},
    {3, 3, 4, 4, 2, 2, 3, 1, 2, 1, 1},   {2, 3, 30, 30, 4, 3, 3, 1, 1, 1, 1}, {7, 2, 9, 9, 3, 3, 3, 3, 3, 2, 2},
    {1, 2, 20, 20, 3, 3, 3, 1, 1, 0, 0}, {9, 1, 28, 28, 4, 3, 3, 1, 1, 0, 0}, {3, 2, 17, 17, 3, 1, 1, 2, 2, 0, 0},
};

}  // namespace

TEST_CASE("conv2d kernels match the naive reference for all three stages", "[conv]") {
  for (const ConvCase& c : kConvCases) {
    INFO(describe(c));
    const Conv2dParams p = c.params();
    const Tensor x = uniform({c.n, c.c, c.h, c.w}, -1, 1, DType::float32);
    const Tensor w = uniform({c.o, c.c, c.kh, c.kw}, -1, 1, DType::float32);
    const Tensor gy = uniform({c.n, c.o, c.oh(), c.ow()}, -1, 1, DType::float32);
    Tensor ref_y = empty(gy.shape()), ref_gx = empty(x.shape()), ref_gw = empty(w.shape());
    {
      SelectionReset reset;
      select_kernel("conv2d", DeviceType::cpu, "naive");
      dispatch<Conv2dKernel>("conv2d", Device::cpu(), x, w, ref_y, p);
      dispatch<Conv2dBackwardInputKernel>("conv2d.backward_input", Device::cpu(), gy, w, ref_gx, p);
      dispatch<Conv2dBackwardWeightKernel>("conv2d.backward_weight", Device::cpu(), x, gy, ref_gw, p);
      CHECK(last_kernel("conv2d.backward_weight", DeviceType::cpu) == "naive");
    }
    // Each stage's sweep runs the kernels registered for that stage; a kernel declining a call its
    // contract lists leaves it to the next kernel, whose output is compared all the same.
    for_each_kernel("conv2d", [&](Device d, const std::string& name) {
      Tensor y = empty(ref_y.shape(), TensorOptions(DType::float32, d));
      CHECK(call_under_contract<Conv2dKernel>("conv2d", d, name, x.to(d), w.to(d), y, p).verdict == "");
      CHECK(compare_conv(name, y, ref_y, c.c * c.kh * c.kw, 1e-4, 1e-5) == "");
    });
    for_each_kernel("conv2d.backward_input", [&](Device d, const std::string& name) {
      Tensor gx = full(x.shape(), 123.0, TensorOptions(DType::float32, d));  // must be overwritten
      CHECK(call_under_contract<Conv2dBackwardInputKernel>("conv2d.backward_input", d, name, gy.to(d), w.to(d), gx, p)
                .verdict == "");
      CHECK(compare_conv(name, gx, ref_gx, c.o * c.kh * c.kw, 1e-4, 1e-5) == "");
    });
    for_each_kernel("conv2d.backward_weight", [&](Device d, const std::string& name) {
      Tensor gw = full(w.shape(), 123.0, TensorOptions(DType::float32, d));
      CHECK(call_under_contract<Conv2dBackwardWeightKernel>("conv2d.backward_weight", d, name, x.to(d), gy.to(d), gw, p)
                .verdict == "");
      CHECK(compare_conv(name, gw, ref_gw, c.n * c.oh() * c.ow(), 1e-4, 1e-4) == "");
    });
  }
}

TEST_CASE("conv2d: a hand-computed case with padding and stride", "[conv]") {
  // x = 1..9 in a 3x3 image, w = [[1, 0], [0, -1]], padding 1, stride 2: windows at rows/cols -1 and 1.
  //   y[0,0] = 0*1 + (-1)*x[0,0] = -1      y[0,1] = 0 + (-1)*x[0,2] = -3
  //   y[1,0] = 0 + (-1)*x[2,0]   = -7      y[1,1] = x[1,1] - x[2,2] = 5 - 9 = -4
  const Tensor x = from_vector({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  const Tensor w = from_vector({1, 0, 0, -1}, {1, 1, 2, 2});
  const Tensor bias = from_vector({0.5}, {1});
  Conv2dParams p;
  p.stride_h = p.stride_w = 2;
  p.pad_h = p.pad_w = 1;
  for_each_kernel("conv2d", [&](Device d, const std::string& name) {
    const Tensor y = conv2d(x.to(d), w.to(d), bias.to(d), /*stride=*/2, /*padding=*/1);
    CHECK(conv_verdict(d, name, x.to(d), w.to(d), p, /*backward=*/false) == "");
    CHECK(y.shape() == Shape{1, 1, 2, 2});
    CHECK(y.to_vector<float>() == std::vector<float>{-0.5f, -2.5f, -6.5f, -3.5f});
  });
}

TEST_CASE("conv2d front end adds the bias and backward reaches every input", "[conv]") {
  const ConvCase c{3, 2, 8, 7, 4, 3, 3, 1, 2, 1, 0};
  const Conv2dParams p = c.params();
  const Tensor x = uniform({c.n, c.c, c.h, c.w}, -1, 1, DType::float32);
  const Tensor w = uniform({c.o, c.c, c.kh, c.kw}, -1, 1, DType::float32);
  const Tensor bias = uniform({c.o}, -1, 1, DType::float32);
  Tensor ref = empty({c.n, c.o, c.oh(), c.ow()});
  {
    SelectionReset reset;
    select_kernel("conv2d", DeviceType::cpu, "naive");
    dispatch<Conv2dKernel>("conv2d", Device::cpu(), x, w, ref, p);
  }
  ref = add(ref, bias.view({1, c.o, 1, 1}));
  for_each_kernel("conv2d", [&](Device d, const std::string& name) {
    Tensor xd = x.to(d).clone().requires_grad_(), wd = w.to(d).clone().requires_grad_(),
           bd = bias.to(d).clone().requires_grad_();
    const Tensor y = conv2d(xd, wd, bd, p);
    CHECK(compare_conv(name, y, ref, c.c * c.kh * c.kw, 1e-4, 1e-5) == "");
    sum(y).backward();
    CHECK(conv_verdict(d, name, xd, wd, p, /*backward=*/true) == "");  // each stage it serves: it served
    // L = sum(y): dbias[o] is the number of output pixels per channel, N*OH*OW.
    CHECK(compare(bd.grad(), full({c.o}, static_cast<double>(c.n * c.oh() * c.ow())), 0, 1e-3) == "");
    CHECK(xd.grad().shape() == x.shape());
    CHECK(wd.grad().shape() == w.shape());
  });
}

TEST_CASE("conv2d gradients (float64 finite differences, every CPU kernel)", "[conv][gradcheck]") {
  SelectionReset reset;
  auto leaf = [](const Shape& s) { return uniform(s, -1, 1).requires_grad_(); };
  struct Setting {
    int sh, sw, ph, pw;
    int64_t kh, kw;
  };
  const std::vector<Setting> settings = {
      {1, 1, 0, 0, 3, 3}, {2, 2, 0, 0, 3, 3}, {1, 1, 1, 1, 3, 3}, {2, 2, 1, 1, 3, 3}, {2, 1, 1, 0, 2, 3}};
  for (const std::string& name : kernels_for("conv2d", DeviceType::cpu)) {
    select_kernel("conv2d", DeviceType::cpu, name);
    for (const Setting& s : settings) {
      INFO("kernel " << name << " stride " << s.sh << "x" << s.sw << " pad " << s.ph << "x" << s.pw);
      Conv2dParams p;
      p.stride_h = s.sh;
      p.stride_w = s.sw;
      p.pad_h = s.ph;
      p.pad_w = s.pw;
      auto f = [p](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], in[2], p); };
      CHECK(gradcheck(f, {leaf({2, 2, 5, 6}), leaf({3, 2, s.kh, s.kw}), leaf({3})}) == "");
      if (serves_stage("conv2d.backward_weight", DeviceType::cpu, name))  // not a forward-only kernel
        CHECK(served_or_declined("conv2d.backward_weight", DeviceType::cpu, name, /*may_decline=*/true));  // float64
    }
    auto no_bias = [](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], Tensor(), 1, 1); };
    CHECK(gradcheck(no_bias, {leaf({2, 3, 4, 4}), leaf({2, 3, 3, 3})}) == "");
  }
}

TEST_CASE("conv2d and pooling accept non-contiguous inputs", "[conv][pool]") {
  const Tensor x = uniform({2, 3, 9, 7}, -1, 1, DType::float32).transpose(2, 3);  // [2,3,7,9], strided
  const Tensor w = uniform({4, 3, 3, 2}, -1, 1, DType::float32);
  const Tensor packed = x.contiguous();
  Conv2dParams p;
  p.stride_h = p.stride_w = 2;
  p.pad_h = p.pad_w = 1;
  for_each_kernel("conv2d", [&](Device d, const std::string& name) {
    const Tensor from_packed = conv2d(packed.to(d), w.to(d), Tensor(), 2, 1);
    const Tensor xd = x.to(d);
    CHECK(compare(conv2d(xd, w.to(d), Tensor(), 2, 1), from_packed, 0, 0) == "");
    CHECK(conv_verdict(d, name, xd, w.to(d), p, /*backward=*/false) == "");
  });
  for_each_kernel("max_pool2d", [&](Device d, const std::string& name) {
    const Tensor from_packed = max_pool2d(packed.to(d), 3, 2, 1);
    const Tensor xd = x.to(d);
    CHECK(compare(max_pool2d(xd, 3, 2, 1), from_packed, 0, 0) == "");
    CHECK(pool_verdict("max_pool2d", d, name, xd, pool_params(3, 3, 2, 2, 1, 1)) == "");
  });
  for_each_kernel("avg_pool2d", [&](Device d, const std::string& name) {
    const Tensor from_packed = avg_pool2d(packed.to(d), 2);
    const Tensor xd = x.to(d);
    CHECK(compare(avg_pool2d(xd, 2), from_packed, 0, 0) == "");
    CHECK(pool_verdict("avg_pool2d", d, name, xd, pool_params(2, 2, 2, 2, 0, 0)) == "");
  });
}

TEST_CASE("conv2d skips the input gradient when the input needs none", "[conv]") {
  Tensor x = uniform({2, 1, 6, 6}, -1, 1, DType::float32);
  Tensor w = uniform({3, 1, 3, 3}, -1, 1, DType::float32).requires_grad_();
  sum(conv2d(x, w)).backward();
  CHECK(w.grad().defined());
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("conv2d errors name the op and the shapes", "[conv][errors]") {
  CHECK_THROWS_WITH(conv2d(zeros({2, 3, 8, 8}), zeros({4, 2, 3, 3})),
                    "conv2d: the input [2,3,8,8] has 3 channels but the weight [4,2,3,3] expects 2");
  CHECK_THROWS_WITH(
      conv2d(zeros({1, 1, 3, 3}), zeros({1, 1, 5, 5})),
      Catch::StartsWith("conv2d: the kernel [1,1,5,5] is larger than the padded input along height (5 > 3"));
  CHECK_NOTHROW(conv2d(zeros({1, 1, 3, 3}), zeros({1, 1, 5, 5}), Tensor(), 1, 1));
  CHECK_THROWS_WITH(conv2d(zeros({3, 8, 8}), zeros({4, 3, 3, 3})),
                    Catch::Contains("conv2d: expected a 4-D tensor [N, C, H, W] for the input, got shape [3,8,8]"));
  CHECK_THROWS_WITH(conv2d(zeros({1, 3, 8, 8}), zeros({4, 3, 3, 3}), zeros({3})),
                    Catch::Contains("conv2d: bias of shape [3] does not match the weight [4,3,3,3]"));
  CHECK_THROWS_WITH(conv2d(zeros({1, 3, 8, 8}), zeros({4, 3, 3, 3}), Tensor(), 0),
                    "conv2d: stride 0 along height must be at least 1");
  CHECK_THROWS_WITH(conv2d(zeros({1, 3, 8, 8}), zeros({4, 3, 3, 3}, DType::float64)),
                    Catch::Contains("conv2d: dtypes differ"));
}

// Issue 23 item 5: what the library API could be given and should refuse rather than divide by zero,
// read out of bounds or overflow a size: sizes of 0, strides below 1, negative or absurd padding.
TEST_CASE("conv2d refuses zero sizes, strides below 1, negative padding and an output too large to index",
          "[conv][errors]") {
  const Tensor x = zeros({1, 3, 8, 8}), w = zeros({4, 3, 3, 3});
  Conv2dParams p;
  p.stride_w = 0;
  REQUIRE_THROWS_WITH(conv2d(x, w, Tensor(), p), "conv2d: stride 0 along width must be at least 1");
  p = Conv2dParams();
  p.stride_h = -2;
  REQUIRE_THROWS_WITH(conv2d(x, w, Tensor(), p), "conv2d: stride -2 along height must be at least 1");
  p = Conv2dParams();
  p.pad_w = -1;
  REQUIRE_THROWS_WITH(conv2d(x, w, Tensor(), p), "conv2d: padding -1 along width must be at least 0");
  REQUIRE_THROWS_WITH(conv2d(x, zeros({4, 3, 0, 3})),
                      "conv2d: the weight [4,3,0,3] has size 0 in dim 2; every size must be at least 1");
  REQUIRE_THROWS_WITH(conv2d(x, zeros({0, 3, 3, 3})),
                      "conv2d: the weight [0,3,3,3] has size 0 in dim 0; every size must be at least 1");
  REQUIRE_THROWS_WITH(conv2d(zeros({1, 3, 0, 8}), w, Tensor(), 1, 2),
                      "conv2d: the input [1,3,0,8] has size 0 in dim 2; every size must be at least 1");
  REQUIRE_THROWS_WITH(conv2d(zeros({1, 0, 8, 8}), zeros({4, 0, 3, 3})),
                      "conv2d: the input [1,0,8,8] has size 0 in dim 1; every size must be at least 1");
  // Padding of 2^31 - 1 makes an output of 4294967295 x 4294967295: more elements than an int64 counts.
  const int huge = std::numeric_limits<int>::max();
  REQUIRE_THROWS_WITH(conv2d(zeros({1, 1, 1, 1}), zeros({1, 1, 1, 1}), Tensor(), 1, huge),
                      "conv2d: the output [1,1,4294967295,4294967295] has more than 2^58 (288230376151711744) elements");
}

TEST_CASE("pooling refuses zero sizes, windows and strides below 1, and padding beyond half the window",
          "[pool][errors]") {
  const Tensor x = zeros({1, 1, 4, 4});
  Pool2dParams p;
  p.kernel_w = 0;
  REQUIRE_THROWS_WITH(max_pool2d(x, p), "max_pool2d: window 0 along width must be at least 1");
  p = Pool2dParams();
  p.stride_h = 0;
  REQUIRE_THROWS_WITH(avg_pool2d(x, p), "avg_pool2d: stride 0 along height must be at least 1");
  REQUIRE_THROWS_WITH(avg_pool2d(x, 2, 0), "avg_pool2d: stride 0 along height must be at least 1");
  REQUIRE_THROWS_WITH(max_pool2d(x, 2, 2, -1),
                      "max_pool2d: padding -1 along height must be between 0 and half the window (2)");
  // 2 * (2^31 - 1) overflowed an int to -2, which passed the half-window check.
  REQUIRE_THROWS_WITH(max_pool2d(x, 2, 2, std::numeric_limits<int>::max()),
                      "max_pool2d: padding 2147483647 along height must be between 0 and half the window (2)");
  REQUIRE_THROWS_WITH(max_pool2d(zeros({1, 0, 4, 4}), 2),
                      "max_pool2d: the input [1,0,4,4] has size 0 in dim 1; every size must be at least 1");
  REQUIRE_THROWS_WITH(avg_pool2d(zeros({1, 1, 0, 4}), 1),
                      "avg_pool2d: the input [1,1,0,4] has size 0 in dim 2; every size must be at least 1");
}

// ---------------------------------------------------------------- pooling

namespace {

struct PoolCase {
  int64_t n, c, h, w;
  Pool2dParams p;
};

// MNIST's 2x2/2, an odd size that drops the last row, overlapping 3x3/2 windows with padding,
// non-square windows and strides, and 1x1.
const std::vector<PoolCase> kPoolCases = {
    {2, 3, 6, 6, pool_params(2, 2, 2, 2, 0, 0)}, {2, 2, 7, 7, pool_params(2, 2, 2, 2, 0, 0)},
    {3, 2, 9, 8, pool_params(3, 3, 2, 2, 1, 1)}, {2, 3, 7, 9, pool_params(3, 2, 1, 2, 1, 0)},
    {1, 2, 5, 5, pool_params(1, 1, 1, 1, 0, 0)}, {4, 33, 24, 24, pool_params(2, 2, 2, 2, 0, 0)},
    {2, 2, 8, 6, pool_params(4, 2, 3, 1, 2, 1)},
};

// Random float32 values on a coarse grid (0, 0.25, ..., 1.75), so that many windows hold ties.
Tensor coarse_values(const Shape& shape) {
  std::vector<double> v = uniform(shape, 0, 2).to_vector<double>();
  for (double& e : v) e = std::floor(e * 4) / 4;
  return from_vector(v, shape, DType::float32);
}

}  // namespace

TEST_CASE("pooling kernels match the naive reference for all four keys", "[pool]") {
  for (const PoolCase& c : kPoolCases) {
    const Pool2dParams& p = c.p;
    INFO("x [" << c.n << "," << c.c << "," << c.h << "," << c.w << "] window " << p.kernel_h << "x" << p.kernel_w
               << " stride " << p.stride_h << "x" << p.stride_w << " pad " << p.pad_h << "x" << p.pad_w);
    const Tensor x = coarse_values({c.n, c.c, c.h, c.w});
    const int64_t oh = (c.h + 2 * p.pad_h - p.kernel_h) / p.stride_h + 1,
                  ow = (c.w + 2 * p.pad_w - p.kernel_w) / p.stride_w + 1;
    const Tensor gy = uniform({c.n, c.c, oh, ow}, -1, 1, DType::float32);
    Tensor max_y = empty(gy.shape()), max_gx = empty(x.shape()), avg_y = empty(gy.shape()), avg_gx = empty(x.shape());
    {
      SelectionReset reset;
      select_kernel("max_pool2d", DeviceType::cpu, "naive");
      select_kernel("avg_pool2d", DeviceType::cpu, "naive");
      dispatch<Pool2dKernel>("max_pool2d", Device::cpu(), x, max_y, p);
      dispatch<MaxPool2dBackwardKernel>("max_pool2d.backward", Device::cpu(), x, max_y, gy, max_gx, p);
      dispatch<Pool2dKernel>("avg_pool2d", Device::cpu(), x, avg_y, p);
      dispatch<AvgPool2dBackwardKernel>("avg_pool2d.backward", Device::cpu(), gy, avg_gx, p);
    }
    for_each_kernel("max_pool2d", [&](Device d, const std::string& name) {
      Tensor y = empty(gy.shape(), TensorOptions(DType::float32, d));
      CHECK(call_under_contract<Pool2dKernel>("max_pool2d", d, name, x.to(d), y, p).verdict == "");
      CHECK(compare(y, max_y, 0, 0) == "");
    });
    for_each_kernel("max_pool2d.backward", [&](Device d, const std::string& name) {
      Tensor gx = full(x.shape(), 123.0, TensorOptions(DType::float32, d));
      CHECK(call_under_contract<MaxPool2dBackwardKernel>("max_pool2d.backward", d, name, x.to(d), max_y.to(d), gy.to(d),
                                                         gx, p)
                .verdict == "");
      CHECK(compare(gx, max_gx, 1e-6, 1e-6) == "");
    });
    for_each_kernel("avg_pool2d", [&](Device d, const std::string& name) {
      Tensor y = empty(gy.shape(), TensorOptions(DType::float32, d));
      CHECK(call_under_contract<Pool2dKernel>("avg_pool2d", d, name, x.to(d), y, p).verdict == "");
      CHECK(compare(y, avg_y, 1e-5, 1e-6) == "");
    });
    for_each_kernel("avg_pool2d.backward", [&](Device d, const std::string& name) {
      Tensor gx = full(x.shape(), 123.0, TensorOptions(DType::float32, d));
      CHECK(call_under_contract<AvgPool2dBackwardKernel>("avg_pool2d.backward", d, name, gy.to(d), gx, p).verdict ==
            "");
      CHECK(compare(gx, avg_gx, 1e-5, 1e-6) == "");
    });
  }
}

TEST_CASE("max_pool2d backward: ties go to the first position, overlapping winners sum", "[pool]") {
  // 2x2 windows, stride 1, on a 3x3 image; windows (0,0), (0,1), (1,0) have max 5 with ties, (1,1) has 4.
  //   (0,0) {5,5,5,3} -> first 5 at (0,0)    (0,1) {5,1,3,1} -> (0,1)
  //   (1,0) {5,3,0,0} -> (1,0)               (1,1) {3,1,0,4} -> (2,2)
  const Tensor x_ties = from_vector({5, 5, 1, 5, 3, 1, 0, 0, 4}, {1, 1, 3, 3});
  // Every window holds the 9 in the middle, which wins all four.
  const Tensor x_shared = from_vector({1, 2, 1, 0, 9, 0, 1, 0, 1}, {1, 1, 3, 3});
  const Tensor g = from_vector({1, 2, 3, 4}, {1, 1, 2, 2});
  for_each_kernel("max_pool2d", [&](Device d, const std::string& name) {
    Tensor a = x_ties.to(d).clone().requires_grad_();
    Tensor y = max_pool2d(a, 2, 1);
    CHECK(y.to_vector<float>() == std::vector<float>{5, 5, 5, 4});
    y.backward(g.to(d));
    Tensor gx = empty(a.shape(), a.options());
    const Pool2dParams p = pool_params(2, 2, 1, 1, 0, 0);
    const std::string declined_as =
        contract_declines<MaxPool2dBackwardKernel>("max_pool2d.backward", d.type, name, a, y, g.to(d), gx, p);
    CHECK(contract_verdict("max_pool2d.backward", d.type, name, declined_as, describe_call(a, y, g, gx, p)) == "");
    CHECK(a.grad().to_vector<float>() == std::vector<float>{1, 2, 0, 3, 0, 0, 0, 0, 4});

    Tensor b = x_shared.to(d).clone().requires_grad_();
    max_pool2d(b, 2, 1).backward(g.to(d));
    CHECK(b.grad().to_vector<float>() == std::vector<float>{0, 0, 0, 0, 10, 0, 0, 0, 0});
  });
}

TEST_CASE("max_pool2d 2x2 stride 2: NaN, ties and odd sizes as the reference, on every kernel", "[pool]") {
  // Windows of a 5x7 plane (the last row and column in no window): {nan, 1, 2, 3} (a NaN first: y is NaN
  // and no gradient flows), {1, nan, 0, 0} (a later NaN is passed over: 1 at the first position wins),
  // {2, 2, 2, 2} (a tie: the first), then {0, 5, nan, 5}, {4, 4, 6, 6} and {-1, -2, -3, -0.5}.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = from_vector({nan, 1, 1, nan, 2, 2, 9,  //
                                2,   3, 0, 0,   2, 2, 9,  //
                                0,   5, 4, 4,   -1, -2, 9,  //
                                nan, 5, 6, 6,   -3, -0.5, 9,  //
                                9,   9, 9, 9,   9, 9, 9},
                               {1, 1, 5, 7}, DType::float32);
  const Tensor g = from_vector({1, 2, 3, 4, 5, 6}, {1, 1, 2, 3}, DType::float32);
  const Pool2dParams p = pool_params(2, 2, 2, 2, 0, 0);
  Tensor ref_y = empty({1, 1, 2, 3}), ref_gx = empty(x.shape());
  {
    SelectionReset reset;
    select_kernel("max_pool2d", DeviceType::cpu, "naive");
    dispatch<Pool2dKernel>("max_pool2d", Device::cpu(), x, ref_y, p);
    dispatch<MaxPool2dBackwardKernel>("max_pool2d.backward", Device::cpu(), x, ref_y, g, ref_gx, p);
  }
  // NaN equals NaN here: the rule says where a NaN goes, and a kernel must put it there.
  auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
    return true;
  };
  const std::vector<float> y_expected = {nan, 1, 2, 5, 6, -0.5f};
  CHECK(same(ref_y.to_vector<float>(), y_expected));
  CHECK(same(ref_gx.to_vector<float>(), {0, 0, 2, 0, 3, 0, 0,  //
                                         0, 0, 0, 0, 0, 0, 0,  //
                                         0, 4, 0, 0, 0, 0, 0,  //
                                         0, 0, 5, 0, 0, 6, 0,  //
                                         0, 0, 0, 0, 0, 0, 0}));
  for_each_kernel("max_pool2d", [&](Device d, const std::string& name) {
    Tensor y = full({1, 1, 2, 3}, 123.0, TensorOptions(DType::float32, d));
    Tensor gx = full(x.shape(), 123.0, TensorOptions(DType::float32, d));
    CHECK(call_under_contract<Pool2dKernel>("max_pool2d", d, name, x.to(d), y, p).verdict == "");
    CHECK(call_under_contract<MaxPool2dBackwardKernel>("max_pool2d.backward", d, name, x.to(d), y, g.to(d), gx, p)
              .verdict == "");
    const std::vector<float> got_y = y.to_vector<float>(), got_gx = gx.to_vector<float>();
    if (name == "cudnn") {
      // cuDNN never lets a NaN win (CUDNN_NOT_PROPAGATE_NAN, cuda/pool_cudnn.cu): windows 0, 1 and 3 hold one,
      // so only the others must match; the NaN windows are reported.
      const std::vector<float> want = ref_y.to_vector<float>();
      for (size_t k : {2u, 4u, 5u}) CHECK(got_y[k] == want[k]);
      if (!same(got_y, want) || !same(got_gx, ref_gx.to_vector<float>()))
        WARN("cudnn max_pool2d treats NaN differently from the reference: y = " << got_y[0] << ", " << got_y[1]
                                                                                << ", " << got_y[3]);
      return;
    }
    CHECK(same(got_y, ref_y.to_vector<float>()));
    CHECK(same(got_gx, ref_gx.to_vector<float>()));
  });
}

TEST_CASE("pooling with padding: max ignores it, avg counts it as zeros", "[pool]") {
  // 2x2 windows, stride 2, padding 1 on [[-1, -2], [-3, -4]]: each window holds one real element, and a
  // padding zero would win every max.
  const Tensor x = from_vector({-1, -2, -3, -4}, {1, 1, 2, 2});
  const Pool2dParams p = pool_params(2, 2, 2, 2, 1, 1);
  for_each_kernel("max_pool2d", [&](Device d, const std::string& name) {
    CHECK(max_pool2d(x.to(d), 2, 2, 1).to_vector<float>() == std::vector<float>{-1, -2, -3, -4});
    CHECK(pool_verdict("max_pool2d", d, name, x.to(d), p) == "");
  });
  for_each_kernel("avg_pool2d", [&](Device d, const std::string& name) {
    Tensor a = x.to(d).clone().requires_grad_();
    Tensor y = avg_pool2d(a, 2, 2, 1);
    CHECK(pool_verdict("avg_pool2d", d, name, a, p) == "");
    CHECK(y.to_vector<float>() == std::vector<float>{-0.25f, -0.5f, -0.75f, -1.0f});
    y.backward(from_vector({1, 2, 3, 4}, {1, 1, 2, 2}).to(d));
    CHECK(a.grad().to_vector<float>() == std::vector<float>{0.25f, 0.5f, 0.75f, 1.0f});
  });
}

TEST_CASE("pooling gradients (float64 finite differences, every CPU kernel)", "[pool][gradcheck]") {
  SelectionReset reset;
  auto leaf = [](const Shape& s) { return uniform(s, -1, 1).requires_grad_(); };
  const std::vector<Pool2dParams> settings = {pool_params(2, 2, 2, 2, 0, 0), pool_params(3, 3, 2, 2, 1, 1),
                                              pool_params(3, 2, 1, 2, 1, 0)};
  for (const std::string& op : {"max_pool2d", "avg_pool2d"})
    for (const std::string& name : kernels_for(op, DeviceType::cpu)) {
      select_kernel(op, DeviceType::cpu, name);
      for (const Pool2dParams& p : settings) {
        INFO(op << " kernel " << name << " window " << p.kernel_h << "x" << p.kernel_w << " stride " << p.stride_h
                << "x" << p.stride_w << " pad " << p.pad_h << "x" << p.pad_w);
        auto f = [op, p](const std::vector<Tensor>& in) {
          return op == "max_pool2d" ? max_pool2d(in[0], p) : avg_pool2d(in[0], p);
        };
        CHECK(gradcheck(f, {leaf({2, 2, 7, 6})}) == "");
        if (serves_stage(op + ".backward", DeviceType::cpu, name))  // not a forward-only kernel
          CHECK(served_or_declined(op + ".backward", DeviceType::cpu, name, /*may_decline=*/true));  // float64
      }
    }
}

TEST_CASE("pooling errors name the op and the shapes", "[pool][errors]") {
  CHECK_THROWS_WITH(max_pool2d(zeros({1, 1, 4, 4}), 3, 1, 2),
                    "max_pool2d: padding 2 along height must be between 0 and half the window (3)");
  CHECK_THROWS_WITH(avg_pool2d(zeros({1, 1, 2, 2}), 3),
                    "avg_pool2d: the window (3) is larger than the padded input along height (2) for input [1,1,2,2]");
  CHECK_THROWS_WITH(max_pool2d(zeros({4, 4}), 2), Catch::Contains("max_pool2d: expected a 4-D tensor [N, C, H, W]"));
  CHECK_THROWS_WITH(max_pool2d(zeros({1, 1, 4, 4}), 0), "max_pool2d: window 0 along height must be at least 1");
  CHECK_THROWS_WITH(avg_pool2d(zeros({1, 1, 4, 4}, DType::int64), 2),
                    Catch::Contains("avg_pool2d: needs a float32, float64 or bfloat16"));
}
