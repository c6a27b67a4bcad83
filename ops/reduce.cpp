// ops/reduce.cpp — sum, mean, max and argmax over dimensions.
//
// Layout trick shared by all of them: permute the kept dims first and the reduced dims last, pack, and
// view as [rows, cols]; the kernels then only reduce each row of a matrix (ops/kernel_signatures.h).
// Gradients: sum -> g broadcast back over the reduced dims; mean -> the same / count;
// max -> gather of the argmax, so its gradient is gather's (the first maximal element gets g).
#include <algorithm>

#include "core/dispatch.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

namespace {

struct ReduceLayout {
  std::vector<int> reduced;  // sorted dims being reduced
  std::vector<int> perm;     // kept dims then reduced dims
  Shape kept_shape;          // shape without the reduced dims
  Shape keepdim_shape;       // shape with reduced dims as 1
  int64_t rows = 1, cols = 1;
};

ReduceLayout layout_for(const char* op, const Tensor& x, std::vector<int> dims) {
  ReduceLayout L;
  const int n = x.dim();
  if (dims.empty())
    for (int i = 0; i < n; ++i) dims.push_back(i);
  for (int& d : dims) d = normalize_dim(op, d, n);
  std::sort(dims.begin(), dims.end());
  MINIDL_CHECK(std::adjacent_find(dims.begin(), dims.end()) == dims.end(), op, ": a dim appears twice");
  L.reduced = dims;
  for (int i = 0; i < n; ++i) {
    const bool r = std::binary_search(dims.begin(), dims.end(), i);
    L.keepdim_shape.push_back(r ? 1 : x.shape()[i]);
    if (!r) {
      L.perm.push_back(i);
      L.kept_shape.push_back(x.shape()[i]);
      L.rows *= x.shape()[i];
    }
  }
  for (int d : dims) {
    L.perm.push_back(d);
    L.cols *= x.shape()[d];
  }
  return L;
}

// x viewed as [rows, cols] with the reduced dims last (a copy only when needed).
Tensor as_rows(const Tensor& x, const ReduceLayout& L) {
  return x.detach().permute(L.perm).contiguous().view({L.rows, L.cols});
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<int>& dims, bool keepdim) {
  check_floating("sum", x);
  const ReduceLayout L = layout_for("sum", x, dims);
  Tensor out = empty({L.rows}, x.options());
  dispatch(keys::sum, x.device(), as_rows(x, L), out);
  out = out.view(keepdim ? L.keepdim_shape : L.kept_shape);
  if (needs_grad({x}))
    attach_grad_fn(out, "SumBackward", {x}, [L, shape = x.shape()](const Tensor& g) {
      return InputGradients{g.reshape(L.keepdim_shape).expand(shape)};
    });
  return out;
}

Tensor mean(const Tensor& x, const std::vector<int>& dims, bool keepdim) {
  check_floating("mean", x);
  const ReduceLayout L = layout_for("mean", x, dims);
  MINIDL_CHECK(L.cols > 0, "mean: reducing over zero elements of shape ", shape_str(x.shape()));
  return mul_scalar(sum(x, dims, keepdim), 1.0 / static_cast<double>(L.cols));
}

Tensor argmax(const Tensor& x, int dim, bool keepdim) {
  MINIDL_CHECK(x.numel() > 0, "argmax: empty tensor of shape ", shape_str(x.shape()));
  const ReduceLayout L = layout_for("argmax", x, {dim});
  Tensor values = empty({L.rows}, x.options());
  Tensor index = empty({L.rows}, TensorOptions(DType::int64, x.device()));
  dispatch(keys::max, x.device(), as_rows(x, L), values, index);
  return index.view(keepdim ? L.keepdim_shape : L.kept_shape);
}

Tensor max(const Tensor& x, int dim, bool keepdim) {
  check_floating("max", x);
  const int d = normalize_dim("max", dim, x.dim());
  Tensor out = gather(x, d, argmax(x, d, /*keepdim=*/true));
  return keepdim ? out : out.squeeze(d);
}

}  // namespace minidl
