// tests/test_bfloat16_activations.cpp — bfloat16 activations between ops (--precision bf16's default on a
// GPU for the captcha model): the op cast, and conv2d, batch_norm (+ReLU) and max_pool2d taking and giving
// bfloat16 tensors with float32 parameters.
//
// The reference is the float32 op on the bfloat16 values, its outputs rounded to bfloat16: exactly what the
// CPU computes (ops/bfloat16_widening.h widens the inputs and runs the float32 kernels), so on the CPU the
// bfloat16 ops must equal it bit for bit. On a GPU ([cuda], skipped without one) the bfloat16 kernels
// (cuDNN's graph API, v2_split's quads, v2_2x2's channels-last kernels) must serve the calls themselves (no
// widened call) and agree with the CPU's results to a bfloat16 rounding or two, forward and backward.
// Then the captcha model: with bfloat16 activations it computes the float32 model's loss to bfloat16's
// error and trains, eagerly and (on a GPU) replayed from a CUDA graph.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "core/memory_format.h"
#include "core/random.h"
#include "examples/captcha/model.h"
#include "examples/captcha/train_step.h"
#include "examples/flags.h"
#include "nn/optim.h"
#include "ops/bfloat16_widening.h"
#include "ops/memory_format.h"
#include "ops/ops.h"
#include "tests/test_util.h"

using namespace minidl;
using minidl::testing::compare;
using minidl::testing::have_gpu;
using minidl::testing::test_devices;

namespace {

// t's values, exactly, as a float32 CPU tensor (bfloat16 widens exactly).
Tensor f32_cpu(const Tensor& t) { return t.to(Device::cpu()).to(DType::float32); }

// t on `device` in its memory format (Tensor::to(Device) copies into the contiguous one).
Tensor on(const Tensor& t, Device device) {
  return to_memory_format(t.to(device), suggest_memory_format(t)).detach();
}

// A float32 tensor of bfloat16-representable values in [lo, hi), in `format`, on `device`.
Tensor bf16_values(const Shape& shape, double lo, double hi, MemoryFormat format, Device device) {
  const Tensor t = testing::uniform(shape, lo, hi, DType::float32).to(DType::bfloat16).to(DType::float32);
  return to_memory_format(t.to(device), format).detach();
}

// The largest |value| of t, at least `floor`: the scale of a comparison's absolute tolerance.
double scale_of(const Tensor& t, double floor = 1.0) {
  double m = floor;
  for (double v : t.to(DType::float64).to_vector<double>()) m = std::max(m, std::abs(v));
  return m;
}

// |got - ref| / |ref| in the Euclidean norm (both widened to float64 on the CPU).
double relative_error(const Tensor& got, const Tensor& ref) {
  const std::vector<double> g = got.to(Device::cpu()).to(DType::float64).to_vector<double>();
  const std::vector<double> r = ref.to(Device::cpu()).to(DType::float64).to_vector<double>();
  double diff = 0, norm = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    diff += (g[i] - r[i]) * (g[i] - r[i]);
    norm += r[i] * r[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-300));
}

}  // namespace

