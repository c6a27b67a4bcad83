// tests/test_norm_dropout.cpp — batch_norm (training, running statistics, evaluation), the fused
// batch_norm_relu, and dropout: every kernel against the naive CPU reference, float64 gradchecks, values
// by hand, mask statistics, errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/philox.h"
#include "core/random.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

// f() computed with the naive CPU kernels of `op` (the reference); the selection is restored after.
template <class F>
auto naive_ref(const std::string& op, F f) {
  SelectionReset reset;
  select_kernel(op, DeviceType::cpu, "naive");
  return f();
}

// A fresh leaf copy of t on device d.
Tensor leaf_on(const Tensor& t, Device d) {
  Tensor x = t.to(d).clone().detach();
  x.requires_grad_();
  return x;
}

// Everything batch_norm produces for sum(y * w): output, gradients and the running statistics after.
struct BatchNormRun {
  Tensor y, grad_x, grad_gamma, grad_beta, running_mean, running_var;
};

BatchNormRun run_batch_norm(const Tensor& x_host, const Tensor& gamma_host, const Tensor& beta_host,
                            const Tensor& w_host, bool training, Device d,
                            const std::function<Tensor(const Tensor&)>& view) {
  Tensor x = leaf_on(x_host, d), gamma = leaf_on(gamma_host, d), beta = leaf_on(beta_host, d);
  const int64_t channels = gamma_host.numel();
  // Non-trivial running statistics, so evaluation mode differs from training.
  Tensor running_mean = mul_scalar(arange(channels, TensorOptions(x_host.dtype(), d)), 0.1);
  Tensor running_var = add_scalar(mul_scalar(arange(channels, TensorOptions(x_host.dtype(), d)), 0.2), 0.5);
  Tensor y = batch_norm(view(x), gamma, beta, running_mean, running_var, training, 0.1, 1e-5);
  sum(mul(y, w_host.to(d))).backward();
  return {y, x.grad(), gamma.grad(), beta.grad(), running_mean, running_var};
}

Tensor same(const Tensor& t) { return t; }

// A kernel's batch norm run against the reference's: sums of many terms in another order, so a tolerance,
// a million times smaller in float64 (a kernel that computed in float32 there would fail).
void check_close_runs(const BatchNormRun& got, const BatchNormRun& ref, DType dtype = DType::float32) {
  const double k = dtype == DType::float64 ? 1e-6 : 1;
  CHECK(compare(got.y, ref.y, 1e-4 * k, 1e-4 * k) == "");
  CHECK(compare(got.grad_x, ref.grad_x, 1e-3 * k, 1e-4 * k) == "");
  CHECK(compare(got.grad_gamma, ref.grad_gamma, 1e-4 * k, 1e-3 * k) == "");
  CHECK(compare(got.grad_beta, ref.grad_beta, 1e-4 * k, 1e-3 * k) == "");
  CHECK(compare(got.running_mean, ref.running_mean, 1e-5 * k, 1e-5 * k) == "");
  CHECK(compare(got.running_var, ref.running_var, 1e-4 * k, 1e-5 * k) == "");
}

}  // namespace

// ------------------------------------------------------------------------------------------ batch_norm

TEST_CASE("batch_norm kernels match the naive reference (training and evaluation)", "[norm]") {
  manual_seed(41);
  struct Input {
    std::string name;
    Shape base;
    std::function<Tensor(const Tensor&)> view;  // base -> [N, C, ...]
    double offset;                              // added to x: a large mean tests the precision of the statistics
  };
  const std::vector<Input> inputs = {
      {"[5,7,9,11]", {5, 7, 9, 11}, same, 0},
      {"[6,5]", {6, 5}, same, 0},
      {"[4,3,10]", {4, 3, 10}, same, 0},
      {"channels-last view [5,7,9,11]",
       {5, 9, 11, 7},
       [](const Tensor& t) {
         return t.permute({0, 3, 1, 2});
       },
       0},
      {"large [16,8,17,17]", {16, 8, 17, 17}, same, 0},
      {"mean 50, [8,3,5,5]", {8, 3, 5, 5}, same, 50},
  };
  for (const Input& in : inputs)
    for (bool training : {true, false}) {
      INFO("input " << in.name << ", training " << training);
      const Tensor x = add_scalar(uniform(in.base, -2, 2, DType::float32), in.offset);
      const Shape shape = in.view(x).shape();
      const Tensor gamma = uniform({shape[1]}, 0.5, 1.5, DType::float32);
      const Tensor beta = uniform({shape[1]}, -1, 1, DType::float32);
      const Tensor w = uniform(shape, -1, 1, DType::float32);
      const BatchNormRun ref =
          naive_ref("batch_norm", [&] { return run_batch_norm(x, gamma, beta, w, training, Device::cpu(), in.view); });
      for_each_kernel("batch_norm", [&](Device d, const std::string& name) {
        const BatchNormRun got = run_batch_norm(x, gamma, beta, w, training, d, in.view);
        CHECK(last_kernel(training ? "batch_norm" : "batch_norm.inference", d.type) == name);
        check_close_runs(got, ref);
        if (training) CHECK(last_kernel("batch_norm.backward", d.type) == name);
      });
    }
}

