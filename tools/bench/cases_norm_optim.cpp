// tools/bench/cases_norm_optim.cpp — bench cases of batch normalisation (training forward, inference,
// backward, running statistics) and of the fused optimizer steps (sgd_step, adam_step).
//
// Shape syntax:
//   batch_norm  NxCxS or NxCxHxW     x [N, C, S] (S = H*W), per-channel statistics over N*S values
//   batch_norm.running_stats  the same shape: its C running means and variances, statistics over N*S values
//   sgd_step, adam_step  SHAPE[,SHAPE...]   the parameter tensors of one step, "32x1x3x3,32,..."
// FLOP models (per element of x or of the parameters; conventions in tools/bench/case.h):
//   batch_norm (training) 8: the mean (1), the variance (3: subtract, square, add), y = xhat*gamma+beta
//   with per-channel scale (4: subtract, multiply, FMA); inference 2 (one FMA with per-channel constants);
//   backward 10: the two sums (1 + 4 with xhat) and grad_x (5)
//   batch_norm_relu: batch_norm's (the clamp not counted); its backward 11 (the mask's select) and one
//   more tensor read (the forward's output)
//   batch_norm.running_stats 9 per channel: the mean's blend (3), the variance from invstd (3), its blend
//   with the unbiasing factor (3)
//   sgd_step 7 with momentum 0.9 and weight decay (g + wd p: 2, b = m b + g': 3, p -= lr b: 2)
//   adam_step 14: m (3), v (4), the two bias corrections (2), sqrt, add eps, divide, p -= lr * ... (2)
// Bytes: x (or p, g and the optimizer state) read once, every output written once.
#include <algorithm>
#include <memory>

#include "core/strings.h"
#include "ops/kernel_signatures.h"
#include "tools/bench/case.h"