TEST_CASE("cast: values rounded to nearest even, the memory format kept, the gradient cast back", "[bf16]") {
  for (Device device : test_devices()) {
    INFO(device.str());
    const Tensor x = bf16_values({2, 8, 3, 5}, -4, 4, MemoryFormat::channels_last, device);
    // 1 + 2^-8 lies halfway between two bfloat16 values and rounds to the even one, 1; 1 + 3 * 2^-8 to 1 + 2^-6.
    const Tensor ties = from_vector({1 + std::ldexp(1.0, -8), 1 + 3 * std::ldexp(1.0, -8)}, {2},
                                    TensorOptions(DType::float32, device));
    const std::vector<double> rounded = cast(ties, DType::bfloat16).to_vector<double>();
    CHECK(rounded[0] == 1.0);
    CHECK(rounded[1] == 1 + std::ldexp(1.0, -6));
    const Tensor y = cast(x, DType::bfloat16);
    CHECK(y.dtype() == DType::bfloat16);
    CHECK(is_channels_last(y));
    CHECK(compare(f32_cpu(y), f32_cpu(x), 0, 0) == "");
    CHECK(cast(x, DType::float32).shares_storage_with(x));  // no copy when the dtype is already right
    CHECK_THROWS_WITH(cast(full({2}, 1, TensorOptions(DType::int64, device)), DType::float32),
                      Catch::Contains("cast: casts between float32, float64 and bfloat16, not int64"));

    // loss = sum(float32(bfloat16(x)) * c): dloss/dx = c rounded to bfloat16 (the gradient crosses the cast).
    const Tensor leaf = x.detach().requires_grad_();
    const Tensor c = testing::uniform({2, 8, 3, 5}, -1, 1, DType::float32).to(device);
    sum(mul(cast(cast(leaf, DType::bfloat16), DType::float32), c)).backward();
    REQUIRE(leaf.grad().defined());
    CHECK(leaf.grad().dtype() == DType::float32);
    CHECK(compare(leaf.grad(), f32_cpu(cast(c, DType::bfloat16)), 0, 0) == "");
  }
}

TEST_CASE("bfloat16 activations on the CPU: conv2d, batch_norm_relu and max_pool2d are the float32 ops on the "
          "bfloat16 values, rounded",
          "[bf16]") {
  manual_seed(5);
  for (MemoryFormat format : {MemoryFormat::contiguous, MemoryFormat::channels_last}) {
    INFO(memory_format_name(format));
    const Device cpu = Device::cpu();
    const Tensor x = bf16_values({2, 8, 6, 10}, -2, 2, format, cpu);
    const Tensor w = testing::uniform({12, 8, 3, 3}, -0.3, 0.3, DType::float32);
    const Tensor gamma = testing::uniform({12}, 0.5, 1.5, DType::float32), beta = testing::uniform({12}, -0.2, 0.2, DType::float32);
    Conv2dParams p;
    p.pad_h = p.pad_w = 1;
    auto chain = [&](const Tensor& input, const Tensor& weight) {
      Tensor rm = zeros({12}), rv = ones({12});
      const Tensor z = conv2d(input, weight, Tensor(), p);
      const Tensor b = batch_norm_relu(z, gamma, beta, rm, rv, true, 0.1, 1e-5);
      return std::vector<Tensor>{z, b, max_pool2d(b, 2)};
    };
    const std::vector<Tensor> got = chain(cast(x, DType::bfloat16), w);
    for (const Tensor& t : got) {
      CHECK(t.dtype() == DType::bfloat16);
      CHECK(suggest_memory_format(t) == format);
    }
    // The reference, stage by stage: the float32 op on the bfloat16 input it received, then rounded.
    const Tensor w16 = cast(cast(w, DType::bfloat16), DType::float32);
    const Tensor z_ref = cast(conv2d(x, w16, Tensor(), p), DType::bfloat16);
    CHECK(compare(f32_cpu(got[0]), f32_cpu(z_ref), 0, 0) == "");
    Tensor rm = zeros({12}), rv = ones({12});
    const Tensor b_ref =
        cast(batch_norm_relu(cast(got[0], DType::float32), gamma, beta, rm, rv, true, 0.1, 1e-5), DType::bfloat16);
    CHECK(compare(f32_cpu(got[1]), f32_cpu(b_ref), 0, 0) == "");
    CHECK(compare(f32_cpu(got[2]), f32_cpu(max_pool2d(cast(got[1], DType::float32), 2)), 0, 0) == "");
    // A bias is added in float32 to the widened output, then rounded.
    const Tensor bias = testing::uniform({12}, -1, 1, DType::float32);
    const Tensor zb = conv2d(cast(x, DType::bfloat16), w, bias, p);
    CHECK(zb.dtype() == DType::bfloat16);
    const Tensor zb_ref = cast(add(f32_cpu(z_ref), bias.view({1, 12, 1, 1})), DType::bfloat16);
    CHECK(compare(f32_cpu(zb), f32_cpu(zb_ref), 0, 0) == "");
  }
  // The unfused ReLU (MINIDL_FUSE_RELU=0) takes bfloat16 through a float32 copy, exactly, with a gradient.
  const Tensor v = bf16_values({2, 4, 3, 3}, -1, 1, MemoryFormat::channels_last, Device::cpu());
  const Tensor r = relu(cast(v, DType::bfloat16));
  CHECK(r.dtype() == DType::bfloat16);
  CHECK(is_channels_last(r));
  CHECK(compare(f32_cpu(r), relu(v), 0, 0) == "");
  const Tensor leaf = v.detach().requires_grad_();
  sum(cast(relu(cast(leaf, DType::bfloat16)), DType::float32)).backward();
  CHECK(compare(leaf.grad(), gt(v, 0.0), 0, 0) == "");
  // Ops without bfloat16 support refuse it by name.
  CHECK_THROWS_WITH(dropout(zeros({4}).to(DType::bfloat16), 0.5, true),
                    Catch::Contains("dropout: needs a float32 or float64 tensor, got bfloat16"));
  // batch norm's per-channel tensors stay float32 for a bfloat16 input.
  CHECK_THROWS_WITH(batch_norm(zeros({2, 4, 3, 3}).to(DType::bfloat16), ones({4}).to(DType::bfloat16), Tensor(),
                               Tensor(), Tensor(), true),
                    Catch::Contains("gamma must be float32"));
}

