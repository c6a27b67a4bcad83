// core/profile_shapes.cpp — a profiled call shape as a `minidl bench --shape` argument (core/profile_shapes.h).
// Each key's arguments, in the order of its signature (ops/kernel_signatures.h), are the parts of the
// shape; the comment on each case names the parts it reads.
#include "core/profile_shapes.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

namespace minidl {

namespace {

// One part of a call shape that is a tensor: "64x32x26x26", maybe with ":strided" (a float32 tensor that
// is not contiguous). ok is false for anything else: another dtype, an undefined or scalar tensor, a size
// of 0 (which the bench refuses), a bool or a parameter part.
struct TensorPart {
  bool ok = false;
  bool strided = false;
  std::vector<int64_t> dims;
};

TensorPart tensor_part(const std::string& part) {
  TensorPart t;
  std::string sizes = part;
  const std::string strided = ":strided";
  if (sizes.size() > strided.size() && sizes.compare(sizes.size() - strided.size(), strided.size(), strided) == 0) {
    t.strided = true;
    sizes.resize(sizes.size() - strided.size());
  }
  if (sizes.empty() || sizes.front() == 'x' || sizes.back() == 'x') return t;
  int64_t size = 0;
  for (const char c : sizes) {
    if (c == 'x') {
      t.dims.push_back(size);
      size = 0;
    } else if (c >= '0' && c <= '9' && size < (int64_t(1) << 40)) {
      size = size * 10 + (c - '0');
    } else {
      return t;  // a dtype suffix, a list, a parameter part
    }
  }
  t.dims.push_back(size);
  for (const int64_t d : t.dims)
    if (d < 1) return t;
  t.ok = true;
  return t;
}

std::string join_dims(const std::vector<int64_t>& dims) {
  std::string out;
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? "x" : "") + std::to_string(dims[i]);
  return out;
}

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

std::vector<std::string> split_parts(const std::string& shape) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= shape.size()) {
    const size_t comma = std::min(shape.find(',', start), shape.size());
    parts.push_back(shape.substr(start, comma - start));
    start = comma + 1;
  }
  return parts;
}

bool in(const std::string& key, const std::set<std::string>& keys) { return keys.count(key) > 0; }

