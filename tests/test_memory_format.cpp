// tests/test_memory_format.cpp — channels-last tensors (core/memory_format.h): the strides and checks,
// to_memory_format's gradient, and an opcheck of every op that serves the format: each runs once on NCHW
// inputs and once on the same values stored channels-last, and the outputs, the output's format and the
// gradients of every input must agree. CPU cases always run; the [cuda] cases run the same checks on the
// GPU, where cuDNN's NHWC convolution and pooling serve them (asserted), and skip visibly without one.
// The models (MNIST's two CNNs, a small captcha model) are checked whole, forward and backward, and a
// checkpoint saved after channels-last training loads into an NCHW run with identical outputs.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/autograd.h"
#include "core/memory_format.h"
#include "core/precision.h"
#include "core/random.h"
#include "examples/captcha/model.h"
#include "examples/mnist/model.h"
#include "nn/checkpoint.h"
#include "nn/optim.h"
#include "ops/memory_format.h"
#include "ops/op_checks.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

using OpFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Fixed weights for the scalar loss sum(out * r): values in [-1, 1], not all equal, so every output
// element's gradient is distinct.
Tensor loss_weights(const Shape& shape, const Device& device) {
  std::vector<double> r(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < r.size(); ++i) r[i] = static_cast<double>(static_cast<int64_t>(i * 7919 % 17) - 8) / 8.0;
  return from_vector(r, shape, TensorOptions(DType::float32, device));
}

struct FormatRun {
  Tensor out;
  std::vector<Tensor> grads;  // of each input, undefined where it has none
};

// f on fresh leaves holding `inputs`' values, the 4-D ones in `format`; then backward of sum(out * r).
// `seed` is set before f runs (dropout draws the same mask in both formats).
FormatRun run_in_format(const OpFn& f, const std::vector<Tensor>& inputs, MemoryFormat format, uint64_t seed) {
  std::vector<Tensor> leaves;
  for (const Tensor& t : inputs) {
    const Tensor c = t.dim() == 4 ? copy_in_format(t, format) : t;
    Tensor leaf = make_view(c, c.shape(), c.strides(), c.offset());  // a new leaf on the same values
    leaf.requires_grad_();
    leaves.push_back(leaf);
  }
  manual_seed(seed);
  FormatRun run;
  run.out = f(leaves);
  const Tensor loss = sum(mul(run.out, loss_weights(run.out.shape(), run.out.device())).reshape({-1}), {0});
  loss.backward();
  for (const Tensor& leaf : leaves) run.grads.push_back(leaf.grad());
  return run;
}

// The opcheck: f in NCHW and in channels-last agree (output and every gradient), and the channels-last
// run's output is channels-last when `keeps_format`.
void check_formats(const std::string& what, const OpFn& f, const std::vector<Tensor>& inputs, bool keeps_format,
                   double rtol = 1e-5, double atol = 1e-5) {
  INFO(what);
  const FormatRun nchw = run_in_format(f, inputs, MemoryFormat::contiguous, 7);
  const FormatRun nhwc = run_in_format(f, inputs, MemoryFormat::channels_last, 7);
  CHECK(suggest_memory_format(nchw.out) == MemoryFormat::contiguous);
  if (keeps_format) CHECK(suggest_memory_format(nhwc.out) == MemoryFormat::channels_last);
  CHECK(compare(nhwc.out, nchw.out, rtol, atol) == "");
  REQUIRE(nchw.grads.size() == nhwc.grads.size());
  for (size_t i = 0; i < nchw.grads.size(); ++i) {
    INFO("gradient of input " << i);
    REQUIRE(nchw.grads[i].defined() == nhwc.grads[i].defined());
    if (nchw.grads[i].defined()) CHECK(compare(nhwc.grads[i], nchw.grads[i], rtol, atol) == "");
  }
}

Tensor input(const Shape& shape, const Device& device, double lo = -1, double hi = 1) {
  return uniform(shape, lo, hi, DType::float32, device);
}

