// ops/shape_ops.cpp — views (reshape, permute, slice, expand, ...), contiguous/clone, concat and gather.
//
// A view changes only shape/strides/offset (core/tensor.h). Gradients of views map g back:
//   reshape: g reshaped to x's shape      permute: g permuted by the inverse permutation
//   slice:   zeros of x's shape with g written into the slice
//   expand:  g summed over the expanded dims (sum_to)
//   concat:  the matching slice of g for each input
//   gather:  scatter-add of g into zeros at the gathered positions (kernel "gather.backward")
#include <algorithm>
#include <numeric>

#include "core/dispatch.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

namespace {

// Attaches "the gradient of this view is back(g)" when x needs a gradient.
template <class Back>
Tensor with_view_grad(Tensor out, const Tensor& x, const char* name, Back back) {
  if (needs_grad({x})) attach_grad_fn(out, name, {x}, [back](const Tensor& g) { return InputGradients{back(g)}; });
  return out;
}

Shape infer_shape(const char* op, const Shape& requested, int64_t numel, const Shape& from) {
  Shape shape = requested;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      MINIDL_CHECK(infer < 0, op, ": only one dimension can be -1 in ", shape_str(requested));
      infer = static_cast<int>(i);
    } else {
      MINIDL_CHECK(shape[i] >= 0, op, ": negative dimension in ", shape_str(requested));
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    MINIDL_CHECK(known > 0 && numel % known == 0, op, ": cannot reshape ", shape_str(from), " into ",
                 shape_str(requested));
    shape[infer] = numel / known;
  }
  MINIDL_CHECK(shape_numel(shape) == numel, op, ": cannot reshape ", shape_str(from), " (", numel,
               " elements) into ", shape_str(requested));
  return shape;
}

}  // namespace

Tensor Tensor::view(const Shape& requested) const {
  MINIDL_CHECK(is_contiguous(), "view: tensor of shape ", shape_str(shape()), " is not contiguous; use reshape");
  const Shape shape = infer_shape("view", requested, numel(), this->shape());
  Tensor out = make_view(*this, shape, contiguous_strides(shape), offset());
  return with_view_grad(out, *this, "ViewBackward", [from = this->shape()](const Tensor& g) { return g.reshape(from); });
}

Tensor Tensor::reshape(const Shape& shape) const { return is_contiguous() ? view(shape) : contiguous().view(shape); }

Tensor Tensor::flatten(int start_dim, int end_dim) const {
  if (dim() == 0) return reshape({1});
  const int s = normalize_dim("flatten", start_dim, dim()), e = normalize_dim("flatten", end_dim, dim());
  MINIDL_CHECK(s <= e, "flatten: start_dim ", start_dim, " is after end_dim ", end_dim);
  Shape out;
  for (int i = 0; i < s; ++i) out.push_back(shape()[i]);
  int64_t merged = 1;
  for (int i = s; i <= e; ++i) merged *= shape()[i];
  out.push_back(merged);
  for (int i = e + 1; i < dim(); ++i) out.push_back(shape()[i]);
  return reshape(out);
}

Tensor Tensor::permute(const std::vector<int>& dims) const {
  MINIDL_CHECK(static_cast<int>(dims.size()) == dim(), "permute: ", dims.size(), " dims given for a ", dim(),
               "-D tensor of shape ", shape_str(shape()));
  std::vector<int> p(dims.size()), inverse(dims.size());
  std::vector<bool> seen(dims.size(), false);
  Shape shape_out(dims.size()), strides_out(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    p[i] = normalize_dim("permute", dims[i], dim());
    MINIDL_CHECK(!seen[p[i]], "permute: dim ", p[i], " repeated");
    seen[p[i]] = true;
    inverse[p[i]] = static_cast<int>(i);
    shape_out[i] = shape()[p[i]];
    strides_out[i] = strides()[p[i]];
  }
  Tensor out = make_view(*this, shape_out, strides_out, offset());
  return with_view_grad(out, *this, "PermuteBackward", [inverse](const Tensor& g) { return g.permute(inverse); });
}

Tensor Tensor::transpose(int d0, int d1) const {
  std::vector<int> p(dim());
  std::iota(p.begin(), p.end(), 0);
  std::swap(p[normalize_dim("transpose", d0, dim())], p[normalize_dim("transpose", d1, dim())]);
  return permute(p);
}

