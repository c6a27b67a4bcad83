// ops/elementwise.cpp — front ends and gradients of the elementwise ops.
//
// Forward formulas are in ops/elementwise_functors.h. Gradients (g = dL/dy):
//   add: (g, g)   sub: (g, -g)   mul: (g*b, g*a)   div: (g/b, -g*a/b^2)     (each summed back over
//   broadcast dims by sum_to)
//   neg: -g   exp: g*y   log: g/x   sqrt: g/(2y)   relu: g*[x>0]   sigmoid: g*y*(1-y)   tanh: g*(1-y^2)
//   add_scalar: g   mul_scalar: g*s   pow_scalar: g*p*x^(p-1)
//
// Memory format: an output keeps its input's (core/memory_format.h). A channels-last input is handed to
// the kernels as its [N, H, W, C] view, which is contiguous, and the output is allocated [N, H, W, C] and
// returned as its [N, C, H, W] view: the same one dense pass as for NCHW, on every device and kernel.
#include "core/dispatch.h"
#include "core/memory_format.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    MINIDL_CHECK(da == db || da == 1 || db == 1, op, ": shapes ", shape_str(a), " and ", shape_str(b),
                 " cannot be broadcast together (dimension ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  const int lead = g.dim() - static_cast<int>(shape.size());
  MINIDL_CHECK(lead >= 0, "sum_to: cannot reduce shape ", shape_str(g.shape()), " to ", shape_str(shape));
  std::vector<int> dims;
  for (int i = 0; i < g.dim(); ++i)
    if (i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1)) dims.push_back(i);
  Tensor s = dims.empty() ? g : sum(g, dims, /*keepdim=*/true);
  return s.reshape(shape);
}

namespace {

bool channels_last(const Tensor& t) { return suggest_memory_format(t) == MemoryFormat::channels_last; }

// An empty [N, H, W, C] tensor for the kernels to write, for an output of shape [N, C, H, W].
Tensor empty_nhwc(const Shape& s, TensorOptions options) { return empty({s[0], s[2], s[3], s[1]}, options); }

Tensor unary(const KernelKey<UnaryKernel>& key, const Tensor& x) {
  check_floating(key.name(), x);
  if (channels_last(x)) {
    Tensor out = empty_nhwc(x.shape(), x.options());
    dispatch(key, x.device(), nhwc_view(x), out);
    return nchw_view(out);
  }
  Tensor out = empty(x.shape(), x.options());
  dispatch(key, x.device(), x, out);
  return out;
}

Tensor unary_scalar(const KernelKey<UnaryScalarKernel>& key, const Tensor& x, double s) {
  check_floating(key.name(), x);
  if (channels_last(x)) {
    Tensor out = empty_nhwc(x.shape(), x.options());
    dispatch(key, x.device(), nhwc_view(x), s, out);
    return nchw_view(out);
  }
  Tensor out = empty(x.shape(), x.options());
  dispatch(key, x.device(), x, s, out);
  return out;
}

// Runs the binary kernel `key` on a and b broadcast to a common shape (no autograd).
Tensor binary(const KernelKey<BinaryKernel>& key, const Tensor& a, const Tensor& b) {
  const char* name = key.name();
  check_floating(name, a);
  check_floating(name, b);
  check_same_device(name, {a, b});
  check_same_dtype(name, {a, b});
  const Shape shape = broadcast_shapes(name, a.shape(), b.shape());
  const Tensor ea = a.shape() == shape ? a : a.detach().expand(shape);
  const Tensor eb = b.shape() == shape ? b : b.detach().expand(shape);
  // Channels-last when an input of the output's shape is (a decides first, as in PyTorch).
  if ((a.shape() == shape && channels_last(a)) || (b.shape() == shape && channels_last(b))) {
    Tensor out = empty_nhwc(shape, a.options());
    dispatch(key, a.device(), nhwc_view(ea), nhwc_view(eb), out);
    return nchw_view(out);
  }
  Tensor out = empty(shape, a.options());
  dispatch(key, a.device(), ea, eb, out);
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = binary(keys::add, a, b);
  if (needs_grad({a, b}))
    attach_grad_fn(out, "AddBackward", {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g) {
      return InputGradients{sum_to(g, sa), sum_to(g, sb)};
    });
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = binary(keys::sub, a, b);
  if (needs_grad({a, b}))
    attach_grad_fn(out, "SubBackward", {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g) {
      return InputGradients{sum_to(g, sa), sum_to(neg(g), sb)};
    });
  return out;
}

// [doc:mul_op] quoted by docs/course/02-autograd.md
Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary(keys::mul, a, b);
  if (needs_grad({a, b})) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    attach_grad_fn(out, "MulBackward", {a, b}, [a = a.detach(), b = b.detach(), ga, gb](const Tensor& g) {
      return InputGradients{ga ? sum_to(mul(g, b), a.shape()) : Tensor(), gb ? sum_to(mul(g, a), b.shape()) : Tensor()};
    });
  }
  return out;
}
// [/doc:mul_op]

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = binary(keys::div, a, b);
  if (needs_grad({a, b})) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    attach_grad_fn(out, "DivBackward", {a, b}, [a = a.detach(), b = b.detach(), ga, gb](const Tensor& g) {
      Tensor grad_a = ga ? sum_to(div(g, b), a.shape()) : Tensor();
      Tensor grad_b = gb ? sum_to(neg(div(mul(g, a), mul(b, b))), b.shape()) : Tensor();
      return InputGradients{grad_a, grad_b};
    });
  }
  return out;
}

