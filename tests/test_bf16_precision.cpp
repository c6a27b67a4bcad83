// tests/test_bf16_precision.cpp — `--precision bf16` on a GPU ([cuda], skipped without one): cuBLAS's
// matmul, cuDNN's convolutions and cuDNN's GRU and LSTM multiply bfloat16 copies of their float32 operands
// and return float32 (core/precision.h). Each is checked two ways against the CPU's naive kernels in
// float64:
//   - run on the operands rounded to bfloat16 first, the reference agrees with the GPU to float32
//     accumulation (matmul), or to one bfloat16 rounding of each output (cuDNN's convolutions write
//     bfloat16), or to a few of them (the RNN's states are bfloat16 from step to step);
//   - run on the unrounded operands, the reference differs from the GPU by far more than float32 rounding,
//     which shows BF16 products really ran (a kernel that silently computed float32 would fail here).
// Those cases run with deterministic algorithms, where cuBLAS and cuDNN always take their bf16 paths; by
// default each shape takes the faster of its bf16 and tf32 paths (cuda/bf16_choice.h), tested on its own.
// Then the MNIST CNN trains under bf16 like under fp32 (same losses within BF16's error, falling), and
// a CUDA graph of its bf16 step replays the eager bf16 steps.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "core/random.h"
#include "examples/mnist/model.h"
#include "nn/graphed_step.h"
#include "nn/optim.h"
#include "ops/ops.h"
#include "tests/test_util.h"

#ifdef MINIDL_WITH_CUDA
#include <chrono>
#include <thread>

#include "cuda/bf16_choice.h"
#endif

using namespace minidl;
using namespace minidl::testing;

namespace {

// t (any dtype, any device) rounded to bfloat16 and widened to float64 on the CPU.
Tensor rounded(const Tensor& t) { return t.to(Device::cpu()).to(DType::bfloat16).to(DType::float64); }

double max_abs_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to(DType::float64).to_vector<double>(), y = b.to(DType::float64).to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

// Float32 leaves on `device` holding t's values, requiring grad.
Tensor leaf(const Tensor& t, Device device) {
  return t.to(DType::float32).to(device).detach().requires_grad_();
}

}  // namespace

TEST_CASE("bf16 precision: cuBLAS multiplies bfloat16 operands and sums in float32, forward and backward",
          "[precision][bf16][cuda]") {
  if (!have_gpu()) return;
  const Device gpu = Device::cuda(0);
  const DeterministicScope deterministic(true);  // the bf16 path, not the faster one
  const SelectionReset reset;
  select_kernel("matmul", DeviceType::cuda, "cublas");
  manual_seed(11);
  struct Case {
    Shape a, b;
    bool transpose_b;
  };
  // Plain, batched, and b given transposed (2-D; the op passes trans_b to the kernel).
  for (const Case& c : {Case{{37, 64}, {64, 45}, false}, Case{{3, 17, 96}, {3, 96, 9}, false},
                        Case{{20, 128}, {30, 128}, true}}) {
    INFO("a " << shape_str(c.a) << ", b " << shape_str(c.b) << (c.transpose_b ? " transposed" : ""));
    const Tensor a64 = uniform(c.a, -1, 1), b64 = uniform(c.b, -1, 1);
    const int64_t K = c.a.back();
    auto op = [&](const Tensor& a, const Tensor& b) { return matmul(a, c.transpose_b ? b.transpose(0, 1) : b); };
    const Tensor out_shape_probe = op(a64, b64);
    const Tensor g64 = uniform(out_shape_probe.shape(), -1, 1);  // d(loss)/d(out)

    const PrecisionScope bf16(Precision::bf16);
    const Tensor a = leaf(a64, gpu), b = leaf(b64, gpu);
    const Tensor out = op(a, b);
    CHECK(last_kernel("matmul", DeviceType::cuda) == "cublas");
    sum(out * g64.to(DType::float32).to(gpu)).backward();

    // The reference on rounded operands (and a rounded output gradient, as the backward's GEMMs see it).
    const Tensor ra = rounded(a64).requires_grad_(), rb = rounded(b64).requires_grad_();
    const Tensor ref = op(ra, rb);
    sum(ref * rounded(g64)).backward();
    const double accumulation = 1e-5 * std::sqrt(static_cast<double>(K));  // float32 sums of K terms below 1
    CHECK(compare(out, ref, 1e-5, accumulation) == "");
    CHECK(compare(a.grad(), ra.grad(), 1e-5, accumulation) == "");
    CHECK(compare(b.grad(), rb.grad(), 1e-5, accumulation) == "");

    // Against the unrounded operands the error is BF16's: about 2^-9 sqrt(K) / 3, far above float32's.
    const double bf16_error = max_abs_diff(out, op(a64, b64));
    INFO("max |bf16 - exact| " << bf16_error);
    CHECK(bf16_error > 100 * accumulation / std::sqrt(static_cast<double>(K)));
    CHECK(bf16_error < 2e-2 * std::sqrt(static_cast<double>(K)));
  }
}

