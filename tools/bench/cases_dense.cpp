// tools/bench/cases_dense.cpp — bench cases of matmul, the three conv2d stages, conv2d_bias_relu and pooling.
//
// Shape syntax:
//   matmul      MxNxK[,ta][,tb][,bB]   out [B, M, N] = op(a) op(b), op(a) [M, K], op(b) [K, N]; ta / tb
//                                      store a / b transposed (the kernels get the transpose flags);
//                                      bB makes B products (default 1)
//   conv2d      NxCxHxW,OxCxKHxKW[,sSpP][,nhwc]   x and w of the forward; every stage of the same layer
//                                      (backward stages get grad_y of the forward's output shape); s stride,
//                                      p padding, each N or HxW (s2x1); default s1p0; nhwc: the
//                                      kernels declared to take channels-last activations (x, y and
//                                      their gradients) get them so, the others NCHW copies
//   conv2d_bias_relu  as conv2d (the forward, with a bias in [-0.5, 0.5] and the ReLU)
//   max_pool2d, avg_pool2d  NxCxHxW,kK[sS][pP]   window K, stride S (default K), padding P (default 0),
//                                      each N or HxW (k2x1)
// FLOP models:
//   matmul 2*B*M*N*K (a multiply and an add per term)
//   conv2d every stage 2*N*O*OH*OW*C*KH*KW (the same products, summed in another order)
//   pooling: one compare (max) or add (avg) per window position: N*C*OH*OW*KH*KW; the backward of
//   max pooling the same compares to find the winner, of avg pooling one add per position
// Bytes: operands read once, outputs written once.
#include <memory>

#include "core/memory_format.h"
#include "ops/kernel_signatures.h"
#include "ops/op_checks.h"
#include "tools/bench/case.h"