Tensor add_scalar(const Tensor& x, double s) {
  Tensor out = unary_scalar(keys::add_scalar, x, s);
  if (needs_grad({x})) attach_grad_fn(out, "AddScalarBackward", {x}, [](const Tensor& g) { return InputGradients{g}; });
  return out;
}

Tensor mul_scalar(const Tensor& x, double s) {
  Tensor out = unary_scalar(keys::mul_scalar, x, s);
  if (needs_grad({x}))
    attach_grad_fn(out, "MulScalarBackward", {x}, [s](const Tensor& g) { return InputGradients{mul_scalar(g, s)}; });
  return out;
}

Tensor pow_scalar(const Tensor& x, double p) {
  Tensor out = unary_scalar(keys::pow_scalar, x, p);
  if (needs_grad({x}))
    attach_grad_fn(out, "PowScalarBackward", {x}, [x = x.detach(), p](const Tensor& g) {
      // x^0 is constant: without this, 0 * x^-1 would give NaN at x = 0.
      if (p == 0) return InputGradients{zeros_like(g)};
      return InputGradients{mul(g, mul_scalar(pow_scalar(x, p - 1), p))};
    });
  return out;
}

Tensor neg(const Tensor& x) {
  Tensor out = unary(keys::neg, x);
  if (needs_grad({x})) attach_grad_fn(out, "NegBackward", {x}, [](const Tensor& g) { return InputGradients{neg(g)}; });
  return out;
}

Tensor exp(const Tensor& x) {
  Tensor out = unary(keys::exp, x);
  if (needs_grad({x}))
    attach_grad_fn(out, "ExpBackward", {x}, [y = out.detach()](const Tensor& g) { return InputGradients{mul(g, y)}; });
  return out;
}

Tensor log(const Tensor& x) {
  Tensor out = unary(keys::log, x);
  if (needs_grad({x}))
    attach_grad_fn(out, "LogBackward", {x}, [x = x.detach()](const Tensor& g) { return InputGradients{div(g, x)}; });
  return out;
}

Tensor sqrt(const Tensor& x) {
  Tensor out = unary(keys::sqrt, x);
  if (needs_grad({x}))
    attach_grad_fn(out, "SqrtBackward", {x}, [y = out.detach()](const Tensor& g) {
      return InputGradients{mul_scalar(div(g, y), 0.5)};
    });
  return out;
}

Tensor relu(const Tensor& x) {
  // bfloat16 activations (ops/bfloat16_widening.h) reach an unfused ReLU when the fusion pass is off
  // (MINIDL_FUSE_RELU=0): it runs on a float32 copy, exactly (a max with 0 needs no rounding).
  if (x.defined() && x.dtype() == DType::bfloat16) return cast(relu(cast(x, DType::float32)), DType::bfloat16);
  Tensor out = unary(keys::relu, x);
  if (needs_grad({x}))
    attach_grad_fn(out, "ReluBackward", {x}, [x = x.detach()](const Tensor& g) {
      return InputGradients{binary(keys::relu_backward, g, x)};
    });
  return out;
}

Tensor sigmoid(const Tensor& x) {
  Tensor out = unary(keys::sigmoid, x);
  if (needs_grad({x}))
    attach_grad_fn(out, "SigmoidBackward", {x}, [y = out.detach()](const Tensor& g) {
      // y * (1 - y) = y - y^2
      return InputGradients{mul(g, sub(y, mul(y, y)))};
    });
  return out;
}

Tensor tanh(const Tensor& x) {
  Tensor out = unary(keys::tanh, x);
  if (needs_grad({x}))
    attach_grad_fn(out, "TanhBackward", {x}, [y = out.detach()](const Tensor& g) {
      return InputGradients{mul(g, add_scalar(neg(mul(y, y)), 1.0))};
    });
  return out;
}

}  // namespace minidl
