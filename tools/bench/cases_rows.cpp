// tools/bench/cases_rows.cpp — bench cases of the keys that work row by row on a [rows, cols] matrix:
// the reductions (sum, max), gather and its backward, the softmax family and the fused cross entropy.
//
// Shape syntax: "ROWSxCOLS" (cross entropy: "NxC"; gather: "OUTERxNxINNER,kK", k indices per row).
// FLOP models (per element of x, see tools/bench/case.h for the conventions):
//   sum 1 (add), max 1 (compare)
//   softmax 5: max, subtract, exp, sum, divide; log_softmax 5: max, subtract, exp, sum, subtract (+ one
//   log per row); their backward 4: a product and a sum for the row's dot product, a subtract, a multiply
//   cross_entropy 4: max, subtract, exp, sum (+ a log and a subtract per row); backward 5: the softmax
//   (max, subtract, exp, sum, divide... counted 4 with the exp folded) and one subtract and multiply: 6
//   gather 0 (moves data), gather.backward 1 (an add per gathered gradient)
// Bytes: inputs read once (int64 indices 8 bytes), outputs written once.
#include "ops/kernel_signatures.h"
#include "tools/bench/case.h"

namespace minidl {
namespace bench {

namespace {

// "ROWSxCOLS" -> {rows, cols} (cross entropy's "NxC": the sizes named N and C).
std::pair<int64_t, int64_t> rows_cols(const std::string& key, const std::string& spec) {
  const bool classes = key.rfind("cross_entropy", 0) == 0;
  SpecReader r(key, spec, classes ? "NxC" : "ROWSxCOLS");
  r.expect_parts(1, 1, "the matrix's shape");
  const Shape s = classes ? r.sizes(0, {"N", "C"}) : r.sizes(0, {"ROWS", "COLS"});
  r.numel(s, "x");
  return {s[0], s[1]};
}

// The bytes of a row case's tensors, `matrices` [rows, cols] and `vectors` [rows] of float32 or int64
// (the softmax backward: x, y, grad_y, grad_x and y's copy on the device).
double rows_bytes(const std::string& key, const std::string& spec) {
  const auto [rows, cols] = rows_cols(key, spec);
  const bool backward = key.find(".backward") != std::string::npos;
  const double matrices = key.rfind("softmax", 0) == 0 || key.rfind("log_softmax", 0) == 0 ? (backward ? 5 : 2)
                          : key.rfind("cross_entropy", 0) == 0                             ? 2
                                                                                           : 1;
  return matrices * float_bytes(rows * cols) + 3 * float_bytes(rows);  // vectors: out, an int64 index or target
}

BenchCase reduce_case(const std::string& key, const std::string& spec, Device d) {
  const auto [rows, cols] = rows_cols(key, spec);
  const double n = static_cast<double>(rows) * cols;
  Tensor x = uniform_input({rows, cols}, -1, 1, d), out = output({rows}, d);
  BenchCase c;
  c.flops = n;
  if (key == "max") {
    Tensor index = empty({rows}, TensorOptions(DType::int64, d));
    c.bytes = n * kFloatBytes + rows * (kFloatBytes + kIndexBytes);
    c.run = [=](const KernelInfo& k) mutable { return call_as<RowMaxKernel>(k, x, out, index); };
    c.outputs = [=] { return std::vector<Tensor>{out, index}; };
  } else {
    c.bytes = (n + rows) * kFloatBytes;
    c.run = [=](const KernelInfo& k) mutable { return call_as<RowReduceKernel>(k, x, out); };
    c.outputs = [=] { return std::vector<Tensor>{out}; };
  }
  return c;
}

// The spec "OUTERxNxINNER,kK" of gather and index_select: x [OUTER, N, INNER], K picks along N.
struct PickSpec {
  int64_t outer, n, inner, picks;
};
PickSpec pick_spec(const std::string& key, const std::string& spec) {
  SpecReader r(key, spec, "OUTERxNxINNER,kK");
  r.expect_parts(2, 2, "x's shape, then kK");
  const Shape s = r.sizes(0, {"OUTER", "N", "INNER"});
  const LetterOption k = r.options(1, "k", false).front();
  r.at_least(k, "the number of indices", 1);
  r.numel(s, "x");
  r.numel({s[0], k.first, s[2]}, "the gathered tensor");
  return {s[0], s[1], s[2], k.first};
}

// x, the gathered values (or their gradients) and the int64 indices.
double pick_bytes(const std::string& key, const std::string& spec) {
  const auto [outer, n, inner, picks] = pick_spec(key, spec);
  const double x = float_bytes(outer * n * inner), picked = float_bytes(outer * picks * inner);
  return x + picked + 2 * picked;  // indices: 8 bytes each, at most one per picked value
}

// x [outer, n, inner], index [outer, k, inner] -> out [outer, k, inner]; backward scatters back.
BenchCase gather_case(const std::string& key, const std::string& spec, Device d) {
  const auto [outer, n, inner, picks] = pick_spec(key, spec);
  Tensor index = index_input({outer, picks, inner}, 0, n, d);
  const double gathered = static_cast<double>(outer) * picks * inner;
  BenchCase c;
  if (key == "gather") {
    Tensor x = uniform_input({outer, n, inner}, -1, 1, d), out = output({outer, picks, inner}, d);
    c.bytes = gathered * (kIndexBytes + 2 * kFloatBytes);
    c.run = [=](const KernelInfo& k) mutable { return call_as<GatherKernel>(k, x, index, out); };
    c.outputs = [=] { return std::vector<Tensor>{out}; };
  } else {
    Tensor grad_out = uniform_input({outer, picks, inner}, -1, 1, d), grad_x = output({outer, n, inner}, d);
    c.flops = gathered;
    c.bytes = gathered * (kIndexBytes + kFloatBytes) + static_cast<double>(outer) * n * inner * kFloatBytes;
    c.run = [=](const KernelInfo& k) mutable { return call_as<ScatterAddKernel>(k, grad_out, index, grad_x); };
    c.outputs = [=] { return std::vector<Tensor>{grad_x}; };
  }
  return c;
}

// x [OUTER, N, INNER], K indices into N (one per selected slice) -> out [OUTER, K, INNER].
BenchCase index_select_case(const std::string& key, const std::string& spec, Device d) {
  const auto [outer, n, inner, picks] = pick_spec(key, spec);
  Tensor index = index_input({picks}, 0, n, d);
  Tensor x = uniform_input({outer, n, inner}, -1, 1, d), out = output({outer, picks, inner}, d);
  BenchCase c;
  c.bytes = static_cast<double>(picks) * kIndexBytes + 2.0 * static_cast<double>(outer) * picks * inner * kFloatBytes;
  c.run = [=](const KernelInfo& k) mutable { return call_as<IndexSelectKernel>(k, x, index, out); };
  c.outputs = [=] { return std::vector<Tensor>{out}; };
  return c;
}

BenchCase softmax_case(const std::string& key, const std::string& spec, Device d) {
  const auto [rows, cols] = rows_cols(key, spec);
  const double n = static_cast<double>(rows) * cols;
  Tensor x = normal_input({rows, cols}, d);
  BenchCase c;
  const bool backward = key.find(".backward") != std::string::npos;
  if (!backward) {
    Tensor y = output({rows, cols}, d);
    c.flops = 5 * n;
    c.bytes = 2 * n * kFloatBytes;
    c.run = [=](const KernelInfo& k) mutable { return call_as<SoftmaxKernel>(k, x, y); };
    c.outputs = [=] { return std::vector<Tensor>{y}; };
    return c;
  }
  // The backward reads the forward's output y: made by the naive forward on the CPU.
  const std::string forward = key.substr(0, key.find('.'));
  Tensor x_cpu = x.to(Device::cpu()), y_cpu = output({rows, cols}, Device::cpu());
  run_naive_cpu<SoftmaxKernel>(forward, x_cpu, y_cpu);
  Tensor y = y_cpu.to(d), grad_y = normal_input({rows, cols}, d), grad_x = output({rows, cols}, d);
  c.flops = 4 * n;
  c.bytes = 3 * n * kFloatBytes;
  c.run = [=](const KernelInfo& k) mutable { return call_as<SoftmaxBackwardKernel>(k, y, grad_y, grad_x); };
  c.outputs = [=] { return std::vector<Tensor>{grad_x}; };
  return c;
}

BenchCase cross_entropy_case(const std::string& key, const std::string& spec, Device d) {
  const auto [rows, classes] = rows_cols(key, spec);
  const double n = static_cast<double>(rows) * classes;
  Tensor logits = normal_input({rows, classes}, d), target = index_input({rows}, 0, classes, d);
  BenchCase c;
  if (key == "cross_entropy") {
    Tensor loss = output({rows}, d);
    c.flops = 4 * n;
    c.bytes = n * kFloatBytes + rows * (kIndexBytes + kFloatBytes);
    c.run = [=](const KernelInfo& k) mutable { return call_as<CrossEntropyKernel>(k, logits, target, loss); };
    c.outputs = [=] { return std::vector<Tensor>{loss}; };
  } else {
    Tensor grad_loss = uniform_input({rows}, 0, 1, d), grad_logits = output({rows, classes}, d);
    c.flops = 6 * n;
    c.bytes = 2 * n * kFloatBytes + rows * (kIndexBytes + kFloatBytes);
    c.run = [=](const KernelInfo& k) mutable {
      return call_as<CrossEntropyBackwardKernel>(k, logits, target, grad_loss, grad_logits);
    };
    c.outputs = [=] { return std::vector<Tensor>{grad_logits}; };
  }
  return c;
}

}  // namespace

void add_row_cases(std::vector<CaseFamily>& families) {
  families.push_back({MINIDL_BENCH_KEYS(RowReduceKernel, {"sum"}),
                      "ROWSxCOLS",
                      "out[r] = sum of row r",
                      "3x17",
                      {{"128x64", "MNIST fc1 bias gradient (batch reduced)"},
                       {"32x43264", "MNIST conv1 bias gradient (N*H*W reduced)"},
                       {"4096x4096", "large: 64 MiB"}},
                      rows_bytes,
                      reduce_case});
  families.push_back({MINIDL_BENCH_KEYS(RowMaxKernel, {"max"}),
                      "ROWSxCOLS",
                      "out[r], index[r] = max of row r and where",
                      "3x17",
                      {{"64x10", "MNIST predictions (argmax of the logits)"},
                       {"1536x37", "captcha greedy decoding (T*N rows of classes)"},
                       {"4096x4096", "large: 64 MiB"}},
                      rows_bytes,
                      reduce_case});
  families.push_back({concat(MINIDL_BENCH_KEYS(GatherKernel, {"gather"}), MINIDL_BENCH_KEYS(ScatterAddKernel, {"gather.backward"})),
                      "OUTERxNxINNER,kK",
                      "x [OUTER, N, INNER], K indices per (outer, inner)",
                      "2x5x3,k4",
                      {{"64x10x1,k1", "one logit per MNIST row"},
                       {"1536x37x1,k4", "four classes per captcha step"},
                       {"4096x4096x1,k512", "large"}},
                      pick_bytes,
                      gather_case});
  families.push_back({MINIDL_BENCH_KEYS(IndexSelectKernel, {"index_select"}),
                      "OUTERxNxINNER,kK",
                      "K slices of x [OUTER, N, INNER] along N",
                      "2x5x3,k4",
                      {{"1x60000x784,k64", "an MNIST batch of 64 from the training set on the device"},
                       {"1x60000x784,k1024", "an MNIST batch of 1024"},
                       {"1x60000x1,k1024", "the labels of that batch"}},
                      pick_bytes,
                      index_select_case});
  families.push_back({concat(MINIDL_BENCH_KEYS(SoftmaxKernel, {"softmax", "log_softmax"}),
                             MINIDL_BENCH_KEYS(SoftmaxBackwardKernel, {"softmax.backward", "log_softmax.backward"})),
                      "ROWSxCOLS",
                      "over the last dim of [ROWS, COLS]",
                      "3x17",
                      {{"64x10", "MNIST logits"},
                       {"1536x37", "captcha log_softmax (12 steps x 128 x 37 classes)"},
                       {"4096x4096", "large: 64 MiB"}},
                      rows_bytes,
                      softmax_case});
  families.push_back({concat(MINIDL_BENCH_KEYS(CrossEntropyKernel, {"cross_entropy"}),
                             MINIDL_BENCH_KEYS(CrossEntropyBackwardKernel, {"cross_entropy.backward"})),
                      "NxC",
                      "N rows of C logits",
                      "4x5",
                      {{"64x10", "MNIST loss"}, {"1536x37", "captcha-sized logits"}, {"4096x1000", "large: 1000 classes"}},
                      rows_bytes,
                      cross_entropy_case});
}

}  // namespace bench
}  // namespace minidl