TEST_CASE("batch_norm training: output and running statistics by hand", "[norm]") {
  // Channel 0 holds 1, 2, 3, 4 (mean 2.5, biased var 1.25, unbiased 5/3); channel 1 holds 2, 4, 6, 8
  // (mean 5, biased var 5, unbiased 20/3).
  const Tensor x = from_vector({1, 2, 2, 4, 3, 6, 4, 8}, {4, 2});
  const double eps = 1e-5;
  for_each_kernel("batch_norm", [&](Device d, const std::string& name) {
    Tensor running_mean = zeros({2}, d), running_var = ones({2}, d);
    const Tensor gamma = from_vector({2, 1}, {2}).to(d), beta = from_vector({0.5, -1}, {2}).to(d);
    const Tensor y = batch_norm(x.to(d), gamma, beta, running_mean, running_var, true, 0.1, eps);
    CHECK(last_kernel("batch_norm", d.type) == name);
    const std::vector<float> yv = y.to_vector<float>();
    CHECK(yv[0] == Approx((1 - 2.5) / std::sqrt(1.25 + eps) * 2 + 0.5));
    CHECK(yv[7] == Approx((8 - 5) / std::sqrt(5 + eps) * 1 - 1));
    // running = 0.9 * running + 0.1 * batch statistic (unbiased variance)
    std::vector<float> rm = running_mean.to_vector<float>(), rv = running_var.to_vector<float>();
    CHECK(rm[0] == Approx(0.25));
    CHECK(rm[1] == Approx(0.5));
    CHECK(rv[0] == Approx(0.9 + 0.1 * 5.0 / 3.0));
    CHECK(rv[1] == Approx(0.9 + 0.1 * 20.0 / 3.0));
    // A second step accumulates.
    batch_norm(x.to(d), gamma, beta, running_mean, running_var, true, 0.1, eps);
    rm = running_mean.to_vector<float>();
    rv = running_var.to_vector<float>();
    CHECK(rm[0] == Approx(0.9 * 0.25 + 0.1 * 2.5));
    CHECK(rm[1] == Approx(0.9 * 0.5 + 0.1 * 5.0));
    CHECK(rv[0] == Approx(0.9 * (0.9 + 0.1 * 5.0 / 3.0) + 0.1 * 5.0 / 3.0));
    CHECK(rv[1] == Approx(0.9 * (0.9 + 0.1 * 20.0 / 3.0) + 0.1 * 20.0 / 3.0));
  });

  // [N, C, H, W]: the statistics run over N*H*W values per channel (M = 4 here, not N = 2).
  const Tensor image = from_vector({1, 2, 3, 4}, {2, 1, 2, 1});
  Tensor running_mean = zeros({1}), running_var = ones({1});
  const Tensor y = batch_norm(image, Tensor(), Tensor(), running_mean, running_var, true, 0.5);
  CHECK(y.shape() == Shape{2, 1, 2, 1});
  CHECK(y.to_vector<float>()[3] == Approx(1.5 / std::sqrt(1.25 + 1e-5)));
  CHECK(running_mean.item<float>() == Approx(1.25));
  CHECK(running_var.item<float>() == Approx(0.5 + 0.5 * 5.0 / 3.0));
  // The running statistics are buffers: updating them records no graph.
  CHECK_FALSE(running_mean.requires_grad());
  CHECK(running_mean.is_leaf());
}

