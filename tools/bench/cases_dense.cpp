// tools/bench/cases_dense.cpp — bench cases of matmul, the three conv2d stages and pooling.
//
// Shape syntax:
//   matmul      MxNxK[,ta][,tb][,bB]   out [B, M, N] = op(a) op(b), op(a) [M, K], op(b) [K, N]; ta / tb
//                                      store a / b transposed (the kernels get the transpose flags);
//                                      bB makes B products (default 1)
//   conv2d      NxCxHxW,OxCxKHxKW[,sSpP]   x and w of the forward; every stage of the same layer (backward
//                                      stages get grad_y of the forward's output shape); s stride, p
//                                      padding, each N or HxW (s2x1); default s1p0
//   max_pool2d, avg_pool2d  NxCxHxW,kK[sS][pP]   window K, stride S (default K), padding P (default 0),
//                                      each N or HxW (k2x1)
// FLOP models:
//   matmul 2*B*M*N*K (a multiply and an add per term)
//   conv2d every stage 2*N*O*OH*OW*C*KH*KW (the same products, summed in another order)
//   pooling: one compare (max) or add (avg) per window position: N*C*OH*OW*KH*KW; the backward of
//   max pooling the same compares to find the winner, of avg pooling one add per position
// Bytes: operands read once, outputs written once.
#include "ops/kernel_signatures.h"
#include "tools/bench/case.h"

namespace minidl {
namespace bench {

namespace {

const char* kMatmulSyntax = "MxNxK[,ta][,tb][,bB]";

BenchCase matmul_case(const std::string& key, const std::string& spec, Device d) {
  const std::vector<std::string> parts = split_spec(spec);
  const Shape mnk = parse_dims(parts[0], "bench " + key);
  if (mnk.size() != 3) bad_spec(key, spec, kMatmulSyntax, "three sizes M x N x K");
  bool ta = false, tb = false;
  int64_t batch = 1;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i] == "ta") {
      ta = true;
    } else if (parts[i] == "tb") {
      tb = true;
    } else {
      const auto letters = parse_letters(parts[i], "bench " + key);
      if (letters.size() != 1 || letters[0].first != 'b' || letters[0].second.first < 1)
        bad_spec(key, spec, kMatmulSyntax, "options are ta, tb and bB");
      batch = letters[0].second.first;
    }
  }
  const int64_t m = mnk[0], n = mnk[1], k = mnk[2];
  Tensor a = uniform_input({batch, ta ? k : m, ta ? m : k}, -1, 1, d);
  Tensor b = uniform_input({batch, tb ? n : k, tb ? k : n}, -1, 1, d);
  Tensor out = output({batch, m, n}, d);
  BenchCase c;
  c.flops = 2.0 * batch * m * n * k;
  c.bytes = static_cast<double>(batch) * (m * k + k * n + m * n) * kFloatBytes;
  c.run = [=](const KernelInfo& kernel) mutable { return call_as<MatmulKernel>(kernel, a, b, out, ta, tb); };
  c.outputs = [=] { return std::vector<Tensor>{out}; };
  return c;
}

const char* kConvSyntax = "NxCxHxW,OxCxKHxKW[,sSpP]";

