// ops/matmul.cpp — matmul (batched, broadcast, NumPy 1-D rules) and linear, on the "matmul" kernel.
//
// Both reach the kernels as one batched product of packed operands (ops/kernel_signatures.h):
//   out[i] = op(a[i]) op(b[i]),   a [B, ra, ca], b [B, rb, cb] contiguous, op = optional transpose.
// A transposed view (W.transpose(0, 1)) is passed as its packed storage with the transpose flag set, so
// it is never copied. Gradients, with C = op(A) op(B) and G = dL/dC:
//   d op(A) = G op(B)^T        d op(B) = op(A)^T G
// each computed by one more kernel call with transpose flags (no transpose is materialised), and
// summed over broadcast batch dims by the autograd of the expand views around the product.
//
// linear(x, W, bias) = x W^T + bias has its own node, x seen as [M, in]:
//   y = x W^T (trans_b)    dx = g W    dW = g^T x (trans_a)    dbias = sum over rows of g
#include "core/dispatch.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

namespace {

// out[i] = op(a[i]) op(b[i]) through the dispatch table, no autograd. a, b packed 3-D. Empty products
// never reach the kernels: an empty sum (K = 0) is zeros.
Tensor gemm_kernel(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b) {
  const int64_t batch = a.shape()[0];
  const int64_t m = trans_a ? a.shape()[2] : a.shape()[1];
  const int64_t n = trans_b ? b.shape()[1] : b.shape()[2];
  const int64_t k = trans_a ? a.shape()[1] : a.shape()[2];
  Tensor out = empty({batch, m, n}, a.options());
  if (out.numel() == 0) return out;
  if (k == 0) {
    fill_(out, 0.0);
    return out;
  }
  dispatch(keys::matmul, a.device(), a, b, out, trans_a, trans_b);
  return out;
}

// The differentiable batched product C = op(A) op(B) on packed operands. Gradients of the stored
// operands (not of op(.)): with G = dL/dC,
//   A stored plain:      dA = G op(B)^T               A stored transposed:  dA = op(B) G^T
//   B stored plain:      dB = op(A)^T G               B stored transposed:  dB = G^T op(A)
Tensor gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b) {
  Tensor out = gemm_kernel(a.detach(), trans_a, b.detach(), trans_b);
  if (needs_grad({a, b})) {
    const bool need_a = a.requires_grad(), need_b = b.requires_grad();
    attach_grad_fn(out, "MatmulBackward", {a, b},
                   [a = a.detach(), b = b.detach(), trans_a, trans_b, need_a, need_b](const Tensor& g) {
                     const Tensor gc = g.contiguous();
                     Tensor grad_a, grad_b;
                     if (need_a)
                       grad_a = trans_a ? gemm_kernel(b, trans_b, gc, true) : gemm_kernel(gc, false, b, !trans_b);
                     if (need_b)
                       grad_b = trans_b ? gemm_kernel(gc, true, a, trans_a) : gemm_kernel(a, !trans_a, gc, false);
                     return InputGradients{grad_a, grad_b};
                   });
  }
  return out;
}

// A kernel operand: t (shape [..., rows, cols], `batch` matrices) as [batch, rows, cols] packed, or as
// [batch, cols, rows] packed with the transpose flag when t is a transposed view of packed memory.
struct Operand {
  Tensor packed;
  bool transposed = false;
};

Operand pack(const Tensor& t, int64_t batch, int64_t rows, int64_t cols) {
  if (t.is_contiguous()) return {t.reshape({batch, rows, cols}), false};
  const Tensor tt = t.transpose(-2, -1);
  if (tt.is_contiguous()) return {tt.reshape({batch, cols, rows}), true};
  return {t.contiguous().reshape({batch, rows, cols}), false};
}