// The running statistics' kernel on every device (key "batch_norm.running_stats"), alone: values by
// hand in float64, a missing running tensor left alone, and through the op, a strided running tensor
// (every other element of a buffer) updated where it lies and nowhere else.
TEST_CASE("batch_norm.running_stats: values by hand, one tensor missing, a strided running tensor", "[norm]") {
  const double momentum = 0.25, eps = 0.01;
  const int64_t count = 5;
  for_each_kernel("batch_norm.running_stats", [&](Device d, const std::string& name) {
    // invstd 2 and 0.5: biased variances 1/4 - eps and 4 - eps.
    const Tensor save_mean = from_vector({1.0, -3.0}, {2}).to(DType::float64).to(d);
    const Tensor save_invstd = from_vector({2.0, 0.5}, {2}).to(DType::float64).to(d);
    Tensor running_mean = from_vector({0.5, 2.0}, {2}).to(DType::float64).to(d);
    Tensor running_var = from_vector({1.0, 3.0}, {2}).to(DType::float64).to(d);
    dispatch(keys::batch_norm_running_stats, d, save_mean, save_invstd, momentum, eps, count, running_mean,
             running_var);
    CHECK(last_kernel("batch_norm.running_stats", d.type) == name);
    const std::vector<double> rm = running_mean.to_vector<double>(), rv = running_var.to_vector<double>();
    CHECK(rm[0] == Approx(0.75 * 0.5 + 0.25 * 1.0).epsilon(1e-12));
    CHECK(rm[1] == Approx(0.75 * 2.0 + 0.25 * -3.0).epsilon(1e-12));
    CHECK(rv[0] == Approx(0.75 * 1.0 + 0.25 * (0.25 - eps) * 5.0 / 4.0).epsilon(1e-12));
    CHECK(rv[1] == Approx(0.75 * 3.0 + 0.25 * (4.0 - eps) * 5.0 / 4.0).epsilon(1e-12));

    // Only the mean: the variance is not there to update; the mean moves as before.
    Tensor only_mean = from_vector({0.5, 2.0}, {2}).to(DType::float64).to(d), no_var;
    dispatch(keys::batch_norm_running_stats, d, save_mean, save_invstd, momentum, eps, count, only_mean, no_var);
    CHECK(only_mean.to_vector<double>() == rm);
    // Only the variance.
    Tensor no_mean, only_var = from_vector({1.0, 3.0}, {2}).to(DType::float64).to(d);
    dispatch(keys::batch_norm_running_stats, d, save_mean, save_invstd, momentum, eps, count, no_mean, only_var);
    CHECK(only_var.to_vector<double>() == rv);
  });

  // Through batch_norm: running tensors that are every other element of a buffer (not contiguous).
  const Tensor x = from_vector({1, 2, 2, 4, 3, 6, 4, 8}, {4, 2});  // channel means 2.5, 5; unbiased vars 5/3, 20/3
  for (Device d : test_devices()) {
    INFO("device " << d.str());
    const Tensor mean_buffer = from_vector({0, 7, 0, 7}, {4}).to(d), var_buffer = from_vector({1, 7, 1, 7}, {4}).to(d);
    const Tensor running_mean = mean_buffer.slice(0, 0, 4, 2), running_var = var_buffer.slice(0, 0, 4, 2);
    REQUIRE_FALSE(running_mean.is_contiguous());
    batch_norm(x.to(d), Tensor(), Tensor(), running_mean, running_var, true, 0.1, 1e-5);
    const std::vector<float> m = mean_buffer.to_vector<float>(), v = var_buffer.to_vector<float>();
    CHECK(m[0] == Approx(0.25));
    CHECK(m[2] == Approx(0.5));
    CHECK(v[0] == Approx(0.9 + 0.1 * 5.0 / 3.0));
    CHECK(v[2] == Approx(0.9 + 0.1 * 20.0 / 3.0));
    CHECK(m[1] == 7);  // the elements between them are untouched
    CHECK(m[3] == 7);
    CHECK(v[1] == 7);
    CHECK(v[3] == 7);
  }
}