TEST_CASE("bfloat16 activations: gradients reach float32 parameters and agree with the float32 chain", "[bf16]") {
  // conv2d then batch_norm_relu (no pooling: a max's winner may change when its candidates round to the
  // same bfloat16, which moves whole gradients; the pool's gradient is compared on equal inputs below).
  manual_seed(6);
  for (Device device : test_devices()) {
    INFO(device.str());
    const Tensor x = bf16_values({4, 8, 8, 12}, -2, 2, MemoryFormat::channels_last, device);
    const Tensor w0 = testing::uniform({16, 8, 3, 3}, -0.3, 0.3, DType::float32).to(device);
    const Tensor c = on(to_memory_format(testing::uniform({4, 16, 8, 12}, -1, 1, DType::float32),
                                         MemoryFormat::channels_last),
                        device);
    Conv2dParams p;
    p.pad_h = p.pad_w = 1;
    // loss = sum(bn_relu(conv(x, w)) * c), with the activations in `dtype`.
    struct Grads {
      double loss;
      Tensor x, w, gamma, beta;
    };
    auto run = [&](DType dtype) {
      const Tensor xl = x.detach().requires_grad_(), wl = w0.detach().requires_grad_();
      const TensorOptions f32(DType::float32, device);
      const Tensor gamma = ones({16}, f32).requires_grad_(), beta = zeros({16}, f32).requires_grad_();
      Tensor rm = zeros({16}, f32), rv = ones({16}, f32);
      const Tensor z = conv2d(cast(xl, dtype), wl, Tensor(), p);
      const Tensor y = batch_norm_relu(z, gamma, beta, rm, rv, true, 0.1, 1e-5);
      const Tensor loss = sum(mul(cast(y, DType::float32), c));
      loss.backward();
      return Grads{loss.item<double>(), xl.grad(), wl.grad(), gamma.grad(), beta.grad()};
    };
    const Grads f = run(DType::float32), b = run(DType::bfloat16);
    for (const Tensor& g : {b.x, b.w, b.gamma, b.beta}) {
      REQUIRE(g.defined());
      CHECK(g.dtype() == DType::float32);
    }
    CHECK(b.loss == Approx(f.loss).epsilon(2e-2).margin(0.5));
    // bfloat16 keeps 8 significant bits, and a ReLU whose input rounds across zero passes or drops a whole
    // gradient (and batch norm's backward spreads that over its channel): elementwise bounds would be loose
    // or flaky, so each gradient is compared as a whole, |b - f| / |f| in the Euclidean norm (about 3% here;
    // a gradient lost or scaled wrongly is off by 100%).
    CHECK(relative_error(b.w, f.w) < 6e-2);
    CHECK(relative_error(b.x, f.x) < 6e-2);
    CHECK(relative_error(b.gamma, f.gamma) < 6e-2);
    CHECK(relative_error(b.beta, f.beta) < 6e-2);
  }
}

