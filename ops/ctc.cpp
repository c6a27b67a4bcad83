// ops/ctc.cpp — the CTC loss front end: argument checks, the per-sample kernel with its dedicated
// backward kernel, and PyTorch's 'mean' reduction written with ops.
//
//   nll[n]  = -log p(targets[n] | log_probs[:, n])           (kernel "ctc_loss"; recursions in
//                                                              ops/kernel_signatures.h)
//   loss    = mean_n nll[n] / max(target_lengths[n], 1)
// Gradient: d loss / d nll[n] = 1 / (N * max(L_n, 1)) comes from the mul and mean ops; the kernel
// "ctc_loss.backward" turns it into d loss / d log_probs with the alpha table saved by the forward kernel
// and a beta recursion.
#include <algorithm>

#include "core/dispatch.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

namespace {

void check_index_tensor(const Tensor& t, const char* name, int dims, const char* what) {
  MINIDL_CHECK(t.defined(), "ctc_loss: ", name, " is undefined");
  MINIDL_CHECK(t.dtype() == DType::int64, "ctc_loss: ", name, " must be int64, got ", dtype_name(t.dtype()));
  check_dim("ctc_loss", t, dims, what);
}

}  // namespace

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank, bool zero_infinity) {
  check_floating("ctc_loss", log_probs);
  check_dim("ctc_loss", log_probs, 3, "[T, N, C] of log-probabilities");
  check_index_tensor(targets, "targets", 2, "[N, S] of padded labels");
  check_index_tensor(input_lengths, "input_lengths", 1, "[N]");
  check_index_tensor(target_lengths, "target_lengths", 1, "[N]");
  const int64_t T = log_probs.size(0), N = log_probs.size(1), C = log_probs.size(2), S = targets.size(1);
  const std::string shapes = str_cat("log_probs ", shape_str(log_probs.shape()), ", targets ",
                                     shape_str(targets.shape()));
  MINIDL_CHECK(N > 0 && C > 0, "ctc_loss: empty batch or no classes (", shapes, ")");
  MINIDL_CHECK(targets.size(0) == N, "ctc_loss: targets has ", targets.size(0), " rows for a batch of ", N, " (",
               shapes, ")");
  MINIDL_CHECK(input_lengths.size(0) == N && target_lengths.size(0) == N, "ctc_loss: input_lengths ",
               shape_str(input_lengths.shape()), " and target_lengths ", shape_str(target_lengths.shape()),
               " must both be [", N, "]");
  MINIDL_CHECK(blank >= 0 && blank < C, "ctc_loss: blank ", blank, " is not a class of [0, ", C, ")");

  // The lengths and labels are small: check them on the host, where the messages can say which sample.
  const std::vector<int64_t> in_len = input_lengths.to_vector<int64_t>();
  const std::vector<int64_t> tg_len = target_lengths.to_vector<int64_t>();
  const std::vector<int64_t> labels = targets.to_vector<int64_t>();
  for (int64_t n = 0; n < N; ++n) {
    MINIDL_CHECK(in_len[n] >= 0 && in_len[n] <= T, "ctc_loss: input_lengths[", n, "] = ", in_len[n],
                 " is outside [0, T = ", T, "]");
    MINIDL_CHECK(tg_len[n] >= 0 && tg_len[n] <= S, "ctc_loss: target_lengths[", n, "] = ", tg_len[n],
                 " is outside [0, S = ", S, "] (", shapes, ")");
    for (int64_t s = 0; s < tg_len[n]; ++s) {
      const int64_t k = labels[n * S + s];
      MINIDL_CHECK(k >= 0 && k < C, "ctc_loss: targets[", n, ", ", s, "] = ", k, " is not a class of [0, ", C, ")");
      MINIDL_CHECK(k != blank, "ctc_loss: targets[", n, ", ", s, "] is the blank (", blank,
                   "); labels must be the other classes");
    }
  }

  const Device device = log_probs.device();
  const Tensor lp = log_probs.detach().contiguous();
  const Tensor tg = targets.detach().to(device).contiguous();
  const Tensor il = input_lengths.detach().to(device).contiguous();
  const Tensor tl = target_lengths.detach().to(device).contiguous();
  Tensor nll = empty({N}, log_probs.options());
  Tensor log_alpha = empty({N, T, 2 * S + 1}, log_probs.options());
  dispatch(keys::ctc_loss, device, lp, tg, il, tl, blank, zero_infinity, nll, log_alpha);
  if (needs_grad({log_probs}))
    attach_grad_fn(nll, "CtcLossBackward", {log_probs},
                   [lp, tg, il, tl, log_alpha, blank, zero_infinity](const Tensor& g) {
                     Tensor grad = empty(lp.shape(), lp.options());
                     dispatch(keys::ctc_loss_backward, lp.device(), lp, tg, il, tl, log_alpha,
                              g.contiguous(), blank, zero_infinity, grad);
                     return InputGradients{grad};
                   });

  std::vector<double> inverse_length(N);
  for (int64_t n = 0; n < N; ++n) inverse_length[n] = 1.0 / static_cast<double>(std::max<int64_t>(tg_len[n], 1));
  const Tensor scale = from_vector(inverse_length, {N}, log_probs.options());
  return mean(mul(nll, scale));
}

}  // namespace minidl
