// ops/kernel_signatures.h — the contract between op front ends (ops/) and kernels (cpu/, cuda/).
//
// Every kernel is `bool f(...)`: true when it did the work, false when it declines (wrong dtype,
// layout it does not handle), and the dispatcher tries the next one. The front end has already
// checked shapes, devices and dtypes and allocated the outputs (contiguous, uninitialised unless said
// otherwise), so kernels check only what *they* cannot handle.
//
// Conventions, for every kernel below unless it says otherwise:
//   - all tensors are on the kernel's device and share one floating dtype (float32 or float64);
//     index tensors are int64;
//   - outputs are freshly allocated and contiguous, and kernels overwrite them (`=`, never `+=`);
//   - inputs marked "any strides" may be non-contiguous views, including stride-0 broadcast views;
//     every other input is contiguous.
// What a kernel may decline (the documented declines, which the tests' all-kernel sweeps accept): a dtype
// other than float32; a transposed operand (matmul's trans_a, trans_b); an "any strides" input that is
// not contiguous. It must serve float32 contiguous inputs of every size the front end allows: the sweeps
// fail a kernel that declines those (tests/test_util.h served_or_declined).
// The naive CPU kernels (cpu/*_naive.cpp) are the reference every other kernel is tested against.
// Each signature is followed by its keys, typed objects in namespace minidl::keys (core/kernel_key.h):
// keys::conv2d_backward_input is key "conv2d.backward_input", whose kernels are Conv2dBackwardInputKernel.
// Registration and dispatch take these objects (core/dispatch.h), so there is one declaration per key.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/call_shape.h"
#include "core/tensor.h"
#include "core/tensor_kernels.h"