Shape leading(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

// The error for operands whose inner dimensions differ, with the transpose that would fix it if any.
[[noreturn]] void throw_misaligned(const Tensor& a, const Tensor& b, int64_t ra, int64_t ca, int64_t rb, int64_t cb) {
  std::string hint;
  if (b.dim() >= 2 && ca == cb)
    hint = "; did you mean to transpose the second?";
  else if (a.dim() >= 2 && ra == rb)
    hint = "; did you mean to transpose the first?";
  else if (a.dim() >= 2 && b.dim() >= 2 && ra == cb)
    hint = "; did you mean to transpose both?";
  else
    hint = str_cat(" (", ca, " columns against ", rb, " rows)");
  throw Error(str_cat("matmul: shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()), " do not align", hint));
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_floating("matmul", a);
  check_floating("matmul", b);
  check_same_device("matmul", {a, b});
  check_same_dtype("matmul", {a, b});
  MINIDL_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul: operands need at least one dimension, got shapes ",
               shape_str(a.shape()), " and ", shape_str(b.shape()));
  // NumPy rules: a 1-D first operand is a row [1, K], a 1-D second operand a column [K, 1]; the added
  // dimension is removed from the result.
  const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  const Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
  const int64_t m = a2.size(-2), k = a2.size(-1), n = b2.size(-1);
  if (b2.size(-2) != k) throw_misaligned(a, b, m, k, b2.size(-2), n);

  const Shape batch_a = leading(a2), batch_b = leading(b2);
  Shape out_shape;
  try {
    out_shape = broadcast_shapes("matmul", batch_a, batch_b);
  } catch (const Error&) {
    throw Error(str_cat("matmul: the batch dimensions of shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
                        " cannot be broadcast together (", shape_str(batch_a), " vs ", shape_str(batch_b), ")"));
  }
  const int64_t batch = shape_numel(out_shape);
  out_shape.push_back(m);
  out_shape.push_back(n);

  Tensor out;
  if (shape_numel(batch_b) == 1) {
    // b is one matrix: fold a's batch into its rows, one [batch*M, K] x [K, N] product.
    const Operand pa = batch == 1 ? pack(a2, 1, m, k) : Operand{a2.contiguous().reshape({1, batch * m, k}), false};
    const Operand pb = pack(b2, 1, k, n);
    out = gemm(pa.packed, pa.transposed, pb.packed, pb.transposed).reshape(out_shape);
  } else {
    Shape full_a(out_shape.begin(), out_shape.end() - 2), full_b = full_a;
    full_a.insert(full_a.end(), {m, k});
    full_b.insert(full_b.end(), {k, n});
    const Operand pa = pack(a2.shape() == full_a ? a2 : a2.expand(full_a), batch, m, k);
    const Operand pb = pack(b2.shape() == full_b ? b2 : b2.expand(full_b), batch, k, n);
    out = gemm(pa.packed, pa.transposed, pb.packed, pb.transposed).reshape(out_shape);
  }
  if (b.dim() == 1) out = out.squeeze(-1);
  if (a.dim() == 1) out = out.squeeze(b.dim() == 1 ? -1 : -2);
  return out;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_floating("linear", x);
  check_floating("linear", weight);
  check_same_device("linear", {x, weight, bias});
  check_same_dtype("linear", {x, weight, bias});
  check_dim("linear", weight, 2, "[out_features, in_features] for the weight");
  MINIDL_CHECK(x.dim() >= 1, "linear: the input needs at least one dimension, got a scalar");
  const int64_t out_features = weight.shape()[0], in_features = weight.shape()[1];
  MINIDL_CHECK(x.size(-1) == in_features, "linear: input of shape ", shape_str(x.shape()), " has ", x.size(-1),
               " features but the weight ", shape_str(weight.shape()), " expects ", in_features);
  if (bias.defined()) {
    check_floating("linear", bias);
    MINIDL_CHECK(bias.dim() == 1 && bias.shape()[0] == out_features, "linear: bias of shape ", shape_str(bias.shape()),
                 " does not match the weight ", shape_str(weight.shape()), " (expected [", out_features, "])");
  }
  const int64_t rows = shape_numel(Shape(x.shape().begin(), x.shape().end() - 1));
  const Tensor x3 = x.detach().contiguous().view({1, rows, in_features});
  const Tensor w3 = weight.detach().contiguous().view({1, out_features, in_features});
  Tensor y = gemm_kernel(x3, false, w3, true);
  if (bias.defined()) y = add(y, bias.detach());
  Shape out_shape(x.shape().begin(), x.shape().end() - 1);
  out_shape.push_back(out_features);
  Tensor out = y.view(out_shape);

  if (needs_grad({x, weight, bias})) {
    const bool need_x = x.requires_grad(), need_w = weight.requires_grad();
    const bool need_b = bias.defined() && bias.requires_grad();
    attach_grad_fn(out, "LinearBackward", {x, weight, bias},
                   [x3, w3, need_x, need_w, need_b, x_shape = x.shape()](const Tensor& g) {
                     const Tensor g3 = g.contiguous().view({1, x3.shape()[1], w3.shape()[1]});
                     Tensor grad_x, grad_w, grad_b;
                     if (need_x) grad_x = gemm_kernel(g3, false, w3, false).view(x_shape);
                     if (need_w) grad_w = gemm_kernel(g3, true, x3, false).view({w3.shape()[1], w3.shape()[2]});
                     if (need_b) grad_b = sum(g3.view({g3.shape()[1], g3.shape()[2]}), {0});
                     return InputGradients{grad_x, grad_w, grad_b};
                   });
  }
  return out;
}

}  // namespace minidl