Tensor Tensor::slice(int d, int64_t start, int64_t end, int64_t step) const {
  const int k = normalize_dim("slice", d, dim());
  const int64_t n = shape()[k];
  MINIDL_CHECK(step > 0, "slice: step must be positive, got ", step);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape shape_out = shape(), strides_out = strides();
  shape_out[k] = (end - start + step - 1) / step;
  strides_out[k] *= step;
  Tensor out = make_view(*this, shape_out, strides_out, offset() + start * strides()[k]);
  return with_view_grad(out, *this, "SliceBackward", [from = shape(), k, start, end, step, o = options()](const Tensor& g) {
    Tensor gx = zeros(from, o);
    copy_(gx.slice(k, start, end, step), g);
    return gx;
  });
}

Tensor Tensor::select(int d, int64_t index) const {
  const int k = normalize_dim("select", d, dim());
  const int64_t n = shape()[k];
  MINIDL_CHECK(index >= -n && index < n, "select: index ", index, " out of range for dim ", d, " of size ", n);
  if (index < 0) index += n;
  return slice(k, index, index + 1).squeeze(k);
}

Tensor Tensor::expand(const Shape& shape_out) const {
  const int lead = static_cast<int>(shape_out.size()) - dim();
  MINIDL_CHECK(lead >= 0, "expand: cannot expand shape ", shape_str(shape()), " to fewer dims ", shape_str(shape_out));
  Shape strides_out(shape_out.size(), 0);
  for (int i = 0; i < dim(); ++i) {
    const int64_t from = shape()[i], to = shape_out[i + lead];
    MINIDL_CHECK(from == to || from == 1, "expand: cannot expand shape ", shape_str(shape()), " to ",
                 shape_str(shape_out), " (dim ", i, ": ", from, " -> ", to, ")");
    strides_out[i + lead] = from == to ? strides()[i] : 0;
  }
  Tensor out = make_view(*this, shape_out, strides_out, offset());
  return with_view_grad(out, *this, "ExpandBackward", [from = shape()](const Tensor& g) { return sum_to(g, from); });
}

Tensor Tensor::unsqueeze(int d) const {
  const int k = normalize_dim("unsqueeze", d, dim() + 1);
  Shape shape_out = shape(), strides_out = strides();
  const int64_t stride = k < dim() ? strides()[k] * shape()[k] : 1;
  shape_out.insert(shape_out.begin() + k, 1);
  strides_out.insert(strides_out.begin() + k, stride);
  Tensor out = make_view(*this, shape_out, strides_out, offset());
  return with_view_grad(out, *this, "UnsqueezeBackward", [k](const Tensor& g) { return g.squeeze(k); });
}

Tensor Tensor::squeeze(int d) const {
  const int k = normalize_dim("squeeze", d, dim());
  MINIDL_CHECK(shape()[k] == 1, "squeeze: dim ", d, " has size ", shape()[k], ", not 1, in shape ", shape_str(shape()));
  Shape shape_out = shape(), strides_out = strides();
  shape_out.erase(shape_out.begin() + k);
  strides_out.erase(strides_out.begin() + k);
  Tensor out = make_view(*this, shape_out, strides_out, offset());
  return with_view_grad(out, *this, "SqueezeBackward", [k](const Tensor& g) { return g.unsqueeze(k); });
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), options());
  copy_(out, *this);
  return with_view_grad(out, *this, "CloneBackward", [](const Tensor& g) { return g; });
}

Tensor concat(const std::vector<Tensor>& tensors, int dim) {
  MINIDL_CHECK(!tensors.empty(), "concat: no tensors given");
  check_same_device("concat", tensors);
  check_same_dtype("concat", tensors);
  const Tensor& first = tensors[0];
  const int d = normalize_dim("concat", dim, first.dim());
  Shape shape = first.shape();
  shape[d] = 0;
  for (const Tensor& t : tensors) {
    MINIDL_CHECK(t.dim() == first.dim(), "concat: tensors of shapes ", shape_str(first.shape()), " and ",
                 shape_str(t.shape()), " have different ranks");
    for (int i = 0; i < t.dim(); ++i)
      MINIDL_CHECK(i == d || t.shape()[i] == first.shape()[i], "concat: shapes ", shape_str(first.shape()), " and ",
                   shape_str(t.shape()), " differ outside dim ", d);
    shape[d] += t.shape()[d];
  }
  Tensor out = empty(shape, first.options());
  std::vector<int64_t> starts;
  int64_t at = 0;
  for (const Tensor& t : tensors) {
    starts.push_back(at);
    copy_(out.slice(d, at, at + t.shape()[d]), t);
    at += t.shape()[d];
  }
  if (needs_grad(tensors)) {
    std::vector<int64_t> sizes;
    for (const Tensor& t : tensors) sizes.push_back(t.shape()[d]);
    attach_grad_fn(out, "ConcatBackward", tensors, [d, starts, sizes](const Tensor& g) {
      InputGradients gs;
      for (size_t i = 0; i < starts.size(); ++i) gs.push_back(g.slice(d, starts[i], starts[i] + sizes[i]));
      return gs;
    });
  }
  return out;
}