// Every op that serves channels-last, on `device`. `rtol`/`atol` cover sums added in another order
// (batch norm's statistics, cuDNN's NHWC algorithms).
void check_every_op(const Device& dev, double rtol, double atol) {
  manual_seed(11);
  const Tensor x = input({2, 3, 6, 5}, dev), x2 = input({2, 3, 6, 5}, dev);
  const Tensor w = input({4, 3, 3, 3}, dev), b = input({4}, dev);

  // conv2d: bias, padding, stride; a 5x5 kernel without bias; one input channel (NCHW and NHWC are the
  // same memory there).
  check_formats("conv2d 3x3 pad 1 with bias", [](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], in[2], 1, 1); },
                {x, w, b}, true, rtol, atol);
  check_formats("conv2d 3x3 stride 2", [](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], Tensor(), 2, 0); },
                {x, w}, true, rtol, atol);
  check_formats("conv2d 5x5 pad 2", [](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], Tensor(), 1, 2); },
                {x, input({2, 3, 5, 5}, dev)}, true, rtol, atol);
  check_formats("conv2d one input channel", [](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], in[2], 1, 0); },
                {input({2, 1, 7, 6}, dev), input({4, 1, 3, 3}, dev), b}, true, rtol, atol);

  // batch norm: training (with the running statistics it updates), evaluation, fused with ReLU.
  const Tensor gamma = input({3}, dev, 0.5, 1.5), beta = input({3}, dev);
  for (bool relu : {false, true}) {
    std::vector<Tensor> stats;  // running mean, var of each run
    check_formats(relu ? "batch_norm_relu training" : "batch_norm training",
                  [&stats, relu, dev](const std::vector<Tensor>& in) {
                    Tensor mean = zeros({3}, TensorOptions(DType::float32, dev));
                    Tensor var = ones({3}, TensorOptions(DType::float32, dev));
                    stats.push_back(mean);
                    stats.push_back(var);
                    return relu ? batch_norm_relu(in[0], in[1], in[2], mean, var, true, 0.1, 1e-5)
                                : batch_norm(in[0], in[1], in[2], mean, var, true, 0.1, 1e-5);
                  },
                  {x, gamma, beta}, true, rtol, atol);
    REQUIRE(stats.size() == 4);
    CHECK(compare(stats[2], stats[0], rtol, atol) == "");
    CHECK(compare(stats[3], stats[1], rtol, atol) == "");
  }
  const Tensor running_mean = input({3}, dev), running_var = input({3}, dev, 0.5, 2.0);
  check_formats("batch_norm evaluation",
                [&](const std::vector<Tensor>& in) {
                  return batch_norm(in[0], in[1], in[2], running_mean, running_var, false, 0.1, 1e-5);
                },
                {x, gamma, beta}, true, rtol, atol);

  // pooling: 2x2, 2x1 (the captcha model's last), 3x3 stride 2 padding 1; average 2x2 and 3x3 stride 1.
  const Tensor px = input({2, 3, 8, 6}, dev);
  for (const Pool2dParams& p : {pool_params(2, 2, 2, 2, 0, 0), pool_params(2, 1, 2, 1, 0, 0), pool_params(3, 3, 2, 2, 1, 1)}) {
    check_formats("max_pool2d", [p](const std::vector<Tensor>& in) { return max_pool2d(in[0], p); }, {px}, true, rtol,
                  atol);
  }
  for (const Pool2dParams& p : {pool_params(2, 2, 2, 2, 0, 0), pool_params(3, 3, 1, 1, 1, 1)}) {
    check_formats("avg_pool2d", [p](const std::vector<Tensor>& in) { return avg_pool2d(in[0], p); }, {px}, true, rtol,
                  atol);
  }

  // dropout: the mask is drawn in the logical (NCHW) order, so both formats drop the same elements.
  check_formats("dropout", [](const std::vector<Tensor>& in) { return dropout(in[0], 0.3, true); }, {x}, true, 0, 0);

  // elementwise: same shapes, a broadcast per-channel operand, unary and scalar ops; bias + ReLU.
  check_formats("add", [](const std::vector<Tensor>& in) { return add(in[0], in[1]); }, {x, x2}, true, 0, 0);
  check_formats("mul", [](const std::vector<Tensor>& in) { return mul(in[0], in[1]); }, {x, x2}, true, 0, 0);
  check_formats("sub, div", [](const std::vector<Tensor>& in) { return div(sub(in[0], in[1]), add_scalar(in[1], 3.0)); },
                {x, x2}, true, rtol, atol);
  check_formats("add of a [1, C, 1, 1] bias",
                [](const std::vector<Tensor>& in) { return add(in[0], in[1].view({1, 3, 1, 1})); }, {x, beta}, true, 0,
                0);
  check_formats("relu, exp, sigmoid, tanh, scalars",
                [](const std::vector<Tensor>& in) {
                  return add(relu(in[0]), tanh(sigmoid(exp(mul_scalar(pow_scalar(add_scalar(in[0], 2.0), 2.0), 0.5)))));
                },
                {x}, true, rtol, atol);
  check_formats("bias_relu", [](const std::vector<Tensor>& in) { return bias_relu(in[0], in[1], 1); }, {x, beta}, true,
                0, 0);

  // The captcha model's flatten into the recurrent layer: [N, C, H, W] read column by column.
  check_formats("permute + reshape into a sequence",
                [](const std::vector<Tensor>& in) { return in[0].permute({3, 0, 1, 2}).reshape({5, 2, -1}); }, {x},
                false, 0, 0);
  // And the MNIST model's Flatten.
  check_formats("flatten", [](const std::vector<Tensor>& in) { return in[0].flatten(1); }, {x}, false, 0, 0);
}

