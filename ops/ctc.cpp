// ops/ctc.cpp — the CTC loss front end: argument checks, the per-sample kernel with its dedicated
// backward kernel, and PyTorch's 'mean' reduction written with ops.
//
//   nll[n]  = -log p(targets[n] | log_probs[:, n])           (kernel "ctc_loss"; recursions in
//                                                              ops/kernel_signatures.h)
//   loss    = mean_n nll[n] / max(target_lengths[n], 1)
// Gradient: d loss / d nll[n] = 1 / (N * max(L_n, 1)) comes from the mul and mean ops; the kernel
// "ctc_loss.backward" turns it into d loss / d log_probs with the alpha table saved by the forward kernel
// and a beta recursion.
//
// Inside a CUDA graph capture (nn/graphed_step.h) the labels and lengths are not checked: reading them
// back would need the device to run, and nothing runs while a capture is recorded. They must then be on
// the log-probabilities' device already (a copy from host memory cannot be captured), and the caller
// checks every batch it copies into them with check_ctc_targets (ops/ctc_checks.h). The weights
// 1 / max(L_n, 1) are computed with ops from target_lengths where it lives, eagerly and captured alike,
// so a replayed step gives the eager step's loss.
#include "core/capture.h"
#include "core/dispatch.h"
#include "ops/ctc_checks.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

namespace {

void check_index_tensor(const Tensor& t, const char* name, int dims, const char* what) {
  MINIDL_CHECK(t.defined(), "ctc_loss: ", name, " is undefined");
  MINIDL_CHECK(t.dtype() == DType::int64, "ctc_loss: ", name, " must be int64, got ", dtype_name(t.dtype()));
  check_dim("ctc_loss", t, dims, what);
}

// The values of the labels and lengths, read on the host (a sync for device tensors), where the
// messages can say which sample. The shapes and dtypes are checked already; `shapes` is for the messages.
void check_index_values(const Tensor& targets, const Tensor& input_lengths, const Tensor& target_lengths,
                        int64_t T, int64_t C, int64_t blank, const std::string& shapes) {
  const int64_t N = targets.size(0), S = targets.size(1);
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
}

}  // namespace

void check_ctc_targets(const Tensor& targets, const Tensor& input_lengths, const Tensor& target_lengths, int64_t T,
                       int64_t C, int64_t blank) {
  check_index_tensor(targets, "targets", 2, "[N, S] of padded labels");
  check_index_tensor(input_lengths, "input_lengths", 1, "[N]");
  check_index_tensor(target_lengths, "target_lengths", 1, "[N]");
  const int64_t N = targets.size(0);
  MINIDL_CHECK(input_lengths.size(0) == N && target_lengths.size(0) == N, "ctc_loss: input_lengths ",
               shape_str(input_lengths.shape()), " and target_lengths ", shape_str(target_lengths.shape()),
               " must both be [", N, "]");
  MINIDL_CHECK(blank >= 0 && blank < C, "ctc_loss: blank ", blank, " is not a class of [0, ", C, ")");
  check_index_values(targets, input_lengths, target_lengths, T, C, blank,
                     str_cat("targets ", shape_str(targets.shape())));
}

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

  const Device device = log_probs.device();
  if (capture_running(device)) {  // see the header: checked by the caller, already on the device
    MINIDL_CHECK(targets.device() == device && input_lengths.device() == device && target_lengths.device() == device,
                 "ctc_loss: inside a CUDA graph capture, targets, input_lengths and target_lengths must be on ",
                 device.str(), " already (a copy from host memory cannot be captured); got ", targets.device().str(),
                 ", ", input_lengths.device().str(), ", ", target_lengths.device().str());
  } else {  // the lengths and labels are small: check them on the host, where the messages can say which sample
    check_index_values(targets, input_lengths, target_lengths, T, C, blank, shapes);
  }

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

  // scale[n] = 1 / max(L_n, 1) in log_probs' dtype, on the device (max(L, 1) = relu(L - 1) + 1 for whole
  // L >= 0, exact in floating point): no host values, so the same ops run inside a capture.
  const Tensor length = tl.to(log_probs.dtype());
  const Tensor scale = div(ones({N}, log_probs.options()), add_scalar(relu(add_scalar(length, -1.0)), 1.0));
  return mean(mul(nll, scale));
}

}  // namespace minidl