#ifdef MINIDL_WITH_CUDA
TEST_CASE("bf16 precision: run_faster_of times both paths once, keeps the faster, and runs only it after",
          "[precision][bf16][cuda]") {
  if (!have_gpu()) return;
  // GPU events around a path measure the host's time in it too while the GPU is idle, so a path that
  // sleeps 4 ms is the slow one.
  int bf16_calls = 0, tf32_calls = 0;
  auto slow = [](int& calls) {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(4));
    return true;
  };
  auto fast = [](int& calls) {
    ++calls;
    return true;
  };
  const DeterministicScope timed(false);
  // Keys no kernel uses (first entry -1), each named for the listing.
  auto named = [](const char* text) { return std::function<std::string()>([=] { return std::string(text); }); };
  const cuda::ChoiceKey slow_bf16{-1, 1}, slow_tf32{-1, 2}, bf16_declines{-1, 3}, both_decline{-1, 4};
  CHECK(cuda::run_faster_of(slow_bf16, 0, named("test: a slow bf16 path"), [&] { return slow(bf16_calls); },
                            [&] { return fast(tf32_calls); }));
  CHECK(bf16_calls == 4);  // once untimed, three times timed
  CHECK(tf32_calls == 5);  // the same, and once more: the kept path runs last
  CHECK(cuda::run_faster_of(slow_bf16, 0, named("unused"), [&] { return slow(bf16_calls); },
                            [&] { return fast(tf32_calls); }));
  CHECK(bf16_calls == 4);
  CHECK(tf32_calls == 6);

  int a = 0, b = 0;
  CHECK(cuda::run_faster_of(slow_tf32, 0, named("test: a slow tf32 path"), [&] { return fast(a); },
                            [&] { return slow(b); }));
  CHECK(a == 5);
  CHECK(b == 4);
  // A path that declines loses; when both decline, the call is declined and nothing is kept.
  int c = 0, d = 0;
  CHECK(cuda::run_faster_of(bf16_declines, 0, named("test: bf16 declines"), [&] { ++c; return false; },
                            [&] { return fast(d); }));
  CHECK(c == 1);
  CHECK(!cuda::run_faster_of(both_decline, 0, named("test: both decline"), [] { return false; },
                             [] { return false; }));
  // Deterministic mode: bf16, untimed, a choice of its own for the same key.
  int e = 0, f = 0;
  {
    const DeterministicScope deterministic(true);
    CHECK(cuda::run_faster_of(slow_bf16, 0, named("test: deterministic"), [&] { return fast(e); },
                              [&] { return fast(f); }));
  }
  CHECK(e == 1);
  CHECK(f == 0);
  std::string listed;
  for (const std::string& line : cuda::bf16_choices()) listed += line + "\n";
  INFO(listed);
  CHECK(listed.find("test: a slow bf16 path on cuda:0: tf32") != std::string::npos);
  CHECK(listed.find("test: a slow tf32 path on cuda:0: bf16") != std::string::npos);
  CHECK(listed.find("test: both decline") == std::string::npos);
  CHECK(listed.find("not timed") != std::string::npos);
}
#endif