namespace minidl {

// ---------------------------------------------------------------- elementwise
// Keys: "neg" "exp" "log" "sqrt" "relu" "sigmoid" "tanh".  out = f(x);  x any strides, same shape as out.
using UnaryKernel = bool(const Tensor& x, Tensor& out);
namespace keys {
inline const KernelKey<UnaryKernel> exp{"exp"};
inline const KernelKey<UnaryKernel> log{"log"};
inline const KernelKey<UnaryKernel> neg{"neg"};
inline const KernelKey<UnaryKernel> relu{"relu"};
inline const KernelKey<UnaryKernel> sigmoid{"sigmoid"};
inline const KernelKey<UnaryKernel> sqrt{"sqrt"};
inline const KernelKey<UnaryKernel> tanh{"tanh"};
}  // namespace keys

// Keys: "add_scalar" (x + s), "mul_scalar" (x * s), "pow_scalar" (x ^ s).  x any strides.
using UnaryScalarKernel = bool(const Tensor& x, double scalar, Tensor& out);
namespace keys {
inline const KernelKey<UnaryScalarKernel> add_scalar{"add_scalar"};
inline const KernelKey<UnaryScalarKernel> mul_scalar{"mul_scalar"};
inline const KernelKey<UnaryScalarKernel> pow_scalar{"pow_scalar"};
}  // namespace keys

// Keys: "add" "sub" "mul" "div", and the backward helpers
//   "relu_backward"  out = x > 0 ? g : 0          (a = g, b = x)
// a and b are already broadcast (expanded) to out's shape: any strides, including 0.
using BinaryKernel = bool(const Tensor& a, const Tensor& b, Tensor& out);
namespace keys {
inline const KernelKey<BinaryKernel> add{"add"};
inline const KernelKey<BinaryKernel> div{"div"};
inline const KernelKey<BinaryKernel> mul{"mul"};
inline const KernelKey<BinaryKernel> relu_backward{"relu_backward"};
inline const KernelKey<BinaryKernel> sub{"sub"};
}  // namespace keys

// Keys: "eq" "ne" "gt" "ge" "lt" "le", the comparisons: out = (a OP b) ? 1 : 0, in a's floating dtype
// (minidl has no bool dtype). The BinaryKernel signature and layouts: a and b broadcast, any strides.
namespace keys {
inline const KernelKey<BinaryKernel> eq{"eq"};
inline const KernelKey<BinaryKernel> ge{"ge"};
inline const KernelKey<BinaryKernel> gt{"gt"};
inline const KernelKey<BinaryKernel> le{"le"};
inline const KernelKey<BinaryKernel> lt{"lt"};
inline const KernelKey<BinaryKernel> ne{"ne"};
}  // namespace keys

// Keys "copy", "cast" (CopyKernel) and "fill" (FillKernel): in core/tensor_kernels.h, included above, as the
// Tensor itself dispatches them (to(), contiguous(), zeros()).

// Key "pack": flat[offsets[k] + i] = srcs[k][i] for every k and i: several tensors copied into one flat
// buffer in one call (one kernel launch on a GPU instead of one copy each; dist/data_parallel.cpp packs
// a bucket's gradients with it). flat is 1-D and contiguous; every src is contiguous, of flat's dtype
// (any of the four) and device, and the ranges [offsets[k], offsets[k] + numel) lie inside flat without
// overlapping. Elements of flat outside them keep their values.
using PackKernel = bool(const std::vector<Tensor>& srcs, const std::vector<int64_t>& offsets, Tensor& flat);
namespace keys {
inline const KernelKey<PackKernel> pack{"pack"};
}  // namespace keys

// Key "dropout_mask": mask[i] = (u_i >= p) ? 1/(1-p) : 0, where u_i = philox_uniform(seed, offset + i)
// (core/philox.h). Counter-based, so CPU and GPU produce the same mask for the same (seed, offset).
// Exactly as C++ evaluates it: the float u_i is compared with p as a double (not with float(p)), and
// 1/(1-p) is computed in double, then rounded to the mask's dtype.
// offset_shift: undefined, or an int64 [1] tensor on the mask's device whose value, read when the kernel
// runs, is added to offset. A captured CUDA graph replays its kernels with the arguments they were
// captured with; the shift is how each replay draws new numbers (core/capture.h).
using DropoutMaskKernel = bool(Tensor& mask, double p, uint64_t seed, uint64_t offset, const Tensor& offset_shift);
namespace keys {
inline const KernelKey<DropoutMaskKernel> dropout_mask{"dropout_mask"};
}  // namespace keys

// ---------------------------------------------------------------- reductions
// x is [rows, cols] contiguous; the front end permutes reduced dims last and flattens.
// Key "sum": out[r] = sum_c x[r, c]  (out is [rows]).
using RowReduceKernel = bool(const Tensor& x, Tensor& out);
namespace keys {
inline const KernelKey<RowReduceKernel> sum{"sum"};
}  // namespace keys
// Key "max": out[r] = max_c x[r, c], index[r] = the first c reaching it (int64).
using RowMaxKernel = bool(const Tensor& x, Tensor& out, Tensor& index);
namespace keys {
inline const KernelKey<RowMaxKernel> max{"max"};
}  // namespace keys

// ---------------------------------------------------------------- indexing
// x is [outer, n, inner] contiguous, index is [outer, k, inner] int64 with values in [0, n).
// Key "gather":              out[o, j, i] = x[o, index[o, j, i], i]          (out is [outer, k, inner])
// Key "gather.backward":     grad_x[o, n', i] = sum over j with index[o,j,i] == n' of grad_out[o, j, i]
using GatherKernel = bool(const Tensor& x, const Tensor& index, Tensor& out);
namespace keys {
inline const KernelKey<GatherKernel> gather{"gather"};
}  // namespace keys
using ScatterAddKernel = bool(const Tensor& grad_out, const Tensor& index, Tensor& grad_x);
namespace keys {
inline const KernelKey<ScatterAddKernel> gather_backward{"gather.backward"};
}  // namespace keys
// x is [outer, n, inner] contiguous of any dtype (float32, float64, int64), index is [k] int64 with values
// in [0, n): whole slices are picked, the same index for every (o, i).
// Key "index_select":        out[o, j, i] = x[o, index[j], i]                (out is [outer, k, inner])
// Its backward is gather.backward's scatter-add with the index broadcast to [outer, k, inner].
using IndexSelectKernel = bool(const Tensor& x, const Tensor& index, Tensor& out);
namespace keys {
inline const KernelKey<IndexSelectKernel> index_select{"index_select"};
}  // namespace keys

// ---------------------------------------------------------------- matrix product
// Key "matmul": batched. a is [B, ra, ca], b is [B, rb, cb], out is [B, M, N], all contiguous;
//   op(a) = trans_a ? a^T : a  ([M, K]),  op(b) = trans_b ? b^T : b  ([K, N]),  out[i] = op(a[i]) op(b[i]).
using MatmulKernel = bool(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b);
namespace keys {
inline const KernelKey<MatmulKernel> matmul{"matmul"};
}  // namespace keys

// ---------------------------------------------------------------- bias + ReLU epilogue (fused)
// The layer output y seen as [outer, C, inner] (C the channel or feature dim: [N, O, OH*OW] after a
// convolution, [rows, out_features, 1] after a linear layer), all contiguous, bias [C]:
// Key "bias_relu":            out[o, c, i] = relu(y[o, c, i] + bias[c])      (relu(z) = z > 0 ? z : 0)
// Key "bias_relu.backward":   g and out [outer, C, inner], out the forward's output (out > 0 exactly where
//                             the pre-activation was > 0):
//   grad_y[o, c, i] = out[o, c, i] > 0 ? g[o, c, i] : 0        grad_bias[c] = sum_{o, i} grad_y[o, c, i]
// One pass each way instead of add + relu forward and relu_backward + sum backward.
using BiasReluKernel = bool(const Tensor& y, const Tensor& bias, Tensor& out);
namespace keys {
inline const KernelKey<BiasReluKernel> bias_relu{"bias_relu"};
}  // namespace keys
using BiasReluBackwardKernel = bool(const Tensor& g, const Tensor& out, Tensor& grad_y, Tensor& grad_bias);
namespace keys {
inline const KernelKey<BiasReluBackwardKernel> bias_relu_backward{"bias_relu.backward"};
}  // namespace keys

// ---------------------------------------------------------------- convolution and pooling
struct Conv2dParams {
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
};
// Its part of a call's shape (core/call_shape.h), as `minidl bench --shape conv2d:...` writes it: "s1p0", "s2x1p1".
inline void describe_arg(std::string& out, const Conv2dParams& p) {
  out += (out.empty() ? "" : ",") + describe_axes('s', p.stride_h, p.stride_w) + describe_axes('p', p.pad_h, p.pad_w);
}
// Cross-correlation, x [N, C, H, W], w [O, C, KH, KW], y [N, O, OH, OW],
//   OH = (H + 2*pad_h - KH) / stride_h + 1 (and likewise OW),
//   y[n,o,p,q] = sum_{c,i,j} x[n, c, p*sh - ph + i, q*sw - pw + j] * w[o,c,i,j]   (zero outside x).
// Key "conv2d" (forward): y from x, w.  No bias: the front end adds it.
using Conv2dKernel = bool(const Tensor& x, const Tensor& w, Tensor& y, const Conv2dParams& p);
namespace keys {
inline const KernelKey<Conv2dKernel> conv2d{"conv2d"};
}  // namespace keys
// Key "conv2d.backward_input": grad_x from grad_y, w (x's shape is grad_x's).
using Conv2dBackwardInputKernel = bool(const Tensor& grad_y, const Tensor& w, Tensor& grad_x,
                                       const Conv2dParams& p);
namespace keys {
inline const KernelKey<Conv2dBackwardInputKernel> conv2d_backward_input{"conv2d.backward_input"};
}  // namespace keys
// Key "conv2d.backward_weight": grad_w from x, grad_y.
using Conv2dBackwardWeightKernel = bool(const Tensor& x, const Tensor& grad_y, Tensor& grad_w,
                                        const Conv2dParams& p);
namespace keys {
inline const KernelKey<Conv2dBackwardWeightKernel> conv2d_backward_weight{"conv2d.backward_weight"};
}  // namespace keys

// Key "conv2d_bias_relu" (a fused forward): y = relu(conv(x, w) + bias[o]), bias [O]; x, y as for "conv2d".
// The backward needs no key of its own: bias_relu.backward (from y) then conv2d's two backward stages.
// Its kernels may decline any call: the front end (ops/conv_bias_relu.cpp) then runs conv2d and bias_relu.
using Conv2dBiasReluKernel = bool(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y,
                                  const Conv2dParams& p);
namespace keys {
inline const KernelKey<Conv2dBiasReluKernel> conv2d_bias_relu{"conv2d_bias_relu"};
}  // namespace keys

struct Pool2dParams {
  int kernel_h = 2, kernel_w = 2;
  int stride_h = 2, stride_w = 2;
  int pad_h = 0, pad_w = 0;
};
// Its part of a call's shape (core/call_shape.h), as `minidl bench --shape max_pool2d:...` writes it: "k2s2p0".
inline void describe_arg(std::string& out, const Pool2dParams& p) {
  out += (out.empty() ? "" : ",") + describe_axes('k', p.kernel_h, p.kernel_w) +
         describe_axes('s', p.stride_h, p.stride_w) + describe_axes('p', p.pad_h, p.pad_w);
}
// x [N, C, H, W] -> y [N, C, OH, OW], OH = (H + 2*pad_h - KH) / stride_h + 1.
// Key "max_pool2d": y = max over the window (padding never wins: it counts as -infinity).
using Pool2dKernel = bool(const Tensor& x, Tensor& y, const Pool2dParams& p);
namespace keys {
inline const KernelKey<Pool2dKernel> avg_pool2d{"avg_pool2d"};
inline const KernelKey<Pool2dKernel> max_pool2d{"max_pool2d"};
}  // namespace keys
// Key "max_pool2d.backward": each window's grad_y goes to the first position (row-major in the window)
// where x equals y; positions that win several windows sum their gradients.
using MaxPool2dBackwardKernel = bool(const Tensor& x, const Tensor& y, const Tensor& grad_y, Tensor& grad_x,
                                     const Pool2dParams& p);
namespace keys {
inline const KernelKey<MaxPool2dBackwardKernel> max_pool2d_backward{"max_pool2d.backward"};
}  // namespace keys
// Key "avg_pool2d": y = sum over the window / (KH*KW) (padding counts as zeros, included in the count).
// Key "avg_pool2d.backward": grad_x[pos] = sum over windows containing pos of grad_y / (KH*KW).
using AvgPool2dBackwardKernel = bool(const Tensor& grad_y, Tensor& grad_x, const Pool2dParams& p);
namespace keys {
inline const KernelKey<AvgPool2dBackwardKernel> avg_pool2d_backward{"avg_pool2d.backward"};
}  // namespace keys

// ---------------------------------------------------------------- softmax family (over the last dim)
// x is [rows, cols] contiguous.
// Key "softmax":          y[r,c] = exp(x[r,c] - m_r) / sum_c' exp(x[r,c'] - m_r),  m_r = max_c x[r,c]
// Key "log_softmax":      y[r,c] = x[r,c] - m_r - log(sum_c' exp(x[r,c'] - m_r))
using SoftmaxKernel = bool(const Tensor& x, Tensor& y);
namespace keys {
inline const KernelKey<SoftmaxKernel> log_softmax{"log_softmax"};
inline const KernelKey<SoftmaxKernel> softmax{"softmax"};
}  // namespace keys
// Key "softmax.backward":      grad_x = y * (grad_y - sum_c(grad_y * y))
// Key "log_softmax.backward":  grad_x = grad_y - exp(y) * sum_c(grad_y)
using SoftmaxBackwardKernel = bool(const Tensor& y, const Tensor& grad_y, Tensor& grad_x);
namespace keys {
inline const KernelKey<SoftmaxBackwardKernel> log_softmax_backward{"log_softmax.backward"};
inline const KernelKey<SoftmaxBackwardKernel> softmax_backward{"softmax.backward"};
}  // namespace keys

// Key "cross_entropy": fused, stable.  logits [N, C], target [N] int64 in [0, C)
//   loss[n] = logsumexp_c(logits[n, c]) - logits[n, target[n]]          (loss is [N])
using CrossEntropyKernel = bool(const Tensor& logits, const Tensor& target, Tensor& loss);
namespace keys {
inline const KernelKey<CrossEntropyKernel> cross_entropy{"cross_entropy"};
}  // namespace keys
// Key "cross_entropy.backward":  grad_logits[n, c] = grad_loss[n] * (softmax(logits[n])[c] - [c == target[n]])
using CrossEntropyBackwardKernel = bool(const Tensor& logits, const Tensor& target, const Tensor& grad_loss,
                                        Tensor& grad_logits);
namespace keys {
inline const KernelKey<CrossEntropyBackwardKernel> cross_entropy_backward{"cross_entropy.backward"};
}  // namespace keys

// ---------------------------------------------------------------- batch normalisation
// x is [N, C, S] contiguous (S = H*W for images, 1 for [N, C]); gamma, beta [C]. Per channel c over
// the N*S values: mean_c, var_c (biased), invstd_c = 1/sqrt(var_c + eps).
// Key "batch_norm" (training): y = (x - mean_c) * invstd_c * gamma_c + beta_c; writes save_mean [C],
//   save_invstd [C].
using BatchNormKernel = bool(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                             Tensor& save_mean, Tensor& save_invstd);
namespace keys {
inline const KernelKey<BatchNormKernel> batch_norm{"batch_norm"};
inline const KernelKey<BatchNormKernel> batch_norm_relu{"batch_norm_relu"};
}  // namespace keys
// Key "batch_norm.inference": y = (x - mean_c) / sqrt(var_c + eps) * gamma_c + beta_c with given stats.
using BatchNormInferenceKernel = bool(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                      const Tensor& mean, const Tensor& var, double eps, Tensor& y);
namespace keys {
inline const KernelKey<BatchNormInferenceKernel> batch_norm_inference{"batch_norm.inference"};
}  // namespace keys
// Key "batch_norm.backward" (training mode), with xhat = (x - mean) * invstd and M = N*S:
//   grad_gamma_c = sum grad_y * xhat,  grad_beta_c = sum grad_y,
//   grad_x = gamma_c * invstd_c / M * (M * grad_y - grad_beta_c - xhat * grad_gamma_c)
using BatchNormBackwardKernel = bool(const Tensor& x, const Tensor& grad_y, const Tensor& gamma,
                                     const Tensor& save_mean, const Tensor& save_invstd, Tensor& grad_x,
                                     Tensor& grad_gamma, Tensor& grad_beta);
namespace keys {
inline const KernelKey<BatchNormBackwardKernel> batch_norm_backward{"batch_norm.backward"};
}  // namespace keys
// Batch norm followed by a ReLU, fused (the captcha model's conv, BatchNorm2d, ReLU blocks):
// Key "batch_norm_relu" (training): y = relu((x - mean_c) * invstd_c * gamma_c + beta_c), the BatchNormKernel
//   signature (save_mean, save_invstd as there).
// Key "batch_norm_relu.backward": y is that forward's output; the batch_norm.backward formulas with grad_y
//   replaced by grad_y * [y > 0] (the ReLU's gradient, y > 0 exactly where the normalised value was).
using BatchNormReluBackwardKernel = bool(const Tensor& x, const Tensor& y, const Tensor& grad_y, const Tensor& gamma,
                                         const Tensor& save_mean, const Tensor& save_invstd, Tensor& grad_x,
                                         Tensor& grad_gamma, Tensor& grad_beta);
namespace keys {
inline const KernelKey<BatchNormReluBackwardKernel> batch_norm_relu_backward{"batch_norm_relu.backward"};
}  // namespace keys
// Key "batch_norm.running_stats" (training, after "batch_norm" or "batch_norm_relu"; in place, no
// autograd): from that call's save_mean and save_invstd [C] over its M = N*S values per channel,
//   var_c          = 1 / save_invstd_c^2 - eps                          (the biased batch variance)
//   running_mean_c = (1 - momentum) * running_mean_c + momentum * save_mean_c
//   running_var_c  = (1 - momentum) * running_var_c  + momentum * var_c * M / (M - 1)   (unbiased)
// running_mean and running_var [C] are updated in place (the one exception to "outputs are fresh");
// either may be undefined, and is then left alone. count is M (at least 2).
using BatchNormRunningStatsKernel = bool(const Tensor& save_mean, const Tensor& save_invstd, double momentum,
                                         double eps, int64_t count, Tensor& running_mean, Tensor& running_var);
namespace keys {
inline const KernelKey<BatchNormRunningStatsKernel> batch_norm_running_stats{"batch_norm.running_stats"};
}  // namespace keys

// ---------------------------------------------------------------- optimizer updates (in place, float32)
// Fused over a whole list of parameters so a GPU can do all of them in a few launches.
// Key "sgd_step": for each parameter p with gradient g and momentum buffer b (b unused when momentum 0):
//   g' = g + weight_decay * p
//   b  = momentum * b + (1 - dampening) * g'     (on the first step, b = g')
//   d  = nesterov ? g' + momentum * b : (momentum > 0 ? b : g')
//   p -= lr * d
struct SgdParams {
  double lr = 0.01, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  bool first_step = false;  // true on the first step (the buffers are then initialised to g')
  // Undefined, or float64 {lr, first_step ? 1 : 0} on the parameters' device, read when the kernel runs in
  // place of lr and first_step (a captured CUDA graph replays the update with this step's values; cuda/graph.h).
  // Kernels of the CPU never see it: the front end reads it and passes plain values.
  Tensor scalars;
};
using SgdStepKernel = bool(std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                           std::vector<Tensor>& momentum_buffers, const SgdParams& h);
namespace keys {
inline const KernelKey<SgdStepKernel> sgd_step{"sgd_step"};
}  // namespace keys
// Key "adam_step": step t (1-based), for each p, g, first moment m, second moment v:
//   Adam:  g += weight_decay * p                   AdamW (decoupled):  p -= lr * weight_decay * p
//   m = b1 m + (1 - b1) g,   v = b2 v + (1 - b2) g^2
//   p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
struct AdamParams {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool decoupled_weight_decay = false;  // AdamW
  int64_t step = 1;
  // Undefined, or float64 {lr, step} on the parameters' device, read when the kernel runs in place of lr and
  // step (as SgdParams::scalars; the bias corrections 1 - beta^step are then computed from it).
  Tensor scalars;
};
using AdamStepKernel = bool(std::vector<Tensor>& params, const std::vector<Tensor>& grads, std::vector<Tensor>& m,
                            std::vector<Tensor>& v, const AdamParams& h);
namespace keys {
inline const KernelKey<AdamStepKernel> adam_step{"adam_step"};
}  // namespace keys

// ---------------------------------------------------------------- CTC (connectionist temporal classification)
// log_probs [T, N, C] (log-probabilities per time step; any values, normalised or not), targets [N, S]
// int64 padded (row n uses its first target_lengths[n] entries, each in [0, C) and != blank),
// input_lengths [N] and target_lengths [N] int64 (the front end has checked every range). With L = the
// target length of a sample and l' = (blank, l_1, blank, l_2, ..., l_L, blank) its extended label of
// length 2L+1, over its first input_lengths[n] = T_n time steps:
//   alpha_0(0) = lp_0(blank),  alpha_0(1) = lp_0(l'_1),  alpha_0(s) = -inf otherwise
//   alpha_t(s) = lp_t(l'_s) + logsumexp(alpha_{t-1}(s), alpha_{t-1}(s-1), alpha_{t-1}(s-2) [only when
//                l'_s != blank and l'_s != l'_{s-2}: the skip over a blank between different labels])
//   log p(l | x) = logsumexp(alpha_{T_n-1}(2L), alpha_{T_n-1}(2L-1))          (log p = [L == 0] ? 0 : -inf when T_n = 0)
// Key "ctc_loss": nll[n] = -log p(l | x), or 0 where p = 0 and zero_infinity; log_alpha[n, t, s] =
//   alpha_t(s) for t < T_n and s < 2L+1, -inf elsewhere.  nll [N], log_alpha [N, T, 2S+1].
//   (Exception: cuda kernel "cudnn" cannot produce the table; it fills log_alpha with NaN and its own
//   backward ignores it. See cuda/ctc_cudnn.cu.)
using CtcLossKernel = bool(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                           const Tensor& target_lengths, int64_t blank, bool zero_infinity, Tensor& nll,
                           Tensor& log_alpha);
namespace keys {
inline const KernelKey<CtcLossKernel> ctc_loss{"ctc_loss"};
}  // namespace keys
// Key "ctc_loss.backward": grad_log_probs [T, N, C] = d(sum_n grad_nll[n] * nll[n]) / d log_probs, the
// gradient with respect to the log-probabilities themselves (not to logits before a log_softmax):
//   beta_{T_n-1}(2L) = lp(l'_{2L}),  beta_{T_n-1}(2L-1) = lp(l'_{2L-1}),  -inf otherwise
//   beta_t(s) = lp_t(l'_s) + logsumexp(beta_{t+1}(s), beta_{t+1}(s+1), beta_{t+1}(s+2) [only when
//               l'_{s+2} != blank and l'_{s+2} != l'_s])
//   grad[t, n, k] = -grad_nll[n] * sum_{s : l'_s = k} exp(alpha_t(s) + beta_t(s) - lp_t(k) - log p)
// (alpha and beta both include lp_t(l'_s), hence the one subtraction). Zero for t >= T_n. Where p = 0 the
// gradient is 0 with zero_infinity and NaN without (as the loss is +inf).
using CtcLossBackwardKernel = bool(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                                   const Tensor& target_lengths, const Tensor& log_alpha, const Tensor& grad_nll,
                                   int64_t blank, bool zero_infinity, Tensor& grad_log_probs);
namespace keys {
inline const KernelKey<CtcLossBackwardKernel> ctc_loss_backward{"ctc_loss.backward"};
}  // namespace keys

// ---------------------------------------------------------------- GRU (one fused time step of a GRU layer)
// gi = x_t W_ih^T + b_ih and gh = h W_hh^T + b_hh, both [N, 3H] with the gates in the order r, z, n
// (PyTorch's layout); h [N, H]. All contiguous.
// Key "gru_cell":
//   r = sigmoid(gi_r + gh_r),  z = sigmoid(gi_z + gh_z),  n = tanh(gi_n + r * gh_n)
//   h_new = (1 - z) * n + z * h                                                       (h_new [N, H])
//   gates [N, 4H] = (r, z, n, gh_n) per row: what the backward kernel needs (the activated values, so it
//   evaluates no exp/tanh).
using GruCellKernel = bool(const Tensor& gi, const Tensor& gh, const Tensor& h, Tensor& h_new, Tensor& gates);
namespace keys {
inline const KernelKey<GruCellKernel> gru_cell{"gru_cell"};
}  // namespace keys
// Key "gru_cell.backward": from grad_h_new [N, H], h and the saved gates, with
//   d_n = g (1 - z) (1 - n^2)   (the gradient at n's pre-activation)
//   d_z = g (h - n) z (1 - z),  d_r = d_n gh_n r (1 - r):
//   grad_gi = (d_r, d_z, d_n),  grad_gh = (d_r, d_z, d_n * r)  [N, 3H],  grad_h = g z  [N, H]
// (grad_h is only the direct path through h_new = ... + z h; the path through gh = h W_hh^T + b_hh is the
// linear op's gradient).
using GruCellBackwardKernel = bool(const Tensor& grad_h_new, const Tensor& h, const Tensor& gates, Tensor& grad_gi,
                                   Tensor& grad_gh, Tensor& grad_h);
namespace keys {
inline const KernelKey<GruCellBackwardKernel> gru_cell_backward{"gru_cell.backward"};
}  // namespace keys

// ---------------------------------------------------------------- LSTM (one fused time step of an LSTM layer)
// gi = x_t W_ih^T + b_ih and gh = h W_hh^T + b_hh, both [N, 4H] with the gates in the order i, f, g, o
// (PyTorch's layout); c [N, H] the cell state before the step. All contiguous.
// Key "lstm_cell":
//   i = sigmoid(gi_i + gh_i),  f = sigmoid(gi_f + gh_f),  g = tanh(gi_g + gh_g),  o = sigmoid(gi_o + gh_o)
//   c_new = f * c + i * g,  h_new = o * tanh(c_new)                          (h_new, c_new [N, H])
//   gates [N, 5H] = (i, f, g, o, tanh(c_new)) per row: what the backward kernel needs (the activated
//   values, so it evaluates no exp/tanh).
using LstmCellKernel = bool(const Tensor& gi, const Tensor& gh, const Tensor& c, Tensor& h_new, Tensor& c_new,
                            Tensor& gates);
namespace keys {
inline const KernelKey<LstmCellKernel> lstm_cell{"lstm_cell"};
}  // namespace keys
// Key "lstm_cell.backward": from grad_h_new and grad_c_new [N, H], c and the saved gates, with
//   dc = grad_c_new + grad_h_new o (1 - tanh(c_new)^2)      (the whole gradient at c_new)
//   d_i = dc g i (1 - i),  d_f = dc c f (1 - f),  d_g = dc i (1 - g^2),  d_o = grad_h_new tanh(c_new) o (1 - o)
//   grad_gates = (d_i, d_f, d_g, d_o)  [N, 4H]   (the gradient of gi and of gh alike: both enter as gi + gh)
//   grad_c = dc f  [N, H]
// (the path from h, through gh = h W_hh^T + b_hh, is the linear op's gradient).
using LstmCellBackwardKernel = bool(const Tensor& grad_h_new, const Tensor& grad_c_new, const Tensor& c,
                                    const Tensor& gates, Tensor& grad_gates, Tensor& grad_c);
namespace keys {
inline const KernelKey<LstmCellBackwardKernel> lstm_cell_backward{"lstm_cell.backward"};
}  // namespace keys

// ---------------------------------------------------------------- RNNs over whole sequences (all layers, both directions)
// Keys "gru_sequence" (G = 3 gate blocks r, z, n) and "lstm_sequence" (G = 4: i, f, g, o); one signature.
// x [T, N, I]; params: per layer k (0 .. L-1) and direction d (0 forward, then 1 reverse when
// bidirectional), the four tensors w_ih [G*H, in_k], w_hh [G*H, H], b_ih [G*H], b_hh [G*H] (row blocks in
// gate order), in_0 = I, in_k = H * dirs after. y [T, N, H * dirs]. All contiguous, one dtype. For each
// layer and direction, with zero initial states and the reverse direction visiting t = T-1 .. 0 (its
// "previous" step is t+1):
//   gi = in_t W_ih^T + b_ih,  gh = h_prev W_hh^T + b_hh
// then the GRU:
//   r = sigmoid(gi_r + gh_r),  z = sigmoid(gi_z + gh_z),  n = tanh(gi_n + r * gh_n)
//   h_t = (1 - z) * n + z * h_prev
// or the LSTM (c_prev the cell state of the previous step):
//   i = sigmoid(gi_i + gh_i),  f = sigmoid(gi_f + gh_f),  g = tanh(gi_g + gh_g),  o = sigmoid(gi_o + gh_o)
//   c_t = f * c_prev + i * g,  h_t = o * tanh(c_t)
// with h_t written to y_k[t, :, d*H .. d*H+H). in_t is x_t for layer 0 and layer k-1's output at t
// after; y is the last layer's output (the final h and c are not returned).
//
// The reserve: what a forward kernel keeps for its backward, in a layout private to that kernel. The
// forward kernel sets `kernel` to its own registered name and allocates `data` (any dtype, any size); a
// backward kernel must decline (return false) a reserve whose `kernel` is not its own name, so a backward
// never reads another kernel's layout, whatever the selection says. With keep_reserve false (no gradient
// wanted) the forward kernel may leave data undefined. A backward kernel may overwrite the reserve's
// contents (cuDNN's does), so each reserve serves one backward call.
struct RnnSequenceReserve {
  std::string kernel;
  Tensor data;
};
// Keys "gru_sequence", "lstm_sequence": y from x and params (the equations above).
using RnnSequenceKernel = bool(const Tensor& x, const std::vector<Tensor>& params, int num_layers, bool bidirectional,
                               bool keep_reserve, Tensor& y, RnnSequenceReserve& reserve);
namespace keys {
inline const KernelKey<RnnSequenceKernel> gru_sequence{"gru_sequence"};
inline const KernelKey<RnnSequenceKernel> lstm_sequence{"lstm_sequence"};
}  // namespace keys
// Keys "gru_sequence.backward", "lstm_sequence.backward": from grad_y [T, N, H * dirs] (and x, params, y,
// the forward's reserve), grad_x [T, N, I] and grad_params (one per parameter, same shapes), overwritten
// (=). Per step, in reverse order of the direction's visit, with g = dL/dh_t (from grad_y and from the
// step after), the GRU's
//   d_n = g (1 - z) (1 - n^2),  d_z = g (h_prev - n) z (1 - z),  d_r = d_n gh_n r (1 - r)
//   dgi = (d_r, d_z, d_n),  dgh = (d_r, d_z, d_n * r),  dL/dh_prev = g z + dgh W_hh
// or the LSTM's, with dh = g (the letter g is the LSTM's gate here) and dc_next = dL/dc_t from the step
// after (0 at the last visited step):
//   dc = dc_next + dh o (1 - tanh(c_t)^2)
//   d_i = dc g i (1 - i),  d_f = dc c_prev f (1 - f),  d_g = dc i (1 - g^2),  d_o = dh tanh(c_t) o (1 - o)
//   dgi = dgh = (d_i, d_f, d_g, d_o),  dL/dh_prev = dgh W_hh,  dL/dc_prev = dc f
// and for both
//   grad_b_ih += dgi,  grad_b_hh += dgh,  grad_w_ih += dgi^T in_t,  grad_w_hh += dgh^T h_prev
//   grad_in_t += dgi W_ih
// where layer k's grad_in_t is (part of) layer k-1's dL/dy.
using RnnSequenceBackwardKernel = bool(const Tensor& grad_y, const Tensor& x, const std::vector<Tensor>& params,
                                       int num_layers, bool bidirectional, const Tensor& y,
                                       const RnnSequenceReserve& reserve, Tensor& grad_x,
                                       std::vector<Tensor>& grad_params);
namespace keys {
inline const KernelKey<RnnSequenceBackwardKernel> gru_sequence_backward{"gru_sequence.backward"};
inline const KernelKey<RnnSequenceBackwardKernel> lstm_sequence_backward{"lstm_sequence.backward"};
}  // namespace keys

}  // namespace minidl
