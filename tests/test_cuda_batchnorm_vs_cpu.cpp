// tests/test_cuda_batchnorm_vs_cpu.cpp — the CUDA batch_norm and batch_norm_relu kernels
// (cuda/batchnorm_*.cu) against the naive CPU reference: kernel by kernel through the dispatch table
// (training, inference and backward, float32 and float64, rows and [N, C, S] planes, |mean| >> std), then
// GPU against CPU through the op with autograd (outputs, every input gradient, the running statistics).
//
// All cases are tagged [cuda]. Without a usable GPU, `minidl_tests "[cuda]"` exits 77 (ctest: skipped)
// and an untagged run returns from each case after a warning. Tolerances: tests/cuda_vs_cpu.h.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/dispatch.h"
#include "core/random.h"
#include "ops/ops.h"
#include "tests/cuda_vs_cpu.h"
#include "tests/skips.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

// Batch-norm inputs as the kernels see them: [N, C, S] (S = 1 for [N, C], H*W for images). {4100, 70, 1}:
// rows (a channels-last [N, C, H, W] is seen as [N*H*W, C, 1]) in many chunks and a partial channel tile.
// The last two are long enough for the split kernels' step 1 to load several values per thread at once
// and still leave a remainder (cuda/batchnorm_v2_split.cu, kLoadsInFlight): rows and [N, C, S].
// Float32 rows with C % 4 == 0 go four channels a load (v2_split's quads): {3, 4, 1} one quad, {4100, 72, 1}
// 18 quads on 14 row lanes (a block's last threads idle), {50001, 32, 1} long with a remainder, {9, 1032, 1}
// 258 quads, one more than a block's 256 (two tiles on the grid's y axis).
const std::vector<Shape> kBatchNormShapes = {{7, 33, 1},     {3, 2, 1},       {4100, 70, 1},  {4, 3, 35},
                                             {2, 40, 129},   {8, 64, 1025},   {50001, 33, 1}, {40, 2, 33001},
                                             {3, 4, 1},      {4100, 72, 1},   {50001, 32, 1}, {9, 1032, 1}};

}  // namespace

TEST_CASE("cuda batch_norm kernels match the naive CPU kernels (training, inference, backward)",
          "[cuda][batch_norm]") {
  if (!have_gpu()) return;
  manual_seed(6);
  const double eps = 1e-5;
  for (const Shape& s : kBatchNormShapes) {
    INFO("x [N, C, S] = " << shape_str(s));
    const Shape cs{s[1]};
    const int64_t m = s[0] * s[2];
    const Tensor x = random_f32(s, -2, 3), gamma = random_f32(cs, 0.5, 1.5), beta = random_f32(cs);
    const Tensor gy = random_f32(s), run_mean = random_f32(cs), run_var = random_f32(cs, 0.5, 2);
    Tensor y_ref = empty(s), mean_ref = empty(cs), invstd_ref = empty(cs), yi_ref = empty(s);
    Tensor gx_ref = empty(s), gg_ref = empty(cs), gb_ref = empty(cs);
    with_cpu_naive("batch_norm", [&] {
      dispatch<BatchNormKernel>("batch_norm", Device::cpu(), x, gamma, beta, eps, y_ref, mean_ref, invstd_ref);
      dispatch<BatchNormInferenceKernel>("batch_norm.inference", Device::cpu(), x, gamma, beta, run_mean, run_var,
                                         eps, yi_ref);
      dispatch<BatchNormBackwardKernel>("batch_norm.backward", Device::cpu(), x, gy, gamma, mean_ref, invstd_ref,
                                        gx_ref, gg_ref, gb_ref);
    });

    for_each_kernel("batch_norm", [&](Device d, const std::string& name) {
      if (d.is_cpu()) return;
      const Tensor xd = x.to(d), gd = gamma.to(d), bd = beta.to(d);
      Tensor y = empty_on(s, d), mean = empty_on(cs, d), invstd = empty_on(cs, d);
      dispatch<BatchNormKernel>("batch_norm", d, xd, gd, bd, eps, y, mean, invstd);
      CHECK(last_kernel("batch_norm", d.type) == name);
      CHECK(compare(y, y_ref, kRtol, 1e-4) == "");
      CHECK(compare(mean, mean_ref, kRtol, 1e-5) == "");
      CHECK(compare(invstd, invstd_ref, kRtol, 1e-5) == "");
    });
    for_each_kernel("batch_norm.inference", [&](Device d, const std::string& name) {
      if (d.is_cpu()) return;
      const Tensor xd = x.to(d), gd = gamma.to(d), bd = beta.to(d), md = run_mean.to(d), vd = run_var.to(d);
      Tensor y = empty_on(s, d);
      dispatch<BatchNormInferenceKernel>("batch_norm.inference", d, xd, gd, bd, md, vd, eps, y);
      CHECK(last_kernel("batch_norm.inference", d.type) == name);
      CHECK(compare(y, yi_ref, kRtol, 1e-4) == "");
    });
    for_each_kernel("batch_norm.backward", [&](Device d, const std::string& name) {
      if (d.is_cpu()) return;
      const Tensor xd = x.to(d), gyd = gy.to(d), gd = gamma.to(d), md = mean_ref.to(d), id = invstd_ref.to(d);
      Tensor gx = empty_on(s, d), gg = empty_on(cs, d), gb = empty_on(cs, d);
      dispatch<BatchNormBackwardKernel>("batch_norm.backward", d, xd, gyd, gd, md, id, gx, gg, gb);
      CHECK(last_kernel("batch_norm.backward", d.type) == name);
      CHECK(compare(gx, gx_ref, kRtol, atol_for(8)) == "");
      CHECK(compare(gg, gg_ref, kRtol, atol_for(m)) == "");
      CHECK(compare(gb, gb_ref, kRtol, atol_for(m)) == "");
    });
    // The running statistics from this forward's save_mean and save_invstd.
    Tensor rm_ref = run_mean.clone(), rv_ref = run_var.clone();
    with_cpu_naive("batch_norm.running_stats", [&] {
      dispatch<BatchNormRunningStatsKernel>("batch_norm.running_stats", Device::cpu(), mean_ref, invstd_ref, 0.1, eps,
                                            m, rm_ref, rv_ref);
    });
    for_each_kernel("batch_norm.running_stats", [&](Device d, const std::string& name) {
      if (d.is_cpu()) return;
      Tensor rm = run_mean.to(d).clone(), rv = run_var.to(d).clone();
      dispatch<BatchNormRunningStatsKernel>("batch_norm.running_stats", d, mean_ref.to(d), invstd_ref.to(d), 0.1, eps,
                                            m, rm, rv);
      CHECK(last_kernel("batch_norm.running_stats", d.type) == name);
      CHECK(compare(rm, rm_ref, 1e-6, 1e-7) == "");
      CHECK(compare(rv, rv_ref, 1e-6, 1e-7) == "");
    });
  }
}