TEST_CASE("batch_norm evaluation uses the running statistics and leaves them alone", "[norm]") {
  const Tensor x = from_vector({0, 1, 2, 3, 4, 5}, {3, 2});
  for_each_kernel("batch_norm", [&](Device d, const std::string& name) {
    const Tensor running_mean = from_vector({1, -1}, {2}).to(d), running_var = from_vector({4, 0.25}, {2}).to(d);
    const Tensor gamma = from_vector({2, 3}, {2}).to(d), beta = from_vector({0.5, -0.5}, {2}).to(d);
    const Tensor y = batch_norm(x.to(d), gamma, beta, running_mean, running_var, false, 0.1, 0.0);
    CHECK(last_kernel("batch_norm.inference", d.type) == name);
    // y = (x - mean) / sqrt(var) * gamma + beta, per column
    CHECK(compare(y, from_vector({-0.5, 11.5, 1.5, 23.5, 3.5, 35.5}, {3, 2}), 1e-6, 1e-6) == "");
    CHECK(running_mean.to_vector<float>() == std::vector<float>{1, -1});
    CHECK(running_var.to_vector<float>() == std::vector<float>{4, 0.25f});
  });
}

TEST_CASE("gradcheck: batch_norm and batch_norm_relu, training (2-D, 3-D, 4-D, gamma and beta) and evaluation",
          "[norm][gradcheck]") {
  using BatchNormFn = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool,
                                 double, double);
  manual_seed(42);
  for (const BatchNormFn op : {&batch_norm, &batch_norm_relu}) {
    INFO((op == &batch_norm ? "batch_norm" : "batch_norm_relu"));
    for (const Shape& shape : std::vector<Shape>{{6, 4}, {4, 3, 5}, {3, 2, 3, 2}}) {
      INFO("shape " << shape_str(shape));
      Tensor x = uniform(shape, -2, 2), gamma = uniform({shape[1]}, 0.5, 1.5), beta = uniform({shape[1]}, -1, 1);
      x.requires_grad_();
      gamma.requires_grad_();
      beta.requires_grad_();
      // Training: running statistics are optional and do not affect the output.
      CHECK(gradcheck(
                [op](const std::vector<Tensor>& in) {
                  return op(in[0], in[1], in[2], Tensor(), Tensor(), true, 0.1, 1e-5);
                },
                {x, gamma, beta}) == "");
      // Without the affine part.
      CHECK(gradcheck(
                [op](const std::vector<Tensor>& in) {
                  return op(in[0], Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5);
                },
                {x}) == "");
      // Evaluation: constant statistics.
      const Tensor running_mean = uniform({shape[1]}, -1, 1), running_var = uniform({shape[1]}, 0.5, 2);
      CHECK(gradcheck(
                [&](const std::vector<Tensor>& in) {
                  return op(in[0], in[1], in[2], running_mean, running_var, false, 0.1, 1e-5);
                },
                {x, gamma, beta}) == "");
    }
  }
}

TEST_CASE("batch_norm reports bad arguments", "[norm][errors]") {
  const Tensor x = zeros({4, 3}), c3 = ones({3});
  CHECK_THROWS_WITH(batch_norm(x, ones({4}), c3, c3, c3, true),
                    Catch::Contains("gamma must have shape [3]") && Catch::Contains("[4,3]"));
  CHECK_THROWS_WITH(batch_norm(x, c3, c3, ones({3}, DType::float64), c3, true),
                    Catch::Contains("running_mean is float64"));
  CHECK_THROWS_WITH(batch_norm(x, c3, c3, Tensor(), Tensor(), false), Catch::Contains("needs running_mean"));
  CHECK_THROWS_WITH(batch_norm(zeros({1, 3}), c3, c3, c3, c3, true),
                    Catch::Contains("more than one value per channel"));
  CHECK_THROWS_WITH(batch_norm(zeros({2, 3, 1, 1, 1}), c3, c3, c3, c3, true), Catch::Contains("[2,3,1,1,1]"));
  CHECK_THROWS_WITH(batch_norm(zeros({4}), Tensor(), Tensor(), Tensor(), Tensor(), true), Catch::Contains("[N, C]"));
}

// ------------------------------------------------------------------------------------------ batch_norm_relu