// Runs `model` on x converted by `prepare` in both formats; compares the outputs and every parameter's
// gradient.
void check_model(const std::string& what, Module& model, const std::function<Tensor(const Tensor&, MemoryFormat)>& run,
                 const Tensor& x, double rtol, double atol) {
  INFO(what);
  std::vector<Tensor> outs;
  std::vector<NamedTensors> grads;
  for (MemoryFormat format : {MemoryFormat::contiguous, MemoryFormat::channels_last}) {
    model.zero_grad();
    manual_seed(5);  // the same dropout masks
    const Tensor out = run(x, format);
    sum(mul(out, loss_weights(out.shape(), out.device())).reshape({-1}), {0}).backward();
    outs.push_back(out.detach());
    NamedTensors g;
    for (const auto& [name, p] : model.named_parameters()) {
      g.push_back({name, p.grad()});
      CHECK(p.is_contiguous());  // the parameters keep their layout whatever the activations'
    }
    grads.push_back(g);
  }
  CHECK(compare(outs[1], outs[0], rtol, atol) == "");
  for (size_t i = 0; i < grads[0].size(); ++i) {
    INFO("gradient of " << grads[0][i].first);
    REQUIRE(grads[1][i].second.defined());
    CHECK(compare(grads[1][i].second, grads[0][i].second, rtol, atol) == "");
  }
}

captcha::ModelConfig small_captcha_config() {
  captcha::ModelConfig config;
  config.width = 32;
  config.height = 16;
  config.classes = 5;
  config.channels = {4, 8, 8};
  config.gru_hidden = 6;
  return config;
}

void check_models(const Device& dev, double rtol, double atol) {
  for (const char* name : {mnist::kModelName, mnist::kFastModelName}) {
    manual_seed(3);
    std::shared_ptr<Sequential> model = mnist::make_model(name);
    model->to(dev);
    model->train();
    const Tensor x = input({4, 1, 28, 28}, dev);
    check_model(name, *model, [&](const Tensor& in, MemoryFormat f) { return (*model)(mnist::model_input(in, f)); }, x,
                rtol, atol);
  }
  manual_seed(4);
  captcha::CaptchaModel model(small_captcha_config());
  model.to(dev);
  model.train();
  const Tensor x = input({3, 3, 16, 32}, dev, 0, 1);
  check_model("captcha", model,
              [&](const Tensor& in, MemoryFormat f) {
                model.memory_format = f;
                return model(in);
              },
              x, rtol, atol);
}

}  // namespace