// The fused batch norm + ReLU: the same kernels with the ReLU (cuda/batchnorm_v1_two_pass.cu,
// cuda/batchnorm_v2_split.cu), in both dtypes. The backward is given the reference's own output y, so the
// mask is the same on both sides.
TEST_CASE("cuda batch_norm_relu kernels match the naive CPU kernels (forward and backward, float32 and float64)",
          "[cuda][batch_norm]") {
  if (!have_gpu()) return;
  manual_seed(11);
  const double eps = 1e-5;
  for (const DType dtype : {DType::float32, DType::float64})
    for (const Shape& s : kBatchNormShapes) {
      INFO(dtype_name(dtype) << " x [N, C, S] = " << shape_str(s));
      const Shape cs{s[1]};
      const int64_t m = s[0] * s[2];
      const Tensor x = uniform(s, -2, 3, dtype), gamma = uniform(cs, 0.5, 1.5, dtype), beta = uniform(cs, -1, 1, dtype);
      const Tensor gy = uniform(s, -1, 1, dtype);
      Tensor y_ref = empty(s, dtype), mean_ref = empty(cs, dtype), invstd_ref = empty(cs, dtype);
      Tensor gx_ref = empty(s, dtype), gg_ref = empty(cs, dtype), gb_ref = empty(cs, dtype);
      with_cpu_naive("batch_norm_relu", [&] {
        dispatch<BatchNormKernel>("batch_norm_relu", Device::cpu(), x, gamma, beta, eps, y_ref, mean_ref, invstd_ref);
        dispatch<BatchNormReluBackwardKernel>("batch_norm_relu.backward", Device::cpu(), x, y_ref, gy, gamma,
                                              mean_ref, invstd_ref, gx_ref, gg_ref, gb_ref);
      });
      // float64: the float32 bounds a million times smaller (a kernel computing in float32 would fail them).
      const double k = dtype == DType::float64 ? 1e-6 : 1;
      for_each_kernel("batch_norm_relu", [&](Device d, const std::string& name) {
        if (d.is_cpu()) return;
        const TensorOptions on_d(dtype, d);
        Tensor y = empty(s, on_d), mean = empty(cs, on_d), invstd = empty(cs, on_d);
        dispatch<BatchNormKernel>("batch_norm_relu", d, x.to(d), gamma.to(d), beta.to(d), eps, y, mean, invstd);
        CHECK(last_kernel("batch_norm_relu", d.type) == name);
        CHECK(compare(y, y_ref, kRtol * k, 1e-4 * k) == "");
        CHECK(compare(mean, mean_ref, kRtol * k, 1e-5 * k) == "");
        CHECK(compare(invstd, invstd_ref, kRtol * k, 1e-5 * k) == "");
        Tensor gx = empty(s, on_d), gg = empty(cs, on_d), gb = empty(cs, on_d);
        dispatch<BatchNormReluBackwardKernel>("batch_norm_relu.backward", d, x.to(d), y_ref.to(d), gy.to(d),
                                              gamma.to(d), mean_ref.to(d), invstd_ref.to(d), gx, gg, gb);
        CHECK(last_kernel("batch_norm_relu.backward", d.type) == name);
        CHECK(compare(gx, gx_ref, kRtol * k, atol_for(8) * k) == "");
        CHECK(compare(gg, gg_ref, kRtol * k, atol_for(m) * k) == "");
        CHECK(compare(gb, gb_ref, kRtol * k, atol_for(m) * k) == "");
      });
    }
}