namespace {

// What batch_norm_relu (fused: true) or relu(batch_norm(...)) (fused: false) produces for sum(y * w).
BatchNormRun run_batch_norm_relu(const Tensor& x_host, const Tensor& gamma_host, const Tensor& beta_host,
                                 const Tensor& w_host, bool training, Device d, bool fused) {
  Tensor x = leaf_on(x_host, d), gamma = leaf_on(gamma_host, d), beta = leaf_on(beta_host, d);
  const int64_t channels = gamma_host.numel();
  Tensor running_mean = mul_scalar(arange(channels, TensorOptions(x_host.dtype(), d)), 0.1);
  Tensor running_var = add_scalar(mul_scalar(arange(channels, TensorOptions(x_host.dtype(), d)), 0.2), 0.5);
  Tensor y = fused ? batch_norm_relu(x, gamma, beta, running_mean, running_var, training, 0.1, 1e-5)
                   : relu(batch_norm(x, gamma, beta, running_mean, running_var, training, 0.1, 1e-5));
  sum(mul(y, w_host.to(d))).backward();
  return {y, x.grad(), gamma.grad(), beta.grad(), running_mean, running_var};
}

}  // namespace

// Every kernel on every device (the CPU's and, with a GPU, cuda/batchnorm_*.cu's), float32 and float64.
TEST_CASE("batch_norm_relu kernels match the naive reference, and relu(batch_norm) everywhere", "[norm]") {
  manual_seed(43);
  const std::vector<Shape> shapes{{5, 7, 9, 11}, {6, 5}, {4, 3, 10}, {16, 8, 17, 17}};
  for (const DType dtype : {DType::float32, DType::float64}) {
    for (const Shape& shape : shapes) {
      INFO(dtype_name(dtype) << " shape " << shape_str(shape));
      const Tensor x = uniform(shape, -2, 2, dtype);
      const Tensor gamma = uniform({shape[1]}, 0.5, 1.5, dtype);
      // Betas of both signs move the share of values the ReLU zeroes away from one half.
      const Tensor beta = uniform({shape[1]}, -1, 1, dtype);
      const Tensor w = uniform(shape, -1, 1, dtype);
      const BatchNormRun ref = naive_ref("batch_norm_relu", [&] {
        return run_batch_norm_relu(x, gamma, beta, w, true, Device::cpu(), true);
      });
      for_each_kernel("batch_norm_relu", [&](Device d, const std::string& name) {
        const BatchNormRun got = run_batch_norm_relu(x, gamma, beta, w, true, d, true);
        CHECK(last_kernel("batch_norm_relu", d.type) == name);
        CHECK(last_kernel("batch_norm_relu.backward", d.type) == name);
        check_close_runs(got, ref, dtype);
      });
      // The fused op against the two ops it replaces, with the default kernels, training and evaluation.
      for (const Device d : test_devices()) {
        for (bool training : {true, false}) {
          INFO("device " << d.str() << ", training " << training);
          const BatchNormRun fused = run_batch_norm_relu(x, gamma, beta, w, training, d, true);
          const BatchNormRun composed = run_batch_norm_relu(x, gamma, beta, w, training, d, false);
          CHECK(compare(fused.y, composed.y, 1e-5, 1e-5) == "");
          CHECK(compare(fused.grad_x, composed.grad_x, 1e-3, 1e-4) == "");
          CHECK(compare(fused.grad_gamma, composed.grad_gamma, 1e-4, 1e-3) == "");
          CHECK(compare(fused.grad_beta, composed.grad_beta, 1e-4, 1e-3) == "");
          CHECK(compare(fused.running_mean, composed.running_mean, 0, 0) == "");
          CHECK(compare(fused.running_var, composed.running_var, 0, 0) == "");
        }
      }
    }
  }
}

TEST_CASE("batch_norm_relu reports the errors of batch_norm", "[norm][errors]") {
  CHECK_THROWS_WITH(batch_norm_relu(zeros({4, 3}), ones({4}), Tensor(), Tensor(), Tensor(), true),
                    Catch::Contains("gamma must have shape [3]"));
  CHECK_THROWS_WITH(batch_norm_relu(zeros({4, 3}), Tensor(), Tensor(), Tensor(), Tensor(), false),
                    Catch::Contains("needs running_mean"));
}

// ------------------------------------------------------------------------------------------ dropout