TEST_CASE("memory format: channels-last strides, the checks, views and conversions", "[memory_format]") {
  CHECK(channels_last_strides({2, 3, 4, 5}) == Shape{60, 1, 15, 3});
  const Tensor x = arange(2 * 3 * 4 * 5).reshape({2, 3, 4, 5}).to(DType::float32);
  CHECK(suggest_memory_format(x) == MemoryFormat::contiguous);
  CHECK_FALSE(is_channels_last(x));
  const Tensor cl = copy_in_format(x, MemoryFormat::channels_last);
  CHECK(cl.shape() == x.shape());
  CHECK(cl.strides() == Shape{60, 1, 15, 3});
  CHECK(is_channels_last(cl));
  CHECK(suggest_memory_format(cl) == MemoryFormat::channels_last);
  CHECK(cl.to_vector<float>() == x.to_vector<float>());  // the same logical values
  CHECK(nhwc_view(cl).is_contiguous());
  CHECK(nhwc_view(cl).shape() == Shape{2, 4, 5, 3});
  CHECK(nchw_view(nhwc_view(cl)).strides() == cl.strides());
  CHECK(copy_in_format(cl, MemoryFormat::channels_last).shares_storage_with(cl));
  const Tensor back = copy_in_format(cl, MemoryFormat::contiguous);
  CHECK(back.is_contiguous());
  CHECK(back.to_vector<float>() == x.to_vector<float>());

  // One channel: NCHW and NHWC are the same memory; converting restrides without copying, and the literal
  // channels-last strides make it count as channels-last.
  const Tensor one = rand({2, 1, 3, 4});
  CHECK(is_channels_last(one));
  CHECK(suggest_memory_format(one) == MemoryFormat::contiguous);
  const Tensor one_cl = copy_in_format(one, MemoryFormat::channels_last);
  CHECK(one_cl.shares_storage_with(one));
  CHECK(suggest_memory_format(one_cl) == MemoryFormat::channels_last);
  CHECK(suggest_memory_format(copy_in_format(one_cl, MemoryFormat::contiguous)) == MemoryFormat::contiguous);
  // Not 4-D: always contiguous.
  CHECK(suggest_memory_format(rand({3, 4})) == MemoryFormat::contiguous);
  CHECK(copy_in_format(rand({3, 4}).transpose(0, 1), MemoryFormat::channels_last).is_contiguous());

  CHECK(parse_memory_format("nhwc") == MemoryFormat::channels_last);
  CHECK(parse_memory_format("nchw") == MemoryFormat::contiguous);
  CHECK(std::string(memory_format_name(MemoryFormat::channels_last)) == "nhwc");
  CHECK_THROWS_WITH(parse_memory_format("nwhc"), Catch::Contains("is not nchw or nhwc"));
}

TEST_CASE("gradcheck: to_memory_format, and ops on channels-last float64 tensors", "[memory_format][gradcheck]") {
  manual_seed(21);
  const Tensor x = uniform({2, 3, 4, 5}, -1, 1).requires_grad_();
  CHECK(gradcheck([](const std::vector<Tensor>& in) { return to_memory_format(in[0], MemoryFormat::channels_last); },
                  {x}) == "");
  CHECK(gradcheck(
            [](const std::vector<Tensor>& in) {
              return to_memory_format(to_memory_format(in[0], MemoryFormat::channels_last), MemoryFormat::contiguous);
            },
            {x}) == "");
  // The front ends' channels-last paths (CPU: convolution and pooling on NCHW copies, batch norm and
  // bias + ReLU in place), in float64.
  const Tensor w = uniform({4, 3, 3, 3}, -1, 1).requires_grad_(), b = uniform({4}, -1, 1).requires_grad_();
  CHECK(gradcheck(
            [](const std::vector<Tensor>& in) {
              return conv2d(to_memory_format(in[0], MemoryFormat::channels_last), in[1], in[2], 1, 1);
            },
            {x, w, b}) == "");
  const Tensor gamma = uniform({3}, 0.5, 1.5).requires_grad_(), beta = uniform({3}, -1, 1).requires_grad_();
  CHECK(gradcheck(
            [](const std::vector<Tensor>& in) {
              return batch_norm(to_memory_format(in[0], MemoryFormat::channels_last), in[1], in[2], Tensor(), Tensor(),
                                true, 0.1, 1e-5);
            },
            {x, gamma, beta}) == "");
  CHECK(gradcheck(
            [](const std::vector<Tensor>& in) {
              return max_pool2d(to_memory_format(in[0], MemoryFormat::channels_last), 2);
            },
            {x}) == "");
}