namespace {

captcha::ModelConfig small_captcha() {
  captcha::ModelConfig c;
  c.width = 64;
  c.height = 32;
  c.classes = 5;
  c.channels = {8, 8, 16};  // 16 time steps; channels that v2_split's bfloat16 quads serve
  c.convs_per_block = 1;
  c.gru_hidden = 6;
  return c;
}

struct CaptchaBatch {
  Tensor inputs, targets, input_lengths, target_lengths;
};
CaptchaBatch captcha_batch(int64_t batch, int64_t time_steps, int seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> pixel(0, 1);
  std::uniform_int_distribution<int> label(1, 4);
  std::vector<double> x(batch * 3 * 32 * 64), y(batch * 3);
  for (double& v : x) v = pixel(rng);
  for (double& v : y) v = label(rng);
  const TensorOptions i64(DType::int64, Device::cpu());
  return {from_vector(x, {batch, 3, 32, 64}), from_vector(y, {batch, 3}, i64),
          full({batch}, static_cast<double>(time_steps), i64), full({batch}, 3, i64)};
}

// The losses of `steps` Adam steps of the small captcha model from seed 4, eager or (graphed) replayed
// from a CUDA graph, with the CNN's activations in `dtype`, channels-last.
std::vector<double> captcha_losses(Device device, DType dtype, int steps, bool graphed) {
  manual_seed(4);
  captcha::CaptchaModel model(small_captcha());
  model.to(device);
  model.memory_format = MemoryFormat::channels_last;
  model.activation_dtype = dtype;
  model.train();
  AdamOptions options;
  options.lr = 3e-3;
  Adam optimizer(model.parameters(), options);
  std::unique_ptr<captcha::GraphedTrainStep> step;
  if (graphed) step = std::make_unique<captcha::GraphedTrainStep>(model, optimizer, device);
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    const CaptchaBatch b = captcha_batch(8, model.config.time_steps(), 10 + s);
    const captcha::TrainStep t =
        step ? (*step)(b.inputs, b.targets, b.input_lengths, b.target_lengths)
             : captcha::train_step(model, optimizer, b.inputs.to(device), b.targets, b.input_lengths, b.target_lengths);
    losses.push_back(t.loss.item<double>());
  }
  if (step) CHECK((step->node_count() > 0) == device.is_cuda());
  for (const Tensor& p : model.parameters()) CHECK(p.dtype() == DType::float32);
  // Evaluation with bfloat16 activations (batch norm's running statistics, on a float32 copy).
  model.eval();
  NoGradGuard no_grad;
  const Tensor log_probs = model(captcha_batch(2, model.config.time_steps(), 99).inputs.to(device));
  CHECK(log_probs.dtype() == DType::float32);
  CHECK(log_probs.shape() == Shape{16, 2, 5});
  return losses;
}

}  // namespace

TEST_CASE("captcha flag activations: fp32 unless bf16 is asked for (bf16 is not the default before a GPU measures it)",
          "[bf16][flags]") {
  CHECK(examples::resolve_activations("") == DType::float32);
  CHECK(examples::resolve_activations("fp32") == DType::float32);
  CHECK(examples::resolve_activations("bf16") == DType::bfloat16);
  CLI::App app;
  std::string value;
  examples::add_activations_flag(&app, value);
  CHECK_NOTHROW(app.parse(std::vector<std::string>{"bf16", "--activations"}));  // CLI11 reads the vector backwards
  CHECK(value == "bf16");
  CHECK_THROWS(app.parse(std::vector<std::string>{"bf17", "--activations"}));
}

