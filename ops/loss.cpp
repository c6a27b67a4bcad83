// ops/loss.cpp — classification losses.
//
// cross_entropy(logits [N, C], target [N] int64) = 1/N sum_n (logsumexp_c logits[n, c] - logits[n, t_n])
//   Fused and stable: the kernel "cross_entropy" gives the per-row loss [N] (max-subtracted logsumexp),
//   and one backward node maps d(mean) = g to
//     grad_logits[n, c] = g / N * (softmax(logits[n])[c] - [c == t_n])       (kernel "cross_entropy.backward")
//   so no softmax is ever materialised in the graph.
// nll_loss(log_probs [N, C], target [N]) = -1/N sum_n log_probs[n, t_n], written with ops (gather, mean),
//   so its gradient is theirs: -1/N at each target position, 0 elsewhere.
#include "core/dispatch.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

namespace {

// inputs [N, C] floating, target [N] int64 on the same device, N > 0 and C > 0.
void check_classification(const char* op, const char* what, const Tensor& input, const Tensor& target) {
  check_floating(op, input);
  MINIDL_CHECK(target.defined(), op, ": got an undefined target");
  MINIDL_CHECK(input.dim() == 2, op, ": expected ", what, " of shape [N, C], got ", shape_str(input.shape()));
  MINIDL_CHECK(target.dtype() == DType::int64, op, ": target must hold int64 class indices, got ",
               dtype_name(target.dtype()), " of shape ", shape_str(target.shape()));
  MINIDL_CHECK(target.dim() == 1 && target.shape()[0] == input.shape()[0], op, ": target of shape ",
               shape_str(target.shape()), " does not match ", what, " of shape ", shape_str(input.shape()),
               " (expected [", input.shape()[0], "])");
  MINIDL_CHECK(input.shape()[0] > 0 && input.shape()[1] > 0, op, ": empty ", what, " of shape ",
               shape_str(input.shape()));
  check_same_device(op, {input, target});
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target) {
  check_classification("cross_entropy", "logits", logits, target);
  const int64_t n = logits.shape()[0];
  const Tensor packed_logits = logits.detach().contiguous();
  const Tensor packed_target = target.contiguous();
  Tensor per_row = empty({n}, logits.options());
  dispatch(keys::cross_entropy, logits.device(), packed_logits, packed_target, per_row);
  Tensor out = mean(per_row);  // per_row has no history, so this records nothing
  if (needs_grad({logits}))
    attach_grad_fn(out, "CrossEntropyBackward", {logits}, [packed_logits, packed_target, n](const Tensor& g) {
      // d(mean)/d(loss[n]) = 1/N for every row.
      const Tensor grad_rows = mul_scalar(g.reshape({1}).expand({n}), 1.0 / static_cast<double>(n));
      Tensor grad_logits = empty(packed_logits.shape(), packed_logits.options());
      dispatch(keys::cross_entropy_backward, g.device(), packed_logits, packed_target,
               grad_rows, grad_logits);
      return InputGradients{grad_logits};
    });
  return out;
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target) {
  check_classification("nll_loss", "log_probs", log_probs, target);
  return neg(mean(gather(log_probs, 1, target.unsqueeze(1))));
}

}  // namespace minidl