BenchCase conv_case(const std::string& key, const std::string& spec, Device d) {
  const std::vector<std::string> parts = split_spec(spec);
  if (parts.size() < 2 || parts.size() > 3) bad_spec(key, spec, kConvSyntax, "x's shape, w's shape, options");
  const Shape xs = parse_dims(parts[0], "bench " + key), ws = parse_dims(parts[1], "bench " + key);
  if (xs.size() != 4 || ws.size() != 4 || xs[1] != ws[1]) bad_spec(key, spec, kConvSyntax, "4-D x and w, same C");
  Conv2dParams p;
  if (parts.size() == 3)
    for (const auto& [letter, v] : parse_letters(parts[2], "bench " + key)) {
      if (letter == 's') {
        p.stride_h = static_cast<int>(v.first);
        p.stride_w = static_cast<int>(v.second);
      } else if (letter == 'p') {
        p.pad_h = static_cast<int>(v.first);
        p.pad_w = static_cast<int>(v.second);
      } else {
        bad_spec(key, spec, kConvSyntax, "options are s and p");
      }
    }
  const int64_t oh = (xs[2] + 2 * p.pad_h - ws[2]) / p.stride_h + 1;
  const int64_t ow = (xs[3] + 2 * p.pad_w - ws[3]) / p.stride_w + 1;
  if (oh < 1 || ow < 1) bad_spec(key, spec, kConvSyntax, "the window is larger than the padded input");
  const Shape ys = {xs[0], ws[0], oh, ow};
  const double x_bytes = shape_numel(xs) * kFloatBytes, w_bytes = shape_numel(ws) * kFloatBytes,
               y_bytes = shape_numel(ys) * kFloatBytes;
  BenchCase c;
  c.flops = 2.0 * xs[0] * ws[0] * oh * ow * ws[1] * ws[2] * ws[3];
  c.bytes = x_bytes + w_bytes + y_bytes;  // each stage reads two of the three and writes the third
  if (key == "conv2d") {
    Tensor x = uniform_input(xs, -1, 1, d), w = uniform_input(ws, -1, 1, d), y = output(ys, d);
    c.run = [=](const KernelInfo& k) mutable { return call_as<Conv2dKernel>(k, x, w, y, p); };
    c.outputs = [=] { return std::vector<Tensor>{y}; };
  } else if (key == "conv2d.backward_input") {
    Tensor gy = uniform_input(ys, -1, 1, d), w = uniform_input(ws, -1, 1, d), gx = output(xs, d);
    c.run = [=](const KernelInfo& k) mutable { return call_as<Conv2dBackwardInputKernel>(k, gy, w, gx, p); };
    c.outputs = [=] { return std::vector<Tensor>{gx}; };
  } else {
    Tensor x = uniform_input(xs, -1, 1, d), gy = uniform_input(ys, -1, 1, d), gw = output(ws, d);
    c.run = [=](const KernelInfo& k) mutable { return call_as<Conv2dBackwardWeightKernel>(k, x, gy, gw, p); };
    c.outputs = [=] { return std::vector<Tensor>{gw}; };
  }
  return c;
}

const char* kPoolSyntax = "NxCxHxW,kK[sS][pP]";

BenchCase pool_case(const std::string& key, const std::string& spec, Device d) {
  const std::vector<std::string> parts = split_spec(spec);
  if (parts.size() != 2) bad_spec(key, spec, kPoolSyntax, "x's shape and the window");
  const Shape xs = parse_dims(parts[0], "bench " + key);
  if (xs.size() != 4) bad_spec(key, spec, kPoolSyntax, "4-D x");
  Pool2dParams p;
  bool have_window = false, have_stride = false;
  for (const auto& [letter, v] : parse_letters(parts[1], "bench " + key)) {
    const int h = static_cast<int>(v.first), w = static_cast<int>(v.second);
    if (letter == 'k') {
      p.kernel_h = h, p.kernel_w = w, have_window = true;
    } else if (letter == 's') {
      p.stride_h = h, p.stride_w = w, have_stride = true;
    } else if (letter == 'p') {
      p.pad_h = h, p.pad_w = w;
    } else {
      bad_spec(key, spec, kPoolSyntax, "options are k, s and p");
    }
  }
  if (!have_window) bad_spec(key, spec, kPoolSyntax, "the window kK is required");
  if (!have_stride) p.stride_h = p.kernel_h, p.stride_w = p.kernel_w;
  const int64_t oh = (xs[2] + 2 * p.pad_h - p.kernel_h) / p.stride_h + 1;
  const int64_t ow = (xs[3] + 2 * p.pad_w - p.kernel_w) / p.stride_w + 1;
  if (oh < 1 || ow < 1) bad_spec(key, spec, kPoolSyntax, "the window is larger than the padded input");
  const Shape ys = {xs[0], xs[1], oh, ow};
  const double x_bytes = shape_numel(xs) * kFloatBytes, y_bytes = shape_numel(ys) * kFloatBytes;
  const double positions = static_cast<double>(shape_numel(ys)) * p.kernel_h * p.kernel_w;
  Tensor x = uniform_input(xs, -1, 1, d);
  BenchCase c;
  c.flops = positions;
  if (key == "max_pool2d" || key == "avg_pool2d") {
    Tensor y = output(ys, d);
    c.bytes = x_bytes + y_bytes;
    c.run = [=](const KernelInfo& k) mutable { return call_as<Pool2dKernel>(k, x, y, p); };
    c.outputs = [=] { return std::vector<Tensor>{y}; };
  } else if (key == "max_pool2d.backward") {
    // The backward compares x with the forward's y: made by the naive forward on the CPU.
    Tensor x_cpu = x.to(Device::cpu()), y_cpu = output(ys, Device::cpu());
    run_naive_cpu<Pool2dKernel>("max_pool2d", x_cpu, y_cpu, p);
    Tensor y = y_cpu.to(d), gy = uniform_input(ys, -1, 1, d), gx = output(xs, d);
    c.bytes = 2 * x_bytes + 2 * y_bytes;
    c.run = [=](const KernelInfo& k) mutable { return call_as<MaxPool2dBackwardKernel>(k, x, y, gy, gx, p); };
    c.outputs = [=] { return std::vector<Tensor>{gx}; };
  } else {
    Tensor gy = uniform_input(ys, -1, 1, d), gx = output(xs, d);
    c.bytes = x_bytes + y_bytes;
    c.run = [=](const KernelInfo& k) mutable { return call_as<AvgPool2dBackwardKernel>(k, gy, gx, p); };
    c.outputs = [=] { return std::vector<Tensor>{gx}; };
  }
  return c;
}

}  // namespace