namespace minidl {
namespace bench {

namespace {

const char* kBatchNormSyntax = "NxCxS";

// x's shape as the kernels see it, [N, C, S], from "NxC", "NxCxS" or "NxCxHxW".
Shape read_batch_norm(const std::string& key, const std::string& spec) {
  SpecReader r(key, spec, kBatchNormSyntax);
  r.expect_parts(1, 1, "x's shape");
  const Shape s = r.sizes(0, {"N", "C", "H", "W"}, 2);
  r.numel(s, "x");
  int64_t spatial = 1;
  for (size_t i = 2; i < s.size(); ++i) spatial *= s[i];
  return {s[0], s[1], spatial};
}

// forward: x, y and four [C] vectors; backward: x, y, grad_y, grad_x (and copies made on the CPU) and
// six [C] vectors.
double batch_norm_bytes(const std::string& key, const std::string& spec) {
  const Shape xs = read_batch_norm(key, spec);
  if (key == "batch_norm.running_stats") return 8 * float_bytes(xs[1]);  // four [C] vectors and pristine copies
  const bool backward = key.find(".backward") != std::string::npos;
  return (backward ? 6 : 2) * float_bytes(shape_numel(xs)) + 8 * float_bytes(xs[1]);
}

BenchCase batch_norm_case(const std::string& key, const std::string& spec, Device d) {
  const Shape read = read_batch_norm(key, spec);
  const int64_t batch = read[0], channels = read[1], spatial = read[2];
  const Shape xs = {batch, channels, spatial}, cs = {channels};
  const double n = static_cast<double>(shape_numel(xs));
  const double eps = 1e-5;
  if (key == "batch_norm.running_stats") {  // only [C] tensors: x is not made
    BenchCase c;
    // In place: the running tensors are restored from pristine copies before every call.
    const Tensor save_mean = normal_input(cs, d), save_invstd = uniform_input(cs, 0.5, 2.0, d);
    const Tensor mean0 = normal_input(cs, d), var0 = uniform_input(cs, 0.5, 1.5, d);
    Tensor mean = output(cs, d), var = output(cs, d);
    const int64_t count = std::max<int64_t>(2, batch * spatial);  // the key's contract: M >= 2
    c.flops = 9 * static_cast<double>(channels);
    c.bytes = 6 * static_cast<double>(channels) * kFloatBytes;
    c.prepare = [=](const KernelInfo&) mutable {
      copy_(mean, mean0);
      copy_(var, var0);
      return std::string();
    };
    c.run = [=](const KernelInfo& k) mutable {
      return call_as<BatchNormRunningStatsKernel>(k, save_mean, save_invstd, 0.1, eps, count, mean, var);
    };
    c.outputs = [=] { return std::vector<Tensor>{mean, var}; };
    return c;
  }
  Tensor x = normal_input(xs, d), gamma = uniform_input(cs, 0.5, 1.5, d), beta = uniform_input(cs, -0.5, 0.5, d);
  BenchCase c;
  if (key == "batch_norm" || key == "batch_norm_relu") {
    Tensor y = output(xs, d), mean = output(cs, d), invstd = output(cs, d);
    c.flops = 8 * n;
    c.bytes = 2 * n * kFloatBytes;
    c.run = [=](const KernelInfo& k) mutable {
      return call_as<BatchNormKernel>(k, x, gamma, beta, eps, y, mean, invstd);
    };
    c.outputs = [=] { return std::vector<Tensor>{y, mean, invstd}; };
  } else if (key == "batch_norm.inference") {
    Tensor mean = uniform_input(cs, -0.1, 0.1, d), var = uniform_input(cs, 0.5, 1.5, d), y = output(xs, d);
    c.flops = 2 * n;
    c.bytes = 2 * n * kFloatBytes;
    c.run = [=](const KernelInfo& k) mutable {
      return call_as<BatchNormInferenceKernel>(k, x, gamma, beta, mean, var, eps, y);
    };
    c.outputs = [=] { return std::vector<Tensor>{y}; };
  } else {
    // The backward reads the training forward's saved statistics: made by the naive forward on the CPU.
    Tensor x_cpu = x.to(Device::cpu()), y_cpu = output(xs, Device::cpu());
    Tensor mean_cpu = output(cs, Device::cpu()), invstd_cpu = output(cs, Device::cpu());
    run_naive_cpu<BatchNormKernel>("batch_norm", x_cpu, gamma.to(Device::cpu()), beta.to(Device::cpu()), eps, y_cpu,
                                   mean_cpu, invstd_cpu);
    Tensor mean = mean_cpu.to(d), invstd = invstd_cpu.to(d), grad_y = normal_input(xs, d);
    Tensor grad_x = output(xs, d), grad_gamma = output(cs, d), grad_beta = output(cs, d);
    c.flops = 10 * n;
    c.bytes = 3 * n * kFloatBytes;
    if (key == "batch_norm_relu.backward") {
      // The ReLU's mask comes from the forward's output: batch_norm's y, clamped at 0 (y itself serves,
      // as only its sign is read).
      Tensor y = y_cpu.to(d);
      c.flops = 11 * n;
      c.bytes = 4 * n * kFloatBytes;
      c.run = [=](const KernelInfo& k) mutable {
        return call_as<BatchNormReluBackwardKernel>(k, x, y, grad_y, gamma, mean, invstd, grad_x, grad_gamma,
                                                    grad_beta);
      };
    } else {
      c.run = [=](const KernelInfo& k) mutable {
        return call_as<BatchNormBackwardKernel>(k, x, grad_y, gamma, mean, invstd, grad_x, grad_gamma, grad_beta);
      };
    }
    c.outputs = [=] { return std::vector<Tensor>{grad_x, grad_gamma, grad_beta}; };
  }
  return c;
}

std::vector<Tensor> concat_tensors(std::vector<Tensor> a, const std::vector<Tensor>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The optimizer's tensors: pristine copies, and the working tensors a step updates in place (restored
// from the pristine ones before every call, untimed).
struct OptimizerState {
  std::vector<Tensor> params, grads, first, second;      // working (first: momentum or m, second: v)
  std::vector<Tensor> params0, first0, second0;          // pristine
  void restore() {
    for (size_t i = 0; i < params.size(); ++i) {
      copy_(params[i], params0[i]);
      copy_(first[i], first0[i]);
      copy_(second[i], second0[i]);
    }
  }
};

const char* kOptimizerSyntax = "SHAPE[,SHAPE...]";
constexpr size_t kMaxParameters = 256;

// The parameter shapes, each of 1 to 8 sizes.
std::vector<Shape> read_optimizer(const std::string& key, const std::string& spec) {
  SpecReader r(key, spec, kOptimizerSyntax);
  r.expect_parts(1, kMaxParameters, "the parameters' shapes");
  std::vector<Shape> shapes;
  for (size_t i = 0; i < r.parts(); ++i) {
    shapes.push_back(r.sizes(i, "D", 1, 8));
    r.numel(shapes.back(), str_cat("parameter ", i + 1));
  }
  return shapes;
}

// Seven tensors per parameter: p, g, the two moments, and their pristine copies (but g's).
double optimizer_bytes(const std::string& key, const std::string& spec) {
  double n = 0;
  for (const Shape& s : read_optimizer(key, spec)) n += static_cast<double>(shape_numel(s));
  return 7 * n * kFloatBytes;
}

BenchCase optimizer_case(const std::string& key, const std::string& spec, Device d) {
  auto state = std::make_shared<OptimizerState>();
  double n = 0;
  for (const Shape& s : read_optimizer(key, spec)) {
    n += static_cast<double>(shape_numel(s));
    state->params0.push_back(normal_input(s, d));
    state->grads.push_back(normal_input(s, d));
    state->first0.push_back(normal_input(s, d));
    state->second0.push_back(uniform_input(s, 0, 1, d));  // v >= 0
    state->params.push_back(output(s, d));
    state->first.push_back(output(s, d));
    state->second.push_back(output(s, d));
  }
  BenchCase c;
  c.prepare = [state](const KernelInfo&) {
    state->restore();
    return std::string();
  };
  if (key == "sgd_step") {
    SgdParams h;
    h.lr = 0.01, h.momentum = 0.9, h.weight_decay = 5e-4;
    c.flops = 7 * n;
    c.bytes = 5 * n * kFloatBytes;  // read p, g, b; write p, b
    c.run = [state, h](const KernelInfo& k) {
      return call_as<SgdStepKernel>(k, state->params, state->grads, state->first, h);
    };
    c.outputs = [state] { return concat_tensors(state->params, state->first); };
  } else {
    AdamParams h;
    h.lr = 1e-3, h.step = 10;
    c.flops = 14 * n;
    c.bytes = 7 * n * kFloatBytes;  // read p, g, m, v; write p, m, v
    c.run = [state, h](const KernelInfo& k) {
      return call_as<AdamStepKernel>(k, state->params, state->grads, state->first, state->second, h);
    };
    c.outputs = [state] { return concat_tensors(concat_tensors(state->params, state->first), state->second); };
  }
  return c;
}

// The parameter shapes of a model, as an optimizer spec.
std::string shapes_spec(const std::vector<Shape>& shapes) {
  std::string spec;
  for (const Shape& s : shapes) {
    const std::string dims = join(s, "x", [](int64_t v) { return std::to_string(v); });
    spec += (spec.empty() ? "" : ",") + dims;
  }
  return spec;
}

// MNIST's CNN (examples/mnist/model.h): two convs and two linear layers, with biases.
std::string mnist_parameters() {
  return shapes_spec({{32, 1, 3, 3}, {32}, {64, 32, 3, 3}, {64}, {128, 9216}, {128}, {10, 128}, {10}});
}

// The captcha model (examples/captcha/model.h): ten convs without bias, each with a batch norm (gamma,
// beta), a 2-layer bidirectional GRU(512 -> 128) and the classifier (256 -> 37).
std::string captcha_parameters() {
  std::vector<Shape> shapes;
  int64_t in = 3;
  for (int64_t channels : {32, 64, 128, 256, 256})
    for (int conv = 0; conv < 2; ++conv, in = channels) {
      shapes.push_back({channels, in, 3, 3});
      shapes.push_back({channels});
      shapes.push_back({channels});
    }
  for (int64_t layer_in : {512, 256})
    for (int direction = 0; direction < 2; ++direction) {
      shapes.push_back({384, layer_in});
      shapes.push_back({384, 128});
      shapes.push_back({384});
      shapes.push_back({384});
    }
  shapes.push_back({37, 256});
  shapes.push_back({37});
  return shapes_spec(shapes);
}

}  // namespace

void add_norm_optim_cases(std::vector<CaseFamily>& families) {
  families.push_back({concat(MINIDL_BENCH_KEYS(BatchNormKernel, {"batch_norm"}),
                             concat(MINIDL_BENCH_KEYS(BatchNormInferenceKernel, {"batch_norm.inference"}),
                                    concat(MINIDL_BENCH_KEYS(BatchNormBackwardKernel, {"batch_norm.backward"}),
                                           MINIDL_BENCH_KEYS(BatchNormRunningStatsKernel,
                                                             {"batch_norm.running_stats"})))),
                      kBatchNormSyntax,
                      "x [N, C, S] (NxCxHxW is read as S = H*W); statistics per channel",
                      "3x4x5",
                      {{"64x128", "BatchNorm1d-sized, [N, C]"},
                       {"128x256x8x24", "captcha block-4 batch norm"},
                       {"128x32x64x192", "large: captcha block-1 batch norm, 200 MiB"}},
                      batch_norm_bytes,
                      batch_norm_case});
  families.push_back({concat(MINIDL_BENCH_KEYS(BatchNormKernel, {"batch_norm_relu"}),
                             MINIDL_BENCH_KEYS(BatchNormReluBackwardKernel, {"batch_norm_relu.backward"})),
                      kBatchNormSyntax,
                      "x [N, C, S] (NxCxHxW is read as S = H*W); statistics per channel, then a ReLU",
                      "3x4x5",
                      {{"64x128", "BatchNorm1d-sized, [N, C]"},
                       {"128x256x8x24", "captcha block-4 batch norm"},
                       {"128x32x64x192", "large: captcha block-1 batch norm, 200 MiB"}},
                      batch_norm_bytes,
                      batch_norm_case});
  families.push_back({concat(MINIDL_BENCH_KEYS(SgdStepKernel, {"sgd_step"}),
                             MINIDL_BENCH_KEYS(AdamStepKernel, {"adam_step"})),
                      kOptimizerSyntax,
                      "the shapes of the parameter tensors updated in one step",
                      "3x4,5",
                      {{mnist_parameters(), "MNIST CNN, 1.2 M parameters"},
                       {captcha_parameters(), "captcha model, 3.2 M parameters"},
                       {"16777216", "large: one 64 MiB tensor"}},
                      optimizer_bytes,
                      optimizer_case});
}

}  // namespace bench
}  // namespace minidl
