// ops/norm.cpp — batch normalisation and dropout.
//
// batch_norm: x [N, C], [N, C, L] or [N, C, H, W] is viewed as [N, C, S] (S = product of the trailing
// dims, 1 for [N, C]); statistics are per channel c over the M = N*S values of that channel.
//   training:  y = (x - mean_c) * invstd_c * gamma_c + beta_c,  invstd_c = 1 / sqrt(var_c + eps), var biased
//              kernel "batch_norm" (y, save_mean, save_invstd); gradient by kernel "batch_norm.backward":
//                grad_gamma = sum g * xhat,  grad_beta = sum g,
//                grad_x = gamma * invstd / M * (M * g - grad_beta - xhat * grad_gamma)
//              running stats, updated in place (no autograd), with the unbiased batch variance:
//                running_mean = (1 - momentum) * running_mean + momentum * mean
//                running_var  = (1 - momentum) * running_var  + momentum * var * M / (M - 1)
//              where var = 1 / invstd^2 - eps is recovered from the saved invstd (kernel
//              "batch_norm.running_stats", one launch for both).
//   evaluation: the same affine map with running_mean / running_var (kernel "batch_norm.inference");
//              the statistics are constants, so with a = gamma / sqrt(running_var + eps):
//                grad_x = g * a,  grad_gamma = sum g * (x - running_mean) / sqrt(running_var + eps),
//                grad_beta = sum g          (written with ops; rarely needed)
// gamma / beta may be undefined (no affine part): they then act as ones / zeros.
//
// batch_norm_relu: relu(batch_norm(x)). Training uses the fused kernels "batch_norm_relu" (the ReLU applied
// as y is written) and "batch_norm_relu.backward" (given the output y, it reads g * [y > 0] wherever the
// formulas above read g), and keeps y alone for the backward where the unfused pair keeps the normalised
// values too; evaluation is batch_norm then relu.
//
// Channels-last x [N, C, H, W] (core/memory_format.h): its memory is rows [N*H*W, C], so the kernels get
// x viewed as [N*H*W, C, 1] (S = 1, M = N*H*W: the same statistics over the same values, read in place)
// and the output and gradient come back channels-last; every batch-norm kernel of every device serves it.
//
// bfloat16 activations (ops/bfloat16_widening.h): x may be bfloat16, and y and grad_x then are too; gamma, beta,
// the running and saved statistics and their gradients stay float32, and every sum is float32 or wider. A
// training call no kernel serves in bfloat16 runs on float32 copies (ops/bfloat16_widening.h); evaluation
// runs on a float32 copy of x through the op cast.
//
// dropout: out = x * mask, mask[i] = (u_i >= p) ? 1 / (1 - p) : 0 from the counter-based generator
// (kernel "dropout_mask", core/philox.h), so the gradient is mul's: g * mask.
#include "core/capture.h"
#include "core/dispatch.h"
#include "core/memory_format.h"
#include "core/random.h"
#include "ops/bfloat16_widening.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

namespace {

// The options of the per-channel tensors for input x: x's, but float32 for a bfloat16 x.
TensorOptions channel_options(const Tensor& x) {
  return x.dtype() == DType::bfloat16 ? TensorOptions(DType::float32, x.device()) : x.options();
}

// A per-channel tensor (gamma, beta, running stats): undefined is allowed (checked by the caller when
// required); otherwise [C], x's dtype (float32 for a bfloat16 x) and device.
void check_channel_tensor(const char* name, const Tensor& t, const Tensor& x, int64_t channels) {
  if (!t.defined()) return;
  MINIDL_CHECK(t.dim() == 1 && t.shape()[0] == channels, "batch_norm: ", name, " must have shape [", channels,
               "] for input of shape ", shape_str(x.shape()), ", got ", shape_str(t.shape()));
  const DType expected = channel_options(x).dtype;
  MINIDL_CHECK(t.dtype() == expected, "batch_norm: ", name, " is ", dtype_name(t.dtype()), " but the input is ",
               dtype_name(x.dtype()), " (", name, " must be ", dtype_name(expected), ")");
  MINIDL_CHECK(t.device() == x.device(), "batch_norm: ", name, " is on ", t.device().str(), " but the input is on ",
               x.device().str());
}

// A contiguous copy without history, or `value` everywhere when t is undefined.
Tensor packed_or(const Tensor& t, double value, int64_t channels, const Tensor& x) {
  return t.defined() ? t.detach().contiguous() : full({channels}, value, channel_options(x));
}

// The running statistics in one kernel launch ("batch_norm.running_stats"; written as elementwise ops
// the same formulas took eleven). A running tensor that is a strided view is updated through a copy.
void update_running_stats(const Tensor& running_mean, const Tensor& running_var, const Tensor& save_mean,
                          const Tensor& save_invstd, double momentum, double eps, int64_t count) {
  if (!running_mean.defined() && !running_var.defined()) return;
  NoGradGuard no_grad;
  auto packed = [](const Tensor& t) { return t.defined() && !t.is_contiguous() ? t.contiguous() : t; };
  Tensor mean = packed(running_mean), var = packed(running_var);
  dispatch(keys::batch_norm_running_stats, save_mean.device(), save_mean, save_invstd, momentum, eps, count, mean,
           var);
  if (running_mean.defined() && !running_mean.is_contiguous()) copy_(running_mean, mean);
  if (running_var.defined() && !running_var.is_contiguous()) copy_(running_var, var);
}

}  // namespace