void add_dense_cases(std::vector<CaseFamily>& families) {
  families.push_back({MINIDL_BENCH_KEYS(MatmulKernel, {"matmul"}),
                      kMatmulSyntax,
                      "out [B, M, N] = op(a) [M, K] op(b) [K, N]; ta, tb: a, b stored transposed; bB: B products",
                      "7x5x3,ta",
                      {{"64x128x9216,tb", "MNIST fc1 forward, x W^T"},
                       {"128x9216x64,ta", "MNIST fc1 weight gradient, grad_y^T x"},
                       {"1536x384x512,tb", "captcha GRU input projection, 12 steps x 128"},
                       {"1024x1024x1024", "large on a CPU: the GEMM ladder's case", "cpu"},
                       {"4096x4096x4096", "large on a GPU", "cuda"}},
                      matmul_case});
  families.push_back({concat(MINIDL_BENCH_KEYS(Conv2dKernel, {"conv2d"}),
                             concat(MINIDL_BENCH_KEYS(Conv2dBackwardInputKernel, {"conv2d.backward_input"}),
                                    MINIDL_BENCH_KEYS(Conv2dBackwardWeightKernel, {"conv2d.backward_weight"}))),
                      kConvSyntax,
                      "x [N, C, H, W], w [O, C, KH, KW]; s stride, p padding (N or HxW each)",
                      "2x3x7x6,4x3x3x2,s2x1p1",
                      {{"64x1x28x28,32x1x3x3", "MNIST conv1"},
                       {"64x32x26x26,64x32x3x3", "MNIST conv2"},
                       {"128x128x8x24,256x128x3x3,s1p1", "captcha block-4 first conv"},
                       {"128x64x32x32,128x64x3x3,s1p1", "large"}},
                      conv_case});
  families.push_back({concat(MINIDL_BENCH_KEYS(Pool2dKernel, {"max_pool2d", "avg_pool2d"}),
                             concat(MINIDL_BENCH_KEYS(MaxPool2dBackwardKernel, {"max_pool2d.backward"}),
                                    MINIDL_BENCH_KEYS(AvgPool2dBackwardKernel, {"avg_pool2d.backward"}))),
                      kPoolSyntax,
                      "x [N, C, H, W]; k window, s stride (default k), p padding (N or HxW each)",
                      "2x3x7x6,k3s2p1",
                      {{"64x64x24x24,k2", "MNIST pool"},
                       {"128x256x4x12,k2x1", "captcha last pool (2x1)"},
                       {"128x32x64x192,k2", "large: captcha first pool, 200 MiB"}},
                      pool_case});
}

}  // namespace bench
}  // namespace minidl
