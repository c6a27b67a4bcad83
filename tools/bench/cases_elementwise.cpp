// tools/bench/cases_elementwise.cpp — bench cases of the elementwise keys: unary (neg ... tanh), with a
// scalar (add_scalar, mul_scalar, pow_scalar), binary (add ... relu_backward, eq ... le), copy, cast, fill,
// dropout_mask, pack, and the fused bias_relu (forward and backward). All are memory-bound: GB/s is the number
// to read, against the device's bandwidth.
//
// Shape syntax: a tensor shape, "64x32x26x26". copy also takes ",t": the source is then a transposed
// view (its last two dims swapped), the strided copy a contiguous-only kernel declines.
//
// bias_relu takes "OUTERxCxINNER": y [OUTER, C, INNER] with a bias per C. pack takes "N1xN2x...": tensors
// of N1, N2, ... elements packed one after another into one flat buffer.
//
// FLOPs per element: 1 (exp and log count 1, see tools/bench/case.h); pow_scalar (exp of s*log x) 3;
// bias_relu 2 (add, compare), its backward 2 (compare, add into the bias sum).
// Bytes: every input element read once, every output element written once.
#include "ops/kernel_signatures.h"
#include "tools/bench/case.h"

namespace minidl {
namespace bench {

namespace {

// The default shapes of every elementwise key: an MNIST activation, a captcha activation, and one large
// enough (128 MiB per tensor) that no cache holds it, not even an H200's 60 MiB L2.
const std::vector<DefaultShape> kElementwiseShapes = {
    {"64x32x26x26", "MNIST conv1 activations"},
    {"128x128x16x48", "captcha block-3 activations"},
    {"33554432", "large: 128 MiB per tensor"},
};

const char* kShapeSyntax = "D1xD2x...";
const char* kShapeHelp = "the tensor's shape";

// The most sizes a tensor shape may have, and the most tensors pack packs.
constexpr size_t kMaxDims = 8, kMaxPacked = 64;

// A tensor shape "D1xD2x..." (1 to kMaxDims sizes), the whole spec of most keys here.
Shape read_shape(const std::string& key, const std::string& spec, const std::string& syntax) {
  SpecReader r(key, spec, syntax);
  r.expect_parts(1, 1, "the tensor's shape");
  const Shape shape = r.sizes(0, "D", 1, kMaxDims);
  r.numel(shape, "the tensor");
  return shape;
}

// The case's tensors: `tensors` float32 tensors of the spec's shape.
std::function<double(const std::string&, const std::string&)> shape_bytes(int tensors) {
  return [tensors](const std::string& key, const std::string& spec) {
    return tensors * float_bytes(shape_numel(read_shape(key, spec, kShapeSyntax)));
  };
}

// Inputs valid for every unary key: log, sqrt and pow need x > 0.
Tensor positive_input(const Shape& shape, Device d) { return uniform_input(shape, 0.5, 2.0, d); }

BenchCase unary_case(const std::string& key, const std::string& spec, Device d) {
  const Shape shape = read_shape(key, spec, kShapeSyntax);
  const double n = static_cast<double>(shape_numel(shape));
  Tensor x = positive_input(shape, d), out = output(shape, d);
  BenchCase c;
  c.flops = n;
  c.bytes = 2 * n * kFloatBytes;
  c.run = [=](const KernelInfo& k) mutable { return call_as<UnaryKernel>(k, x, out); };
  c.outputs = [=] { return std::vector<Tensor>{out}; };
  return c;
}

BenchCase unary_scalar_case(const std::string& key, const std::string& spec, Device d) {
  const Shape shape = read_shape(key, spec, kShapeSyntax);
  const double n = static_cast<double>(shape_numel(shape));
  Tensor x = positive_input(shape, d), out = output(shape, d);
  const double scalar = key == "pow_scalar" ? 1.5 : 0.75;
  BenchCase c;
  c.flops = (key == "pow_scalar" ? 3 : 1) * n;
  c.bytes = 2 * n * kFloatBytes;
  c.run = [=](const KernelInfo& k) mutable { return call_as<UnaryScalarKernel>(k, x, scalar, out); };
  c.outputs = [=] { return std::vector<Tensor>{out}; };
  return c;
}

BenchCase binary_case(const std::string& key, const std::string& spec, Device d) {
  const Shape shape = read_shape(key, spec, kShapeSyntax);
  const double n = static_cast<double>(shape_numel(shape));
  // relu_backward's b is x (its sign matters), a comparison's b straddles a's values; div's b is kept
  // away from 0.
  const bool signed_b = key == "relu_backward" || key == "eq" || key == "ne" || key == "gt" || key == "ge" ||
                        key == "lt" || key == "le";
  Tensor a = uniform_input(shape, -1, 1, d);
  Tensor b = signed_b ? uniform_input(shape, -1, 1, d) : positive_input(shape, d);
  Tensor out = output(shape, d);
  BenchCase c;
  c.flops = n;
  c.bytes = 3 * n * kFloatBytes;
  c.run = [=](const KernelInfo& k) mutable { return call_as<BinaryKernel>(k, a, b, out); };
  c.outputs = [=] { return std::vector<Tensor>{out}; };
  return c;
}

// copy: float32 -> float32, contiguous or from a transposed view (",t"); cast: float32 -> float64.
struct CopySpec {
  Shape shape;
  bool transposed = false;
  double bytes = 0;  // src and dst
};

CopySpec read_copy(const std::string& key, const std::string& spec) {
  const bool copy = key == "copy";
  SpecReader r(key, spec, copy ? "D1xD2x...[,t]" : kShapeSyntax);
  r.expect_parts(1, copy ? 2 : 1, copy ? "the tensor's shape, then t" : "the tensor's shape");
  CopySpec s;
  s.shape = r.sizes(0, "D", 1, kMaxDims);
  if (r.parts() == 2) {
    if (!r.word(1, "t")) r.fail(str_cat("unknown option '", r.part(1), "' (the option is t)"));
    if (s.shape.size() < 2) r.fail(",t needs at least two sizes");
    s.transposed = true;
  }
  s.bytes = float_bytes(r.numel(s.shape, "the tensor")) * (copy ? 2 : 3);  // cast writes float64
  return s;
}

BenchCase copy_case(const std::string& key, const std::string& spec, Device d) {
  const CopySpec s = read_copy(key, spec);
  const Shape& shape = s.shape;
  const bool transposed = s.transposed;
  const double n = static_cast<double>(shape_numel(shape));
  Tensor src = uniform_input(shape, -1, 1, d);
  if (transposed) src = src.transpose(-1, -2);  // a strided view of the same numbers
  const DType out_type = key == "cast" ? DType::float64 : DType::float32;
  Tensor dst = empty(src.shape(), TensorOptions(out_type, d));
  BenchCase c;
  c.bytes = n * (kFloatBytes + dtype_size(out_type));
  c.run = [=](const KernelInfo& k) mutable { return call_as<CopyKernel>(k, src, dst); };
  c.outputs = [=] { return std::vector<Tensor>{dst}; };
  return c;
}

BenchCase fill_case(const std::string& key, const std::string& spec, Device d) {
  const Shape shape = read_shape(key, spec, kShapeSyntax);
  Tensor dst = output(shape, d);
  BenchCase c;
  c.bytes = static_cast<double>(shape_numel(shape)) * kFloatBytes;
  c.run = [=](const KernelInfo& k) mutable { return call_as<FillKernel>(k, dst, 0.5); };
  c.outputs = [=] { return std::vector<Tensor>{dst}; };
  return c;
}

// The mask of MNIST's Dropout(0.25); the Philox draws are integer work, so no FLOPs are counted.
BenchCase dropout_case(const std::string& key, const std::string& spec, Device d) {
  const Shape shape = read_shape(key, spec, kShapeSyntax);
  Tensor mask = output(shape, d);
  BenchCase c;
  c.bytes = static_cast<double>(shape_numel(shape)) * kFloatBytes;
  c.run = [=](const KernelInfo& k) mutable { return call_as<DropoutMaskKernel>(k, mask, 0.25, 1234, 0, Tensor()); };
  c.outputs = [=] { return std::vector<Tensor>{mask}; };
  return c;
}

// pack: the spec lists the sizes of the tensors packed one after another into one flat buffer.
Shape read_pack(const std::string& key, const std::string& spec) {
  SpecReader r(key, spec, "N1xN2x...");
  r.expect_parts(1, 1, "the sizes of the packed tensors");
  return r.sizes(0, "N", 1, kMaxPacked);  // at most 64 sizes of at most 2^31: their sum fits
}

double pack_bytes(const std::string& key, const std::string& spec) {
  double total = 0;
  for (int64_t n : read_pack(key, spec)) total += static_cast<double>(n);
  return 2 * total * kFloatBytes;  // the sources and the flat buffer
}

BenchCase pack_case(const std::string& key, const std::string& spec, Device d) {
  const Shape sizes = read_pack(key, spec);
  std::vector<Tensor> srcs;
  std::vector<int64_t> offsets;
  int64_t total = 0;
  for (int64_t n : sizes) {
    srcs.push_back(uniform_input({n}, -1, 1, d));
    offsets.push_back(total);
    total += n;
  }
  Tensor flat = output({total}, d);
  BenchCase c;
  c.bytes = 2.0 * static_cast<double>(total) * kFloatBytes;
  c.run = [=](const KernelInfo& k) mutable { return call_as<PackKernel>(k, srcs, offsets, flat); };
  c.outputs = [=] { return std::vector<Tensor>{flat}; };
  return c;
}

// y [outer, C, inner] -> relu(y + bias[c]); the backward's out is uniform in [-1, 1] (only its sign matters).
Shape read_bias_relu(const std::string& key, const std::string& spec) {
  SpecReader r(key, spec, "OUTERxCxINNER");
  r.expect_parts(1, 1, "y's shape");
  const Shape s = r.sizes(0, {"OUTER", "C", "INNER"});
  r.numel(s, "y");
  return s;
}

double bias_relu_bytes(const std::string& key, const std::string& spec) {
  const Shape s = read_bias_relu(key, spec);
  // forward: y, out and the bias; backward: grad_out, out, grad_y and grad_bias
  return float_bytes(shape_numel(s)) * (key == "bias_relu" ? 2 : 3) + float_bytes(s[1]);
}

BenchCase bias_relu_case(const std::string& key, const std::string& spec, Device d) {
  const Shape s = read_bias_relu(key, spec);
  const double n = static_cast<double>(shape_numel(s));
  const double channels = static_cast<double>(s[1]);
  BenchCase c;
  c.flops = 2 * n;
  if (key == "bias_relu") {
    Tensor y = uniform_input(s, -1, 1, d), bias = uniform_input({s[1]}, -0.5, 0.5, d), out = output(s, d);
    c.bytes = (2 * n + channels) * kFloatBytes;
    c.run = [=](const KernelInfo& k) mutable { return call_as<BiasReluKernel>(k, y, bias, out); };
    c.outputs = [=] { return std::vector<Tensor>{out}; };
  } else {
    Tensor g = uniform_input(s, -1, 1, d), out = uniform_input(s, -1, 1, d);
    Tensor grad_y = output(s, d), grad_bias = output({s[1]}, d);
    c.bytes = (3 * n + channels) * kFloatBytes;
    c.run = [=](const KernelInfo& k) mutable { return call_as<BiasReluBackwardKernel>(k, g, out, grad_y, grad_bias); };
    c.outputs = [=] { return std::vector<Tensor>{grad_y, grad_bias}; };
  }
  return c;
}

}  // namespace

void add_elementwise_cases(std::vector<CaseFamily>& families) {
  families.push_back({MINIDL_BENCH_KEYS(UnaryKernel, {"neg", "exp", "log", "sqrt", "relu", "sigmoid", "tanh"}),
                      kShapeSyntax,
                      kShapeHelp,
                      "5x7",
                      kElementwiseShapes,
                      shape_bytes(2),
                      unary_case});
  families.push_back({MINIDL_BENCH_KEYS(UnaryScalarKernel, {"add_scalar", "mul_scalar", "pow_scalar"}),
                      kShapeSyntax,
                      kShapeHelp,
                      "5x7",
                      kElementwiseShapes,
                      shape_bytes(2),
                      unary_scalar_case});
  families.push_back({MINIDL_BENCH_KEYS(BinaryKernel, {"add", "sub", "mul", "div", "relu_backward", "eq", "ne", "gt", "ge", "lt", "le"}),
                      kShapeSyntax,
                      std::string(kShapeHelp) + " (both operands)",
                      "5x7",
                      kElementwiseShapes,
                      shape_bytes(3),
                      binary_case});
  families.push_back({MINIDL_BENCH_KEYS(CopyKernel, {"copy"}),
                      "D1xD2x...[,t]",
                      "the tensor's shape; ,t copies from a transposed (strided) view",
                      "5x7,t",
                      {{"64x32x26x26", "MNIST conv1 activations"},
                       {"64x32x26x26,t", "the same from a transposed view"},
                       {"33554432", "large: 128 MiB"}},
                      [](const std::string& key, const std::string& spec) { return read_copy(key, spec).bytes; },
                      copy_case});
  families.push_back({MINIDL_BENCH_KEYS(CopyKernel, {"cast"}),
                      kShapeSyntax,
                      "the tensor's shape (float32 to float64)",
                      "5x7",
                      {{"64x32x26x26", "MNIST conv1 activations"}, {"33554432", "large: 128 MiB"}},
                      [](const std::string& key, const std::string& spec) { return read_copy(key, spec).bytes; },
                      copy_case});
  families.push_back({MINIDL_BENCH_KEYS(FillKernel, {"fill"}),
                      kShapeSyntax,
                      kShapeHelp,
                      "5x7",
                      {{"64x32x26x26", "MNIST conv1 activations"}, {"33554432", "large: 128 MiB"}},
                      shape_bytes(1),
                      fill_case});
  families.push_back({MINIDL_BENCH_KEYS(PackKernel, {"pack"}),
                      "N1xN2x...",
                      "the sizes of the tensors packed one after another into one flat buffer",
                      "5x7x1",
                      {{"10x1280x128x1179648x64x18432x32x288", "MNIST's 8 gradients (DataParallel's buckets)"},
                       {"1000x1000x1000x1000x1000x1000x1000x1000x1000x1000x1000x1000x1000x1000x1000x1000",
                        "16 small tensors"}},
                      pack_bytes,
                      pack_case});
  families.push_back({MINIDL_BENCH_KEYS(DropoutMaskKernel, {"dropout_mask"}),
                      kShapeSyntax,
                      "the mask's shape (p = 0.25)",
                      "5x7",
                      {{"64x64x12x12", "MNIST dropout after the pool"},
                       {"128x256x2x12", "captcha dropout after the CNN"},
                       {"33554432", "large: 128 MiB"}},
                      shape_bytes(1),
                      dropout_case});
  families.push_back({concat(MINIDL_BENCH_KEYS(BiasReluKernel, {"bias_relu"}),
                             MINIDL_BENCH_KEYS(BiasReluBackwardKernel, {"bias_relu.backward"})),
                      "OUTERxCxINNER",
                      "y [OUTER, C, INNER], a bias per C",
                      "3x5x7",
                      {{"64x32x676", "MNIST conv1 output, batch 64"},
                       {"64x128x1", "MNIST fc1 output, batch 64"},
                       {"1024x64x576", "MNIST conv2 output, batch 1024"}},
                      bias_relu_bytes,
                      bias_relu_case});
}

}  // namespace bench
}  // namespace minidl