namespace {

// batch_norm, or with relu set batch_norm_relu's training path (its evaluation is batch_norm then relu).
Tensor batch_norm_impl(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                       const Tensor& running_var, bool training, double momentum, double eps, bool relu) {
  check_floating_or_bfloat16("batch_norm", x);
  MINIDL_CHECK(x.dim() >= 2 && x.dim() <= 4, "batch_norm: expected input [N, C], [N, C, L] or [N, C, H, W], got ",
               shape_str(x.shape()));
  MINIDL_CHECK(eps >= 0, "batch_norm: eps must be non-negative, got ", eps);
  MINIDL_CHECK(momentum >= 0 && momentum <= 1, "batch_norm: momentum must be in [0, 1], got ", momentum);
  const int64_t n = x.shape()[0], channels = x.shape()[1];
  int64_t spatial = 1;
  for (int d = 2; d < x.dim(); ++d) spatial *= x.shape()[d];
  check_channel_tensor("gamma", gamma, x, channels);
  check_channel_tensor("beta", beta, x, channels);
  check_channel_tensor("running_mean", running_mean, x, channels);
  check_channel_tensor("running_var", running_var, x, channels);

  // The kernels' [N, C, S] view, or for a channels-last x its rows [N*H*W, C, 1]; `as_x` turns a tensor of
  // that view back into x's shape and format, `as_rows` a gradient of x's shape into the view.
  const bool nhwc = suggest_memory_format(x) == MemoryFormat::channels_last;
  const Shape view3 = nhwc ? Shape{n * spatial, channels, 1} : Shape{n, channels, spatial};
  auto as_rows = [nhwc, view3](const Tensor& t) {
    return nhwc ? nhwc_view(t).contiguous().view(view3) : t.contiguous().view(view3);
  };
  auto as_x = [nhwc, shape = x.shape()](const Tensor& t3) {
    return nhwc ? nchw_view(t3.view({shape[0], shape[2], shape[3], shape[1]})) : t3.view(shape);
  };
  const Tensor x3 = as_rows(x.detach());
  const Tensor g = packed_or(gamma, 1.0, channels, x), b = packed_or(beta, 0.0, channels, x);
  Tensor y3 = empty(view3, x.options());
  const bool gamma_grad = gamma.defined() && gamma.requires_grad(), beta_grad = beta.defined() && beta.requires_grad();

  if (training) {
    const int64_t count = n * spatial;
    MINIDL_CHECK(count > 1, "batch_norm: training needs more than one value per channel, got input of shape ",
                 shape_str(x.shape()));
    Tensor save_mean = empty({channels}, channel_options(x)), save_invstd = empty({channels}, channel_options(x));
    dispatch_widening_bf16(relu ? keys::batch_norm_relu : keys::batch_norm, x.device(), x3, g, b, eps, y3, save_mean,
                           save_invstd);
    update_running_stats(running_mean, running_var, save_mean, save_invstd, momentum, eps, count);
    Tensor out = as_x(y3);
    if (relu && needs_grad({x, gamma, beta})) {
      attach_grad_fn(
          out, "BatchNormReluBackward", {x, gamma, beta},
          [x3, y3 = y3.detach(), g, save_mean, save_invstd, as_rows, as_x, gamma_grad,
           beta_grad](const Tensor& grad) {
            Tensor grad_x = empty(x3.shape(), x3.options());
            Tensor grad_gamma = empty(g.shape(), g.options()), grad_beta = empty(g.shape(), g.options());
            dispatch_widening_bf16(keys::batch_norm_relu_backward, grad.device(), x3, y3, as_rows(grad), g,
                                   save_mean, save_invstd, grad_x, grad_gamma, grad_beta);
            return InputGradients{as_x(grad_x), gamma_grad ? grad_gamma : Tensor(), beta_grad ? grad_beta : Tensor()};
          });
    } else if (needs_grad({x, gamma, beta}))
      attach_grad_fn(
          out, "BatchNormBackward", {x, gamma, beta},
          [x3, g, save_mean, save_invstd, as_rows, as_x, gamma_grad, beta_grad](const Tensor& grad) {
            Tensor grad_x = empty(x3.shape(), x3.options());
            Tensor grad_gamma = empty(g.shape(), g.options()), grad_beta = empty(g.shape(), g.options());
            dispatch_widening_bf16(keys::batch_norm_backward, grad.device(), x3, as_rows(grad), g, save_mean,
                                   save_invstd, grad_x, grad_gamma, grad_beta);
            return InputGradients{as_x(grad_x), gamma_grad ? grad_gamma : Tensor(), beta_grad ? grad_beta : Tensor()};
          });
    return out;
  }

  MINIDL_CHECK(running_mean.defined() && running_var.defined(),
               "batch_norm: evaluation mode (training=false) needs running_mean and running_var");
  if (x.dtype() == DType::bfloat16)  // evaluation on a float32 copy (the header comment)
    return cast(batch_norm_impl(cast(x, DType::float32), gamma, beta, running_mean, running_var, false, momentum, eps,
                                relu),
                DType::bfloat16);
  const Tensor mean_c = running_mean.detach().contiguous(), var_c = running_var.detach().contiguous();
  dispatch(keys::batch_norm_inference, x.device(), x3, g, b, mean_c, var_c, eps, y3);
  Tensor out = as_x(y3);
  if (needs_grad({x, gamma, beta}))
    // The statistics are cloned: a training step before this backward would update them in place.
    attach_grad_fn(out, "BatchNormInferenceBackward", {x, gamma, beta},
                   [x3, g, mean_c = mean_c.clone(), var_c = var_c.clone(), eps, as_rows, as_x, gamma_grad,
                    beta_grad](const Tensor& grad) {
                     const Shape per_channel{1, x3.shape()[1], 1};
                     const Tensor invstd = pow_scalar(add_scalar(var_c, eps), -0.5).view(per_channel);
                     const Tensor g3 = as_rows(grad);
                     const Tensor grad_x = as_x(mul(g3, mul(g.view(per_channel), invstd)));
                     Tensor grad_gamma, grad_beta;
                     if (gamma_grad) grad_gamma = sum(mul(g3, mul(sub(x3, mean_c.view(per_channel)), invstd)), {0, 2});
                     if (beta_grad) grad_beta = sum(g3, {0, 2});
                     return InputGradients{grad_x, grad_gamma, grad_beta};
                   });
  return out;
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum, double eps) {
  return batch_norm_impl(x, gamma, beta, running_mean, running_var, training, momentum, eps, false);
}

Tensor batch_norm_relu(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                       const Tensor& running_var, bool training, double momentum, double eps) {
  if (!training && x.defined() && x.dtype() == DType::bfloat16)  // on a float32 copy, as batch_norm's evaluation
    return cast(batch_norm_relu(cast(x, DType::float32), gamma, beta, running_mean, running_var, false, momentum, eps),
                DType::bfloat16);
  if (!training)  // no fused kernel: batch_norm (which checks the arguments) then relu
    return relu(batch_norm(x, gamma, beta, running_mean, running_var, false, momentum, eps));
  return batch_norm_impl(x, gamma, beta, running_mean, running_var, true, momentum, eps, true);
}

Tensor dropout(const Tensor& x, double p, bool training) {
  check_floating("dropout", x);
  MINIDL_CHECK(p >= 0 && p <= 1, "dropout: probability p must be in [0, 1], got ", p);
  if (!training || p == 0) return x;
  if (p == 1) return mul_scalar(x, 0.0);  // everything dropped; the gradient is zero too
  Tensor mask = empty(x.shape(), x.options());
  const uint64_t seed = current_seed();
  const uint64_t offset = reserve_random_offset(static_cast<uint64_t>(x.numel()));
  // While a CUDA graph is captured, the kernel adds the capture's shift to the offset (core/capture.h).
  dispatch(keys::dropout_mask, x.device(), mask, p, seed, offset, capture_offset_shift(x.device()));
  return mul(x, mask);
}

}  // namespace minidl