TEST_CASE("bf16 precision: cuDNN convolutions run on bfloat16 tensors, all three stages",
          "[precision][bf16][cuda]") {
  if (!have_gpu()) return;
  const Device gpu = Device::cuda(0);
  const DeterministicScope deterministic(true);  // the bf16 path, not the faster one
  const SelectionReset reset;
  select_kernel("conv2d", DeviceType::cuda, "cudnn");
  manual_seed(12);
  const Tensor x64 = uniform({4, 8, 12, 12}, -1, 1), w64 = uniform({16, 8, 3, 3}, -0.5, 0.5);
  Conv2dParams p;
  p.pad_h = p.pad_w = 1;
  p.stride_h = p.stride_w = 2;
  const Tensor g64 = uniform(conv2d(x64, w64, Tensor(), p).shape(), -1, 1);

  const PrecisionScope bf16(Precision::bf16);
  const Tensor x = leaf(x64, gpu), w = leaf(w64, gpu);
  const Tensor y = conv2d(x, w, Tensor(), p);
  sum(y * g64.to(DType::float32).to(gpu)).backward();
  CHECK(last_kernel("conv2d", DeviceType::cuda) == "cudnn");
  CHECK(last_kernel("conv2d.backward_input", DeviceType::cuda) == "cudnn");
  CHECK(last_kernel("conv2d.backward_weight", DeviceType::cuda) == "cudnn");

  const Tensor rx = rounded(x64).requires_grad_(), rw = rounded(w64).requires_grad_();
  const Tensor ref = conv2d(rx, rw, Tensor(), p);
  sum(ref * rounded(g64)).backward();
  // Each output is the float32 sum rounded once to bfloat16: within 2^-9 of its value, plus the sum's
  // float32 error (72 terms for y, fewer for grad_x; 4 * 6 * 6 = 144 for grad_w).
  // The gradients get 1/128: cuDNN may sum a backward stage in pieces (split-K), each rounded.
  CHECK(compare(y, ref, 1.0 / 256, 1e-4) == "");
  CHECK(compare(x.grad(), rx.grad(), 1.0 / 128, 2e-4) == "");
  CHECK(compare(w.grad(), rw.grad(), 1.0 / 128, 2e-4) == "");

  const double bf16_error = max_abs_diff(y, conv2d(x64, w64, Tensor(), p));
  INFO("max |bf16 - exact| of y " << bf16_error);
  CHECK(bf16_error > 1e-3);
}

TEST_CASE("bf16 precision: cuDNN GRU and LSTM sequences run in bfloat16, values and every gradient",
          "[precision][bf16][cuda][gru_sequence][lstm_sequence]") {
  if (!have_gpu()) return;
  const Device gpu = Device::cuda(0);
  manual_seed(13);
  const int64_t T = 6, N = 4, I = 16, H = 24;
  for (const bool lstm : {false, true}) {
    INFO((lstm ? "lstm_sequence" : "gru_sequence"));
    const int gates = lstm ? 4 : 3;
    std::vector<Tensor> params64;
    for (int d = 0; d < 2; ++d) {  // one bidirectional layer
      params64.push_back(uniform({gates * H, I}, -0.3, 0.3));
      params64.push_back(uniform({gates * H, H}, -0.3, 0.3));
      params64.push_back(uniform({gates * H}, -0.2, 0.2));
      params64.push_back(uniform({gates * H}, -0.2, 0.2));
    }
    const Tensor x64 = uniform({T, N, I}, -1, 1), g64 = uniform({T, N, 2 * H}, -1, 1);
    auto run = [&](const Tensor& x, const std::vector<Tensor>& params) {
      return lstm ? lstm_sequence(x, params, 1, true) : gru_sequence(x, params, 1, true);
    };

    const PrecisionScope bf16(Precision::bf16);
    const Tensor x = leaf(x64, gpu);
    std::vector<Tensor> params;
    for (const Tensor& t : params64) params.push_back(leaf(t, gpu));
    const Tensor y = run(x, params);
    sum(y * g64.to(DType::float32).to(gpu)).backward();
    CHECK(last_kernel(lstm ? "lstm_sequence" : "gru_sequence", DeviceType::cuda) == "cudnn");

    const Tensor rx = rounded(x64).requires_grad_();
    std::vector<Tensor> rparams;
    for (const Tensor& t : params64) rparams.push_back(rounded(t).requires_grad_());
    const Tensor ref = run(rx, rparams);
    sum(ref * rounded(g64)).backward();
    // The states are bfloat16 from step to step inside cuDNN, so a few roundings of 2^-9 add up over the
    // T steps: 2e-2 bounds them for values below 1 (elements mixed up would be off by O(1)).
    CHECK(compare(y, ref, 2e-2, 2e-2) == "");
    CHECK(compare(x.grad(), rx.grad(), 3e-2, 3e-2) == "");
    for (size_t i = 0; i < params.size(); ++i) {
      INFO("parameter " << i);
      CHECK(compare(params[i].grad(), rparams[i].grad(), 3e-2, 5e-2) == "");
    }
    // And it is BF16: float32 cuDNN agrees with the exact result to about 1e-6.
    const double bf16_error = max_abs_diff(y, run(x64, params64));
    INFO("max |bf16 - exact| of y " << bf16_error);
    CHECK(bf16_error > 1e-4);
  }
}