// The statistics of a channel whose mean is far from zero: a one-pass variance (E[x^2] - E[x]^2) loses
// it to cancellation unless it is shifted (v2_split) or computed in two passes (v1_two_pass).
TEST_CASE("cuda batch_norm statistics stay accurate when |mean| >> std", "[cuda][batch_norm]") {
  if (!have_gpu()) return;
  manual_seed(7);
  // [N, C, S] planes, and float32 rows of 8 channels (v2_split's quads).
  for (const Shape& s : {Shape{16, 3, 3000}, Shape{5000, 8, 1}}) {
    INFO("x [N, C, S] = " << shape_str(s));
    const Shape cs{s[1]};
    const Tensor x = random_f32(s, 999, 1001), gamma = random_f32(cs, 0.5, 1.5), beta = random_f32(cs);
    Tensor y_ref = empty(s), mean_ref = empty(cs), invstd_ref = empty(cs);
    with_cpu_naive("batch_norm", [&] {
      dispatch<BatchNormKernel>("batch_norm", Device::cpu(), x, gamma, beta, 1e-5, y_ref, mean_ref, invstd_ref);
    });
    for_each_kernel("batch_norm", [&](Device d, const std::string& name) {
      if (d.is_cpu()) return;
      Tensor y = empty_on(s, d), mean = empty_on(cs, d), invstd = empty_on(cs, d);
      dispatch<BatchNormKernel>("batch_norm", d, x.to(d), gamma.to(d), beta.to(d), 1e-5, y, mean, invstd);
      CHECK(last_kernel("batch_norm", d.type) == name);
      // x itself is float32 (steps of 6e-5 near 1000) and so is the saved mean: y is good to about 1e-3.
      CHECK(compare(invstd, invstd_ref, 1e-4, 0) == "");
      CHECK(compare(y, y_ref, 0, 2e-3) == "");
    });
  }
}

TEST_CASE("cuda batch_norm in training: outputs, gradients and running statistics match the CPU",
          "[cuda][batch_norm][autograd]") {
  if (!have_gpu()) return;
  manual_seed(10);
  for (const Shape& xs : {Shape{16, 5}, Shape{4, 3, 7, 6}}) {
    INFO("x " << shape_str(xs));
    const Shape cs{xs[1]};
    const Tensor mean0 = random_f32(cs), var0 = random_f32(cs, 0.5, 2);
    // Running statistics live on the device of the call; f picks the pair for its inputs' device.
    Tensor cpu_mean = mean0.clone(), cpu_var = var0.clone();
    Tensor gpu_mean, gpu_var;
    const OpFn f = [&](const std::vector<Tensor>& t) {
      const bool on_cpu = t[0].device().is_cpu();
      return batch_norm(t[0], t[1], t[2], on_cpu ? cpu_mean : gpu_mean, on_cpu ? cpu_var : gpu_var,
                        /*training=*/true, 0.1, 1e-5);
    };
    const std::vector<Tensor> inputs = {random_f32(xs, -2, 3), random_f32(cs, 0.5, 1.5), random_f32(cs)};
    const int64_t m = xs[0] * (xs.size() == 4 ? xs[2] * xs[3] : 1);
    const Tensor weight = random_f32(xs, 0.5, 1.5);
    GradRun ref;
    with_cpu_naive("batch_norm", [&] { ref = run_with_grad(f, inputs, weight, Device::cpu()); });
    for_each_kernel("batch_norm", [&](Device d, const std::string& name) {
      if (d.is_cpu()) return;
      gpu_mean = mean0.to(d);
      gpu_var = var0.to(d);
      const GradRun got = run_with_grad(f, inputs, weight, d);
      CHECK(last_kernel("batch_norm", d.type) == name);
      CHECK(last_kernel("batch_norm.backward", d.type) == name);
      CHECK(compare(got.out, ref.out, kRtol, 1e-4) == "");
      CHECK(compare(got.grads[0], ref.grads[0], kRtol, atol_for(8)) == "");
      CHECK(compare(got.grads[1], ref.grads[1], kRtol, atol_for(m)) == "");
      CHECK(compare(got.grads[2], ref.grads[2], kRtol, atol_for(m)) == "");
      CHECK(compare(gpu_mean, cpu_mean, kRtol, 1e-5) == "");
      CHECK(compare(gpu_var, cpu_var, kRtol, 1e-5) == "");
    });
  }
}