TEST_CASE("dropout mask kernels: the Philox formula, statistics, and bit-identical masks", "[dropout]") {
  const double p = 0.3;
  const float keep = static_cast<float>(1.0 / (1.0 - p));
  const Tensor x = ones({200, 501});
  // The formula of ops/kernel_signatures.h, written here from core/philox.h: after manual_seed(s) the
  // stream starts at offset 0, so element i uses counter i.
  manual_seed(1234);
  std::vector<float> expected(x.numel());
  for (int64_t i = 0; i < x.numel(); ++i) expected[i] = static_cast<double>(philox_uniform(1234, i)) >= p ? keep : 0.0f;

  for_each_kernel("dropout_mask", [&](Device d, const std::string& name) {
    manual_seed(1234);
    const std::vector<float> y = dropout(x.to(d), p, true).to_vector<float>();
    CHECK(last_kernel("dropout_mask", d.type) == name);
    CHECK(y == expected);
    int64_t kept = 0;
    bool values_ok = true;
    for (float v : y) {
      kept += v != 0;
      values_ok = values_ok && (v == 0.0f || v == keep);
    }
    CHECK(values_ok);
    // 100200 Bernoulli(0.7) draws: standard deviation of the fraction 0.0014.
    CHECK(static_cast<double>(kept) / y.size() == Approx(1 - p).margin(0.01));
  });
}

TEST_CASE("dropout mask kernels: an offset shift tensor moves the counters by its value", "[dropout]") {
  // What a replayed CUDA graph relies on (core/capture.h): offset o with shift s draws the mask of o + s.
  for_each_kernel("dropout_mask", [&](Device d, const std::string& name) {
    const Tensor shift = from_vector({1000.0}, {1}, TensorOptions(DType::int64, d));
    Tensor shifted = empty({777}, TensorOptions(DType::float32, d));
    Tensor moved = empty({777}, TensorOptions(DType::float32, d));
    dispatch<DropoutMaskKernel>("dropout_mask", d, shifted, 0.4, 21, 5, shift);
    CHECK(last_kernel("dropout_mask", d.type) == name);
    dispatch<DropoutMaskKernel>("dropout_mask", d, moved, 0.4, 21, 1005, Tensor());
    CHECK(shifted.to_vector<float>() == moved.to_vector<float>());
    dispatch<DropoutMaskKernel>("dropout_mask", d, moved, 0.4, 21, 5, Tensor());
    CHECK(shifted.to_vector<float>() != moved.to_vector<float>());
  });
}

TEST_CASE("dropout: reproducible per seed, fresh per call, identity when not training", "[dropout]") {
  const Tensor x = uniform({37, 29}, 1, 2, DType::float32);
  manual_seed(5);
  const std::vector<float> a = dropout(x, 0.5, true).to_vector<float>();
  const std::vector<float> b = dropout(x, 0.5, true).to_vector<float>();
  manual_seed(5);
  const std::vector<float> a_again = dropout(x, 0.5, true).to_vector<float>();
  CHECK(a == a_again);
  CHECK(a != b);
  // Kept elements are scaled by 1/(1-p) = 2.
  const std::vector<float> xv = x.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) CHECK((a[i] == 0.0f || a[i] == 2 * xv[i]));

  // Evaluation and p = 0 return the input; p = 1 drops everything.
  CHECK(dropout(x, 0.5, false).shares_storage_with(x));
  CHECK(dropout(x, 0.0, true).to_vector<float>() == xv);
  for (float v : dropout(x, 1.0, true).to_vector<float>()) CHECK(v == 0.0f);
  CHECK_THROWS_WITH(dropout(x, 1.5, true), Catch::Contains("dropout: probability p must be in [0, 1], got 1.5"));
  CHECK_THROWS_WITH(dropout(x, -0.1, true), Catch::Contains("dropout"));
}

TEST_CASE("dropout: the gradient is the mask", "[dropout][gradcheck]") {
  Tensor x = uniform({6, 7}, -1, 1);
  x.requires_grad_();
  // The same seed in every evaluation, so the finite differences see one fixed mask.
  CHECK(gradcheck(
            [](const std::vector<Tensor>& in) {
              manual_seed(9);
              return dropout(in[0], 0.4, true);
            },
            {x}) == "");
  x.zero_grad();
  manual_seed(9);
  const Tensor y = dropout(x, 0.4, true);
  sum(y).backward();
  const std::vector<double> g = x.grad().to_vector<double>(), yv = y.to_vector<double>();
  const std::vector<double> xv = x.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] * xv[i] == Approx(yv[i]));
  // p = 1: zero output, zero gradient.
  x.zero_grad();
  sum(dropout(x, 1.0, true)).backward();
  for (double v : x.grad().to_vector<double>()) CHECK(v == 0.0);
}