namespace {

// The MNIST CNN trained for `steps` Adam steps on one fixed batch of 16 from seed 5, under `precision`,
// eagerly or through a GraphedStep; returns the losses.
std::vector<double> train_mnist(Precision precision, bool graphed, int steps) {
  const Device gpu = Device::cuda(0);
  const PrecisionScope scope(precision);
  manual_seed(5);
  const Tensor x = (uniform({16, 1, 28, 28}, -0.5, 2.0, DType::float32)).to(gpu);
  std::vector<double> labels;
  for (int i = 0; i < 16; ++i) labels.push_back(i % 10);
  const Tensor y = from_vector(labels, {16}, TensorOptions(DType::int64, gpu));
  std::shared_ptr<Sequential> model = mnist::make_model();
  model->to(gpu);
  model->train();
  AdamOptions options;
  options.lr = 1e-3;
  Adam optimizer(model->parameters(), options);
  GraphedStep step(
      gpu, model->parameters(),
      [&] {
        const Tensor loss = cross_entropy((*model)(x), y);
        loss.backward();
        return std::vector<Tensor>{loss};
      },
      2, &optimizer);
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    if (graphed) {
      losses.push_back(step.run()[0].item<double>());
    } else {
      optimizer.zero_grad();
      const Tensor loss = cross_entropy((*model)(x), y);
      loss.backward();
      optimizer.step();
      losses.push_back(loss.item<double>());
    }
  }
  if (graphed) CHECK(step.captured());
  return losses;
}

}  // namespace

TEST_CASE("bf16 precision: the MNIST CNN trains like under fp32, and a CUDA graph replays its bf16 steps",
          "[precision][bf16][cuda][graph]") {
  if (!have_gpu()) return;
  const DeterministicScope deterministic(true);
  const SelectionReset reset;
  const std::vector<double> fp32 = train_mnist(Precision::fp32, false, 25);
  const std::vector<double> bf16 = train_mnist(Precision::bf16, false, 25);
  CHECK(last_kernel("matmul", DeviceType::cuda) == "cublas");
  const std::vector<double> bf16_graphed = train_mnist(Precision::bf16, true, 25);
  bool any_differs = false;
  for (size_t s = 0; s < fp32.size(); ++s) {
    INFO("step " << s + 1 << ": fp32 " << fp32[s] << ", bf16 " << bf16[s] << ", bf16 graphed " << bf16_graphed[s]);
    CHECK(std::abs(bf16[s] - fp32[s]) <= 0.02 + 0.1 * fp32[s]);
    CHECK(bf16_graphed[s] == Approx(bf16[s]).epsilon(1e-3).margin(1e-4));
    any_differs = any_differs || bf16[s] != fp32[s];
  }
  CHECK(any_differs);
  CHECK(bf16.back() < 0.5 * bf16.front());
}