TEST_CASE("memory format: every op that serves channels-last agrees with NCHW on the CPU", "[memory_format]") {
  // No CPU kernel is declared for channels-last: convolution and pooling run on NCHW copies.
  CHECK(channels_last_candidates(keys::conv2d, DeviceType::cpu).empty());
  CHECK(channels_last_candidates(keys::max_pool2d, DeviceType::cpu).empty());
  check_every_op(Device::cpu(), 1e-5, 1e-5);
}

TEST_CASE("memory format: the MNIST and captcha models agree in both formats on the CPU", "[memory_format]") {
  check_models(Device::cpu(), 1e-4, 1e-5);
}

TEST_CASE("memory format: a checkpoint saved after channels-last training loads into an NCHW model",
          "[memory_format][checkpoint]") {
  char dir_template[] = "/tmp/minidl_test_memory_format_XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  const std::string path = dir + "/fast.ckpt";
  manual_seed(8);
  std::shared_ptr<Sequential> model = mnist::make_model(mnist::kFastModelName);
  Adam adam(model->parameters(), AdamOptions{});
  const Tensor x = input({8, 1, 28, 28}, Device::cpu());
  const Tensor target = from_vector({0, 1, 2, 3, 4, 5, 6, 7}, {8}, DType::int64);
  for (int step = 0; step < 2; ++step) {
    adam.zero_grad();
    cross_entropy((*model)(mnist::model_input(x, MemoryFormat::channels_last)), target).backward();
    adam.step();
  }
  save_checkpoint(path, *model, nullptr, {{"model", mnist::kFastModelName}});
  std::shared_ptr<Sequential> loaded = mnist::make_model(mnist::kFastModelName);
  load_checkpoint(path, *loaded);
  model->eval();
  loaded->eval();
  NoGradGuard no_grad;
  const Tensor trained = (*model)(mnist::model_input(x, MemoryFormat::channels_last));
  CHECK(compare((*loaded)(x), trained, 1e-5, 1e-6) == "");
  CHECK(compare((*model)(x), trained, 1e-5, 1e-6) == "");
  std::remove(path.c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("memory format [cuda]: cuDNN serves channels-last convolution and pooling, NHWC agrees with NCHW",
          "[memory_format][cuda]") {
  if (!have_gpu()) return;
  const Device dev = Device::cuda(0);
  CHECK_FALSE(channels_last_candidates(keys::conv2d, DeviceType::cuda).empty());
  // The kernels themselves, on channels-last tensors: served (not declined) and equal to their NCHW call.
  manual_seed(31);
  const Tensor x = input({2, 8, 9, 7}, dev), w = input({16, 8, 3, 3}, dev);
  Conv2dParams p;
  p.pad_h = p.pad_w = 1;
  Tensor y = empty({2, 16, 9, 7}, TensorOptions(DType::float32, dev));
  dispatch(keys::conv2d, dev, x, w, y, p);
  Tensor y_cl = empty_channels_last({2, 16, 9, 7}, TensorOptions(DType::float32, dev));
  REQUIRE(dispatch_channels_last(keys::conv2d, dev, copy_in_format(x, MemoryFormat::channels_last), w, y_cl, p));
  CHECK(last_kernel(keys::conv2d, DeviceType::cuda) == "cudnn");
  CHECK(compare(y_cl, y, 1e-4, 1e-4) == "");
  Tensor pooled_cl = empty_channels_last({2, 16, 4, 3}, TensorOptions(DType::float32, dev));
  Tensor pooled = empty({2, 16, 4, 3}, TensorOptions(DType::float32, dev));
  // Pooled from the same values (y_cl differs from y by the two convolutions' rounding): a max is exact.
  dispatch(keys::max_pool2d, dev, copy_in_format(y_cl, MemoryFormat::contiguous), pooled, pool_params(2, 2, 2, 2, 0, 0));
  REQUIRE(dispatch_channels_last(keys::max_pool2d, dev, y_cl, pooled_cl, pool_params(2, 2, 2, 2, 0, 0)));
  CHECK(compare(pooled_cl, pooled, 0, 0) == "");

  // The ops, through their front ends, with the gradients.
  check_every_op(dev, 1e-4, 1e-4);
  CHECK(last_kernel(keys::max_pool2d_backward, DeviceType::cuda) == "cudnn");  // the last window overlaps
}

TEST_CASE("memory format [cuda]: v2_2x2 serves channels-last windows that tile the plane, ties and odd planes "
          "included, as its NCHW call does",
          "[memory_format][cuda][pool]") {
  if (!have_gpu()) return;
  const Device dev = Device::cuda(0);
  manual_seed(41);
  // Five values only: many ties inside windows, which the first position (row-major) must win.
  std::vector<float> values(3 * 40 * 9 * 7);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((i * 7919) % 5) * 0.25f;
  const Tensor x = from_vector(values, {3, 40, 9, 7}, TensorOptions(DType::float32, dev));
  for (const Pool2dParams& p : {pool_params(2, 2, 2, 2, 0, 0), pool_params(2, 1, 2, 1, 0, 0), pool_params(3, 2, 3, 2, 0, 0)}) {
    INFO("window " << p.kernel_h << "x" << p.kernel_w);
    const Shape ys = pool2d_output_shape("test", x.shape(), p);
    const TensorOptions o(DType::float32, dev);
    Tensor y = empty(ys, o), y_cl = empty_channels_last(ys, o);
    dispatch(keys::max_pool2d, dev, x, y, p);
    REQUIRE(dispatch_channels_last(keys::max_pool2d, dev, copy_in_format(x, MemoryFormat::channels_last), y_cl, p));
    CHECK(last_kernel(keys::max_pool2d, DeviceType::cuda) == "v2_2x2");
    CHECK(compare(y_cl, y, 0, 0) == "");
    const Tensor gy = input(ys, dev);
    Tensor gx = empty(x.shape(), o), gx_cl = empty_channels_last(x.shape(), o);
    dispatch(keys::max_pool2d_backward, dev, x, y, gy, gx, p);
    REQUIRE(dispatch_channels_last(keys::max_pool2d_backward, dev, copy_in_format(x, MemoryFormat::channels_last), y_cl,
                                   copy_in_format(gy, MemoryFormat::channels_last), gx_cl, p));
    CHECK(last_kernel(keys::max_pool2d_backward, DeviceType::cuda) == "v2_2x2");
    CHECK(compare(gx_cl, gx, 0, 0) == "");
  }
  // A window that overlaps its neighbours is not v2_2x2's on channels-last tensors: it declines.
  const Pool2dParams overlapping = pool_params(3, 3, 2, 2, 1, 1);
  const Shape ys = pool2d_output_shape("test", x.shape(), overlapping);
  Tensor y_cl = empty_channels_last(ys, TensorOptions(DType::float32, dev));
  REQUIRE(dispatch_channels_last(keys::max_pool2d, dev, copy_in_format(x, MemoryFormat::channels_last), y_cl,
                                 overlapping));
  CHECK(last_kernel(keys::max_pool2d, DeviceType::cuda) != "v2_2x2");
}

TEST_CASE("memory format [cuda]: cudnn_graph_tf32 serves channels-last convolutions under TF32 (all three stages, "
          "within TF32's error of the CPU) and, unless selected, declines under strict FP32",
          "[memory_format][cuda][conv2d]") {
  if (!have_gpu()) return;
  const Device dev = Device::cuda(0), cpu = Device::cpu();
  manual_seed(53);
  struct Case {
    Shape x, w;
    int stride, pad;
  };
  const Case cases[] = {{{2, 8, 9, 7}, {16, 8, 3, 3}, 1, 1},
                        {{4, 32, 16, 24}, {32, 32, 3, 3}, 1, 1},
                        {{2, 3, 10, 12}, {8, 3, 3, 3}, 2, 1},
                        {{3, 16, 6, 6}, {24, 16, 1, 1}, 1, 0}};
  for (const Case& c : cases) {
    INFO("x " << shape_str(c.x) << " w " << shape_str(c.w));
    Conv2dParams p;
    p.stride_h = p.stride_w = c.stride;
    p.pad_h = p.pad_w = c.pad;
    const Shape ys = {c.x[0], c.w[0], (c.x[2] + 2 * c.pad - c.w[2]) / c.stride + 1,
                      (c.x[3] + 2 * c.pad - c.w[3]) / c.stride + 1};
    const Tensor x = input(c.x, cpu), w = input(c.w, cpu), gy = input(ys, cpu);
    const TensorOptions on_cpu(DType::float32, cpu), on_gpu(DType::float32, dev);
    Tensor y_ref = empty(ys, on_cpu), gx_ref = empty(c.x, on_cpu), gw_ref = empty(c.w, on_cpu);
    dispatch(keys::conv2d, cpu, x, w, y_ref, p);
    dispatch(keys::conv2d_backward_input, cpu, gy, w, gx_ref, p);
    dispatch(keys::conv2d_backward_weight, cpu, x, gy, gw_ref, p);
    // TF32 rounds each operand to 10 mantissa bits: an error of about 2^-11 per product, growing with the
    // square root of the number of terms summed.
    auto tol = [](int64_t terms) { return 2e-3 * std::sqrt(static_cast<double>(terms)); };
    const Tensor x_cl = copy_in_format(x.to(dev), MemoryFormat::channels_last);
    const Tensor gy_cl = copy_in_format(gy.to(dev), MemoryFormat::channels_last);
    const Tensor wd = w.to(dev);
    {
      const PrecisionScope tf32(Precision::tf32);
      Tensor y_cl = empty_channels_last(ys, on_gpu), gx_cl = empty_channels_last(c.x, on_gpu), gw = empty(c.w, on_gpu);
      REQUIRE(dispatch_channels_last(keys::conv2d, dev, x_cl, wd, y_cl, p));
      CHECK(last_kernel(keys::conv2d, DeviceType::cuda) == "cudnn_graph_tf32");
      CHECK(compare(y_cl, y_ref, 1e-2, tol(c.w[1] * c.w[2] * c.w[3])) == "");
      REQUIRE(dispatch_channels_last(keys::conv2d_backward_input, dev, gy_cl, wd, gx_cl, p));
      CHECK(last_kernel(keys::conv2d_backward_input, DeviceType::cuda) == "cudnn_graph_tf32");
      CHECK(compare(gx_cl, gx_ref, 1e-2, tol(c.w[0] * c.w[2] * c.w[3])) == "");
      REQUIRE(dispatch_channels_last(keys::conv2d_backward_weight, dev, x_cl, gy_cl, gw, p));
      // 3x3, stride 1, channels in 32s (C x K <= 4096): the weight gradient is nhwc_3x3_tf32's
      // (tests/test_conv_wgrad_nhwc.cpp)
      const bool wgrad_3x3 = c.w[2] == 3 && c.stride == 1 && c.pad == 1 && c.w[0] % 32 == 0 && c.w[1] % 32 == 0 &&
                             c.w[0] * c.w[1] <= 4096;
      CHECK(last_kernel(keys::conv2d_backward_weight, DeviceType::cuda) ==
            (wgrad_3x3 ? "nhwc_3x3_tf32" : "cudnn_graph_tf32"));
      CHECK(compare(gw, gw_ref, 1e-2, tol(ys[0] * ys[2] * ys[3])) == "");
    }
    {  // strict FP32: the engines may use TF32, so the classic kernel serves
      const PrecisionScope fp32(Precision::fp32);
      Tensor y_cl = empty_channels_last(ys, on_gpu);
      REQUIRE(dispatch_channels_last(keys::conv2d, dev, x_cl, wd, y_cl, p));
      CHECK(last_kernel(keys::conv2d, DeviceType::cuda) == "cudnn");
      CHECK(compare(y_cl, y_ref, 1e-4, 1e-4) == "");
    }
  }
}

TEST_CASE("memory format [cuda]: the MNIST and captcha models agree in both formats on the GPU",
          "[memory_format][cuda]") {
  if (!have_gpu()) return;
  check_models(Device::cuda(0), 1e-3, 1e-4);
}