TEST_CASE("captcha model with bfloat16 activations: the float32 model's losses to bfloat16's error, and it trains",
          "[bf16][captcha_model]") {
  for (Device device : test_devices()) {
    INFO(device.str());
    const std::vector<double> f = captcha_losses(device, DType::float32, 6, false);
    const std::vector<double> b = captcha_losses(device, DType::bfloat16, 6, false);
    for (size_t s = 0; s < f.size(); ++s) {
      INFO("step " << s + 1 << ": float32 activations " << f[s] << ", bfloat16 " << b[s]);
      CHECK(b[s] == Approx(f[s]).epsilon(3e-2));
    }
    CHECK(b.back() < b.front());  // it trained
  }
}

#ifdef MINIDL_WITH_CUDA

namespace {

// One stage with bfloat16 activations on `device`: out = op(bfloat16(leaf)), then loss = sum(float(out) * c)
// and its backward. Returns out and the float32 gradients of the leaf and of `params` (float32 leaves).
struct StageRun {
  Tensor out, grad_in;
  std::vector<Tensor> grad_params;
};
StageRun run_stage(Device device, const Tensor& input, const Tensor& c, std::vector<Tensor> params,
                   const std::function<Tensor(const Tensor&, const std::vector<Tensor>&)>& op) {
  const Tensor leaf = on(input, device).requires_grad_();
  for (Tensor& t : params) t = t.to(device).detach().requires_grad_();
  const Tensor out = op(cast(leaf, DType::bfloat16), params);
  sum(mul(cast(out, DType::float32), on(c, device))).backward();
  StageRun r{out, leaf.grad(), {}};
  for (const Tensor& t : params) r.grad_params.push_back(t.grad());
  return r;
}

}  // namespace