namespace minidl {
namespace bench {

namespace {

const char* kMatmulSyntax = "MxNxK[,ta][,tb][,bB]";

struct MatmulSpec {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool ta = false, tb = false;
  double bytes = 0;  // a, b, out
};

MatmulSpec read_matmul(const std::string& key, const std::string& spec) {
  SpecReader r(key, spec, kMatmulSyntax);
  r.expect_parts(1, 4, "M x N x K, then the options ta, tb, bB");
  const Shape mnk = r.sizes(0, {"M", "N", "K"});
  MatmulSpec s;
  s.m = mnk[0], s.n = mnk[1], s.k = mnk[2];
  for (size_t i = 1; i < r.parts(); ++i) {
    if (r.word(i, "ta")) {
      s.ta = true;
    } else if (r.word(i, "tb")) {
      s.tb = true;
    } else if (r.part(i)[0] == 'b') {
      const LetterOption o = r.options(i, "b", false).front();
      r.at_least(o, "the batch", 1);
      s.batch = o.first;
    } else {
      r.fail(str_cat("unknown option '", r.part(i), "' (options: ta, tb, bB)"));
    }
  }
  s.bytes = float_bytes(r.numel({s.batch, s.m, s.k}, "a")) + float_bytes(r.numel({s.batch, s.k, s.n}, "b")) +
            float_bytes(r.numel({s.batch, s.m, s.n}, "out"));
  return s;
}

BenchCase matmul_case(const std::string& key, const std::string& spec, Device d) {
  const MatmulSpec s = read_matmul(key, spec);
  const int64_t m = s.m, n = s.n, k = s.k, batch = s.batch;
  const bool ta = s.ta, tb = s.tb;
  Tensor a = uniform_input({batch, ta ? k : m, ta ? m : k}, -1, 1, d);
  Tensor b = uniform_input({batch, tb ? n : k, tb ? k : n}, -1, 1, d);
  Tensor out = output({batch, m, n}, d);
  BenchCase c;
  c.flops = 2.0 * batch * m * n * k;
  c.bytes = s.bytes;  // every operand read once and the output written once: the case's tensors
  c.run = [=](const KernelInfo& kernel) mutable { return call_as<MatmulKernel>(kernel, a, b, out, ta, tb); };
  c.outputs = [=] { return std::vector<Tensor>{out}; };
  return c;
}

const char* kConvSyntax = "NxCxHxW,OxCxKHxKW[,sSpP][,nhwc]";

struct ConvSpec {
  Shape xs, ws, ys;  // x, w, y
  Conv2dParams p;
  bool nhwc = false;  // activations channels-last
  double bytes = 0;   // x, w, y: each stage holds the three (two inputs and its output); with nhwc x and y twice
};

ConvSpec read_conv(const std::string& key, const std::string& spec) {
  SpecReader r(key, spec, kConvSyntax);
  r.expect_parts(2, 4, "x's shape, w's shape, then the options sSpP and nhwc");
  ConvSpec c;
  c.xs = r.sizes(0, {"N", "C", "H", "W"});
  c.ws = r.sizes(1, {"O", "C", "KH", "KW"});
  for (size_t i = 2; i < r.parts(); ++i) {
    if (r.word(i, "nhwc")) {
      c.nhwc = true;
      continue;
    }
    for (const LetterOption& o : r.options(i, "sp", true)) {
      if (o.letter == 's') {
        r.at_least(o, "stride", 1);
        c.p.stride_h = static_cast<int>(o.first), c.p.stride_w = static_cast<int>(o.second);
      } else {
        r.at_least(o, "padding", 0);
        c.p.pad_h = static_cast<int>(o.first), c.p.pad_w = static_cast<int>(o.second);
      }
    }
  }
  // The op's own rules (the same channels, the kernel within the padded input), in its words.
  try {
    c.ys = conv2d_output_shape(c.xs, c.ws, c.p);
  } catch (const Error& e) {
    r.fail(e.what());
  }
  c.bytes = float_bytes(r.numel(c.xs, "x")) + float_bytes(r.numel(c.ws, "w")) + float_bytes(r.numel(c.ys, "y"));
  if (c.nhwc) c.bytes += float_bytes(r.numel(c.xs, "x")) + float_bytes(r.numel(c.ys, "y"));  // the NHWC copies
  return c;
}

// With nhwc, the kernels declared to take channels-last activations get channels-last copies; every other
// kernel (the CPU reference among them) gets the NCHW tensors of the same values, as the op front ends would
// hand it copies. A case holds both, and `outputs` returns the one the last call wrote.
BenchCase conv_case(const std::string& key, const std::string& spec, Device d) {
  const ConvSpec spec_read = read_conv(key, spec);
  const Shape &xs = spec_read.xs, &ws = spec_read.ws, &ys = spec_read.ys;
  const Conv2dParams p = spec_read.p;
  const bool nhwc = spec_read.nhwc;
  auto channels_last = [&](const Tensor& t) { return nhwc ? copy_in_format(t, MemoryFormat::channels_last) : t; };
  auto last_call_nhwc = std::make_shared<bool>(false);
  auto use_nhwc = [nhwc, last_call_nhwc](const KernelInfo& k) {
    return *last_call_nhwc = nhwc && serves_channels_last(k.key, k.device, k.name);
  };
  const int64_t oh = ys[2], ow = ys[3];
  const double x_bytes = shape_numel(xs) * kFloatBytes, w_bytes = shape_numel(ws) * kFloatBytes,
               y_bytes = shape_numel(ys) * kFloatBytes;
  BenchCase c;
  c.flops = 2.0 * xs[0] * ws[0] * oh * ow * ws[1] * ws[2] * ws[3];
  c.bytes = x_bytes + w_bytes + y_bytes;  // each stage reads two of the three and writes the third
  if (key == "conv2d_bias_relu") {
    Tensor x = uniform_input(xs, -1, 1, d), w = uniform_input(ws, -1, 1, d), y = output(ys, d);
    Tensor b = uniform_input({ws[0]}, -0.5, 0.5, d);
    Tensor x_cl = channels_last(x), y_cl = channels_last(y);
    c.bytes += ws[0] * kFloatBytes;
    c.run = [=](const KernelInfo& k) mutable {
      return use_nhwc(k) ? call_as<Conv2dBiasReluKernel>(k, x_cl, w, b, y_cl, p)
                         : call_as<Conv2dBiasReluKernel>(k, x, w, b, y, p);
    };
    c.outputs = [=] { return std::vector<Tensor>{*last_call_nhwc ? y_cl : y}; };
  } else if (key == "conv2d") {
    Tensor x = uniform_input(xs, -1, 1, d), w = uniform_input(ws, -1, 1, d), y = output(ys, d);
    Tensor x_cl = channels_last(x), y_cl = channels_last(y);
    c.run = [=](const KernelInfo& k) mutable {
      return use_nhwc(k) ? call_as<Conv2dKernel>(k, x_cl, w, y_cl, p) : call_as<Conv2dKernel>(k, x, w, y, p);
    };
    c.outputs = [=] { return std::vector<Tensor>{*last_call_nhwc ? y_cl : y}; };
  } else if (key == "conv2d.backward_input") {
    Tensor gy = uniform_input(ys, -1, 1, d), w = uniform_input(ws, -1, 1, d), gx = output(xs, d);
    Tensor gy_cl = channels_last(gy), gx_cl = channels_last(gx);
    c.run = [=](const KernelInfo& k) mutable {
      return use_nhwc(k) ? call_as<Conv2dBackwardInputKernel>(k, gy_cl, w, gx_cl, p)
                         : call_as<Conv2dBackwardInputKernel>(k, gy, w, gx, p);
    };
    c.outputs = [=] { return std::vector<Tensor>{*last_call_nhwc ? gx_cl : gx}; };
  } else {
    Tensor x = uniform_input(xs, -1, 1, d), gy = uniform_input(ys, -1, 1, d), gw = output(ws, d);
    Tensor x_cl = channels_last(x), gy_cl = channels_last(gy);
    c.run = [=](const KernelInfo& k) mutable {
      return use_nhwc(k) ? call_as<Conv2dBackwardWeightKernel>(k, x_cl, gy_cl, gw, p)
                         : call_as<Conv2dBackwardWeightKernel>(k, x, gy, gw, p);
    };
    c.outputs = [=] { return std::vector<Tensor>{gw}; };
  }
  return c;
}

const char* kPoolSyntax = "NxCxHxW,kK[sS][pP]";

struct PoolSpec {
  Shape xs, ys;  // x, y
  Pool2dParams p;
  double bytes = 0;  // at most two of x and two of y (a max backward: x, y made on the CPU, grad_y, grad_x)
};

PoolSpec read_pool(const std::string& key, const std::string& spec) {
  SpecReader r(key, spec, kPoolSyntax);
  r.expect_parts(2, 2, "x's shape, then the window kK[sS][pP]");
  PoolSpec s;
  s.xs = r.sizes(0, {"N", "C", "H", "W"});
  bool have_window = false, have_stride = false;
  for (const LetterOption& o : r.options(1, "ksp", true)) {
    const int h = static_cast<int>(o.first), w = static_cast<int>(o.second);
    if (o.letter == 'k') {
      r.at_least(o, "window", 1);
      s.p.kernel_h = h, s.p.kernel_w = w, have_window = true;
    } else if (o.letter == 's') {
      r.at_least(o, "stride", 1);
      s.p.stride_h = h, s.p.stride_w = w, have_stride = true;
    } else {
      r.at_least(o, "padding", 0);
      s.p.pad_h = h, s.p.pad_w = w;
    }
  }
  if (!have_window) r.fail("the window kK is required");
  if (!have_stride) s.p.stride_h = s.p.kernel_h, s.p.stride_w = s.p.kernel_w;
  // The op's own rules (padding at most half the window, the window within the padded input).
  const std::string op = key.substr(0, key.find('.'));
  try {
    s.ys = pool2d_output_shape(op.c_str(), s.xs, s.p);
  } catch (const Error& e) {
    r.fail(e.what());
  }
  s.bytes = 2 * float_bytes(r.numel(s.xs, "x")) + 2 * float_bytes(r.numel(s.ys, "y"));
  return s;
}

BenchCase pool_case(const std::string& key, const std::string& spec, Device d) {
  const PoolSpec spec_read = read_pool(key, spec);
  const Shape &xs = spec_read.xs, &ys = spec_read.ys;
  const Pool2dParams p = spec_read.p;
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
                      [](const std::string& key, const std::string& spec) { return read_matmul(key, spec).bytes; },
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
                      [](const std::string& key, const std::string& spec) { return read_conv(key, spec).bytes; },
                      conv_case});
  families.push_back({MINIDL_BENCH_KEYS(Conv2dBiasReluKernel, {"conv2d_bias_relu"}),
                      kConvSyntax,
                      "relu(conv(x, w) + bias): x [N, C, H, W], w [O, C, KH, KW]; s stride, p padding",
                      "2x3x7x6,4x3x3x2,s2x1p1",
                      {{"64x1x28x28,32x1x3x3", "MNIST conv1 + ReLU"},
                       {"64x32x26x26,64x32x3x3", "MNIST conv2 + ReLU"},
                       {"1024x32x26x26,64x32x3x3", "MNIST conv2 + ReLU at batch 1024"}},
                      [](const std::string& key, const std::string& spec) { return read_conv(key, spec).bytes; },
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
                      [](const std::string& key, const std::string& spec) { return read_pool(key, spec).bytes; },
                      pool_case});
}

}  // namespace bench
}  // namespace minidl