// The spec of `key` from the parts of its call shape; "" when it has none.
std::string spec_of(const std::string& key, const std::vector<std::string>& parts) {
  auto tensor = [&](size_t i) { return i < parts.size() ? tensor_part(parts[i]) : TensorPart(); };
  auto part = [&](size_t i) { return i < parts.size() ? parts[i] : std::string(); };
  // A parameter part as the bench writes its options ("s1p0", "k2s2p0"): letters and digits.
  auto params = [&](size_t i) {
    const std::string p = part(i);
    if (p.empty() || p[0] < 'a' || p[0] > 'z') return std::string();
    return p;
  };

  // A tensor's shape, the whole spec: (x, out) unary and scalar keys, (a, b, out) binary ones: out;
  // fill (dst), dropout_mask (mask, offset_shift): the first part.
  static const std::set<std::string> kLastIsShape = {"neg",  "exp",        "log",        "sqrt",       "relu",
                                                      "sigmoid", "tanh",    "add_scalar", "mul_scalar", "pow_scalar",
                                                      "add",  "sub",        "mul",        "div",        "relu_backward",
                                                      "eq",   "ne",         "gt",         "ge",         "lt",
                                                      "le"};
  if (in(key, kLastIsShape)) {
    const TensorPart out = tensor(parts.size() - 1);
    return out.ok ? join_dims(out.dims) : "";
  }
  if (key == "fill" || key == "dropout_mask") {
    const TensorPart t = tensor(0);
    return t.ok ? join_dims(t.dims) : "";
  }
  // copy (src, dst): dst's shape, ",t" when src is a strided view (the bench's is a transposed one).
  // cast (src, dst): dst's shape (the bench casts float32 to float64; src's dtype is the call's own).
  if (key == "copy" || key == "cast") {
    const TensorPart src = tensor(0);
    TensorPart dst = tensor(1);
    if (key == "cast") dst = tensor_part(part(1).substr(0, part(1).find(':')));
    if (!dst.ok) return "";
    return join_dims(dst.dims) + (key == "copy" && src.strided && dst.dims.size() >= 2 ? ",t" : "");
  }
  // matmul (a, b, out, trans_a, trans_b), a b out packed 3-D: MxNxK[,ta][,tb][,bB].
  if (key == "matmul") {
    const TensorPart a = tensor(0), out = tensor(2);
    const bool ta = part(3) == "1", tb = part(4) == "1";
    if (!a.ok || !out.ok || a.dims.size() != 3 || out.dims.size() != 3) return "";
    const int64_t k = ta ? a.dims[1] : a.dims[2];
    std::string spec = join_dims({out.dims[1], out.dims[2], k});
    if (ta) spec += ",ta";
    if (tb) spec += ",tb";
    if (out.dims[0] > 1) spec += ",b" + std::to_string(out.dims[0]);
    return spec;
  }
  // The three conv2d stages: the forward's x and w, and the parameters (the last part).
  // conv2d (x, w, y, p); conv2d.backward_input (grad_y, w, grad_x, p); conv2d.backward_weight (x, grad_y, grad_w, p).
  if (key == "conv2d" || key == "conv2d.backward_input" || key == "conv2d.backward_weight") {
    const TensorPart x = tensor(key == "conv2d.backward_input" ? 2 : 0);
    const TensorPart w = tensor(key == "conv2d.backward_weight" ? 2 : 1);
    const std::string p = params(3);
    if (!x.ok || !w.ok || x.dims.size() != 4 || w.dims.size() != 4 || p.empty()) return "";
    return join_dims(x.dims) + "," + join_dims(w.dims) + "," + p;
  }
  // Pooling: x and the parameters. max_pool2d, avg_pool2d (x, y, p); max_pool2d.backward (x, y, grad_y,
  // grad_x, p); avg_pool2d.backward (grad_y, grad_x, p).
  if (key == "max_pool2d" || key == "avg_pool2d" || key == "max_pool2d.backward" || key == "avg_pool2d.backward") {
    const TensorPart x = tensor(key == "avg_pool2d.backward" ? 1 : 0);
    const std::string p = params(parts.size() - 1);
    if (!x.ok || x.dims.size() != 4 || p.empty()) return "";
    return join_dims(x.dims) + "," + p;
  }
  // bias_relu (y, bias, out), bias_relu.backward (g, out, grad_y, grad_bias): y [OUTER, C, ...] with a
  // bias per C, as OUTERxCxINNER.
  if (key == "bias_relu" || key == "bias_relu.backward") {
    const TensorPart y = tensor(0);
    if (!y.ok || y.dims.size() < 2) return "";
    return join_dims({y.dims[0], y.dims[1], product(y.dims, 2, y.dims.size())});
  }
  // The row keys, x [..., COLS] as ROWSxCOLS (cross entropy's NxC): sum (x, out), max (x, out, index),
  // softmax and log_softmax (x, y), their backward (y, grad_y, grad_x), cross_entropy (logits, target,
  // loss) and its backward (logits, target, grad_loss, grad_logits): the first part.
  static const std::set<std::string> kRowKeys = {"sum",           "max",           "softmax",
                                                 "log_softmax",   "softmax.backward", "log_softmax.backward",
                                                 "cross_entropy", "cross_entropy.backward"};
  if (in(key, kRowKeys)) {
    const TensorPart x = tensor(0);
    if (!x.ok) return "";
    const size_t n = x.dims.size();
    return join_dims({product(x.dims, 0, n - 1), x.dims[n - 1]});
  }
  // The batch_norm family, x [N, C, S] first in every signature: NxC, NxCxS or NxCxHxW.
  static const std::set<std::string> kBatchNormKeys = {"batch_norm", "batch_norm.inference", "batch_norm.backward",
                                                       "batch_norm_relu", "batch_norm_relu.backward"};
  if (in(key, kBatchNormKeys)) {
    const TensorPart x = tensor(0);
    if (!x.ok || x.dims.size() < 2 || x.dims.size() > 4) return "";
    return join_dims(x.dims);
  }
  // batch_norm.running_stats (save_mean, save_invstd, ...): the batch_norm syntax with C = save_mean's
  // length, as 2xC (the call's M is not in its tensors, and the update's cost does not depend on it).
  if (key == "batch_norm.running_stats") {
    const TensorPart mean = tensor(0);
    if (!mean.ok || mean.dims.size() != 1) return "";
    return join_dims({2, mean.dims[0]});
  }
  return "";
}

}  // namespace

std::string bench_shape_spec(const std::string& key, const std::string& shape) {
  const std::string spec = spec_of(key, split_parts(shape));
  return spec.empty() ? "" : key + ":" + spec;
}

}  // namespace minidl