TEST_CASE("bfloat16 activations on a GPU: the bfloat16 kernels serve conv2d, batch_norm_relu and max_pool2d and "
          "agree with the CPU",
          "[cuda][bf16]") {
  if (!have_gpu()) return;
  const Device gpu = Device::cuda(0), cpu = Device::cpu();
  manual_seed(7);
  Conv2dParams p;
  p.pad_h = p.pad_w = 1;
  const TensorOptions f32(DType::float32, cpu);
  // The captcha model's kinds of layers at small sizes: 32 -> 64 and 64 -> 64 channels, a 2x2 and a 2x1 pool.
  for (int64_t in : {int64_t(32), int64_t(64)}) {
    INFO("channels " << in << " -> 64");
    const Tensor x = bf16_values({4, in, 8, 12}, -2, 2, MemoryFormat::channels_last, cpu);
    const Tensor w = testing::uniform({64, in, 3, 3}, -0.2, 0.2, DType::float32);
    const Tensor c = to_memory_format(testing::uniform({4, 64, 8, 12}, -1, 1, DType::float32),
                                      MemoryFormat::channels_last);
    auto conv = [&](const Tensor& a, const std::vector<Tensor>& q) { return conv2d(a, q[0], Tensor(), p); };
    auto bn_relu = [&](const Tensor& a, const std::vector<Tensor>& q) {
      Tensor rm = zeros({64}, TensorOptions(DType::float32, a.device())), rv = ones({64}, rm.options());
      return batch_norm_relu(a, q[0], q[1], rm, rv, true, 0.1, 1e-5);
    };
    Pool2dParams pool;
    pool.kernel_h = pool.stride_h = 2;
    pool.kernel_w = pool.stride_w = in == 32 ? 2 : 1;
    auto pool_op = [&](const Tensor& a, const std::vector<Tensor>&) { return max_pool2d(a, pool); };
    const Tensor c_pool = to_memory_format(
        testing::uniform({4, 64, 4, in == 32 ? 6 : 12}, -1, 1, DType::float32), MemoryFormat::channels_last);

    // Each stage runs on the same (CPU) input on both devices.
    const StageRun conv_cpu = run_stage(cpu, x, c, {w}, conv);
    const Tensor z = f32_cpu(conv_cpu.out);
    const Tensor z_nhwc = to_memory_format(z, MemoryFormat::channels_last);
    const std::vector<Tensor> affine = {testing::uniform({64}, 0.5, 1.5, DType::float32),
                                        testing::uniform({64}, -0.2, 0.2, DType::float32)};
    const StageRun bn_cpu = run_stage(cpu, z_nhwc, c, affine, bn_relu);
    const Tensor b_nhwc = to_memory_format(f32_cpu(bn_cpu.out), MemoryFormat::channels_last);
    const StageRun pool_cpu = run_stage(cpu, b_nhwc, c_pool, {}, pool_op);

    const int64_t widened_before = widening::widened_calls.load();
    const StageRun conv_gpu = run_stage(gpu, x, c, {w}, conv);
    CHECK(last_kernel(keys::conv2d, DeviceType::cuda) == "cudnn_graph_tf32");
    CHECK(last_kernel(keys::conv2d_backward_input, DeviceType::cuda) == "cudnn_graph_tf32");
    CHECK(last_kernel(keys::conv2d_backward_weight, DeviceType::cuda) == "cudnn_graph_tf32");
    const StageRun bn_gpu = run_stage(gpu, z_nhwc, c, affine, bn_relu);
    CHECK(last_kernel(keys::batch_norm_relu, DeviceType::cuda) == "v2_split");
    CHECK(last_kernel(keys::batch_norm_relu_backward, DeviceType::cuda) == "v2_split");
    const StageRun pool_gpu = run_stage(gpu, b_nhwc, c_pool, {}, pool_op);
    CHECK(last_kernel(keys::max_pool2d, DeviceType::cuda) == "v2_2x2");
    CHECK(last_kernel(keys::max_pool2d_backward, DeviceType::cuda) == "v2_2x2");
    CHECK(widening::widened_calls.load() == widened_before);  // bfloat16 kernels served, no widened copies

    for (const Tensor& t : {conv_gpu.out, bn_gpu.out, pool_gpu.out}) {
      CHECK(t.dtype() == DType::bfloat16);
      CHECK(is_channels_last(t));
    }
    // A bfloat16 rounding is 2^-8 of the value; sums in another order may round the other way.
    CHECK(compare(f32_cpu(conv_gpu.out), z, 1e-2, 1e-2 * scale_of(z)) == "");
    CHECK(compare(conv_gpu.grad_in, conv_cpu.grad_in, 0, 2e-2 * scale_of(conv_cpu.grad_in)) == "");
    CHECK(compare(conv_gpu.grad_params[0], conv_cpu.grad_params[0], 0, 2e-2 * scale_of(conv_cpu.grad_params[0])) == "");
    CHECK(compare(f32_cpu(bn_gpu.out), f32_cpu(bn_cpu.out), 1e-2, 1e-2) == "");
    CHECK(compare(bn_gpu.grad_in, bn_cpu.grad_in, 0, 2e-2 * scale_of(bn_cpu.grad_in)) == "");
    for (size_t i = 0; i < 2; ++i)
      CHECK(compare(bn_gpu.grad_params[i], bn_cpu.grad_params[i], 1e-3, 1e-3 * scale_of(bn_cpu.grad_params[i])) == "");
    // A max and its gradient's routing are exact: the same bits on both devices.
    CHECK(compare(f32_cpu(pool_gpu.out), f32_cpu(pool_cpu.out), 0, 0) == "");
    CHECK(compare(pool_gpu.grad_in, pool_cpu.grad_in, 0, 0) == "");
  }
}

TEST_CASE("captcha model with bfloat16 activations on a GPU: replayed from a CUDA graph, the eager step's losses",
          "[cuda][bf16][graph]") {
  if (!have_gpu()) return;
  const std::vector<double> eager = captcha_losses(Device::cuda(0), DType::bfloat16, 6, false);
  const std::vector<double> graphed = captcha_losses(Device::cuda(0), DType::bfloat16, 6, true);
  for (size_t s = 0; s < eager.size(); ++s) {
    INFO("step " << s + 1 << ": eager " << eager[s] << ", graphed " << graphed[s]);
    // The same kernels and plans; cuDNN's split weight-gradient engines may add in another order.
    CHECK(graphed[s] == Approx(eager[s]).epsilon(1e-3));
  }
}

#endif  // MINIDL_WITH_CUDA