namespace {
// The gradient of a gather along the middle dim of x [outer, n, inner] (shape `xshape`) whose index is
// i3 [outer, k, inner]: gather.backward zeroes grad_x, then adds each g[o, j, i] at index i3[o, j, i].
Tensor gather_grad(const Tensor& g, const Tensor& i3, int64_t n, const Shape& xshape, TensorOptions options) {
  Tensor g3 = g.contiguous().view(i3.shape());
  Tensor gx = empty({i3.shape()[0], n, i3.shape()[2]}, options);
  dispatch(keys::gather_backward, g.device(), g3, i3, gx);
  return gx.view(xshape);
}
}  // namespace

Tensor gather(const Tensor& x, int dim, const Tensor& index) {
  check_floating("gather", x);
  check_same_device("gather", {x, index});
  MINIDL_CHECK(index.dtype() == DType::int64, "gather: index must be int64, got ", dtype_name(index.dtype()));
  MINIDL_CHECK(index.dim() == x.dim(), "gather: index shape ", shape_str(index.shape()), " and input shape ",
               shape_str(x.shape()), " have different ranks");
  const int d = normalize_dim("gather", dim, x.dim());
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < x.dim(); ++i) {
    if (i == d) continue;
    MINIDL_CHECK(index.shape()[i] == x.shape()[i], "gather: index shape ", shape_str(index.shape()),
                 " must match input shape ", shape_str(x.shape()), " outside dim ", d);
    (i < d ? outer : inner) *= x.shape()[i];
  }
  const int64_t n = x.shape()[d], k = index.shape()[d];
  Tensor x3 = x.detach().contiguous().view({outer, n, inner});
  Tensor i3 = index.contiguous().view({outer, k, inner});
  Tensor out3 = empty({outer, k, inner}, x.options());
  dispatch(keys::gather, x.device(), x3, i3, out3);
  Tensor out = out3.view(index.shape());
  if (needs_grad({x}))
    attach_grad_fn(out, "GatherBackward", {x}, [i3, n, xshape = x.shape(), o = x.options()](const Tensor& g) {
      return InputGradients{gather_grad(g, i3, n, xshape, o)};
    });
  return out;
}

// index_select = a gather whose index is the same for every (o, i): the kernel reads index[j] once per
// slice instead of an index per element. The backward reuses gather.backward (zero, then add each
// gradient at its index) with the index broadcast to [outer, k, inner].
Tensor index_select(const Tensor& x, int dim, const Tensor& index) {
  check_same_device("index_select", {x, index});
  MINIDL_CHECK(x.dtype() == DType::float32 || x.dtype() == DType::float64 || x.dtype() == DType::int64,
               "index_select: float32, float64 or int64 input, got ", dtype_name(x.dtype()));
  MINIDL_CHECK(index.dtype() == DType::int64, "index_select: index must be int64, got ", dtype_name(index.dtype()));
  MINIDL_CHECK(index.dim() == 1, "index_select: index must be 1-D, got shape ", shape_str(index.shape()));
  MINIDL_CHECK(x.dim() >= 1, "index_select: the input must have a dimension to select along");
  const int d = normalize_dim("index_select", dim, x.dim());
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < x.dim(); ++i)
    if (i != d) (i < d ? outer : inner) *= x.shape()[i];
  const int64_t n = x.shape()[d], k = index.shape()[0];
  Tensor x3 = x.detach().contiguous().view({outer, n, inner});
  Tensor i1 = index.contiguous();
  Tensor out3 = empty({outer, k, inner}, x.options());
  dispatch(keys::index_select, x.device(), x3, i1, out3);
  Shape out_shape = x.shape();
  out_shape[d] = k;
  Tensor out = out3.view(out_shape);
  if (is_floating(x.dtype()) && needs_grad({x}))
    attach_grad_fn(out, "IndexSelectBackward", {x}, [i1, outer, n, k, inner, xshape = x.shape(), o = x.options()](const Tensor& g) {
      const Tensor i3 = i1.view({1, k, 1}).expand({outer, k, inner}).contiguous();
      return InputGradients{gather_grad(g, i3, n, xshape, o)};
    });
  return out;
}

}  // namespace minidl
