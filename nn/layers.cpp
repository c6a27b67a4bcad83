// nn/layers.cpp — the standard layers of nn/layers.h: each checks its input's shape and calls its op;
// Sequential runs its modules in order, with the ReLU fusion pass of nn/fuse_relu.h.
#include "nn/layers.h"

#include <cmath>

#include "nn/fuse_relu.h"
#include "nn/init.h"
#include "ops/ops.h"

namespace minidl {

// ------------------------------------------------------------------ Linear

Linear::Linear(int64_t in, int64_t out, bool with_bias) : in_features(in), out_features(out) {
  MINIDL_CHECK(in > 0 && out > 0, "Linear: features must be positive, got ", in, " -> ", out);
  weight = register_parameter("weight", empty({out, in}));
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (with_bias) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    bias = register_parameter("bias", empty({out}));
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& x) {
  MINIDL_CHECK(x.dim() >= 1 && x.size(-1) == in_features, "Linear(", in_features, " -> ", out_features,
               "): input of shape ", shape_str(x.shape()), " does not end in ", in_features, " features");
  return linear(x, weight, bias);
}

Tensor Linear::forward_relu(const Tensor& x) {
  MINIDL_CHECK(bias.defined(), describe(), ": forward_relu needs a bias (it fuses the bias add with the ReLU)");
  MINIDL_CHECK(x.dim() >= 1 && x.size(-1) == in_features, "Linear(", in_features, " -> ", out_features,
               "): input of shape ", shape_str(x.shape()), " does not end in ", in_features, " features");
  return bias_relu(linear(x, weight), bias, -1);
}

std::string Linear::describe() const {
  return str_cat("Linear(", in_features, " -> ", out_features, bias.defined() ? "" : ", no bias", ")");
}

// ------------------------------------------------------------------ Conv2d

Conv2d::Conv2d(int64_t in, int64_t out, int k, int s, int p, bool with_bias)
    : in_channels(in), out_channels(out), kernel_size(k), stride(s), padding(p) {
  MINIDL_CHECK(in > 0 && out > 0 && k > 0 && s > 0 && p >= 0, "Conv2d: bad configuration: ", in, " -> ", out,
               " channels, kernel ", k, ", stride ", s, ", padding ", p);
  weight = register_parameter("weight", empty({out, in, k, k}));
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (with_bias) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(init::fan_in(weight)));
    bias = register_parameter("bias", empty({out}));
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Conv2d::forward(const Tensor& x) {
  MINIDL_CHECK(x.dim() == 4 && x.size(1) == in_channels, describe(), ": expected input [N, ", in_channels,
               ", H, W], got ", shape_str(x.shape()));
  return conv2d(x, weight, bias, stride, padding);
}

Conv2dParams Conv2d::params_for(const Tensor& x, const char* caller) const {
  MINIDL_CHECK(bias.defined(), describe(), ": ", caller, " needs a bias (it fuses the bias add with the ReLU)");
  MINIDL_CHECK(x.dim() == 4 && x.size(1) == in_channels, describe(), ": expected input [N, ", in_channels,
               ", H, W], got ", shape_str(x.shape()));
  Conv2dParams p;
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = padding;
  return p;
}

Tensor Conv2d::forward_relu(const Tensor& x) { return conv2d_bias_relu(x, weight, bias, params_for(x, "forward_relu")); }

Tensor Conv2d::forward_relu_max_pool(const Tensor& x, const Pool2dParams& pool) {
  return conv2d_bias_relu_max_pool2d(x, weight, bias, params_for(x, "forward_relu_max_pool"), pool);
}

std::string Conv2d::describe() const {
  return str_cat("Conv2d(", in_channels, " -> ", out_channels, ", kernel ", kernel_size, "x", kernel_size,
                 ", stride ", stride, ", padding ", padding, bias.defined() ? "" : ", no bias", ")");
}

// ------------------------------------------------------------------ pooling

MaxPool2d::MaxPool2d(int k, int s, int p) : kernel_size(k), stride(s < 0 ? k : s), padding(p) {
  MINIDL_CHECK(k > 0 && stride > 0 && p >= 0, "MaxPool2d: bad configuration: kernel ", k, ", stride ", s,
               ", padding ", p);
  params.kernel_h = params.kernel_w = kernel_size;
  params.stride_h = params.stride_w = stride;
  params.pad_h = params.pad_w = padding;
}

MaxPool2d::MaxPool2d(const Pool2dParams& p)
    : kernel_size(p.kernel_h), stride(p.stride_h), padding(p.pad_h), params(p) {
  MINIDL_CHECK(p.kernel_h > 0 && p.kernel_w > 0 && p.stride_h > 0 && p.stride_w > 0 && p.pad_h >= 0 && p.pad_w >= 0,
               "MaxPool2d: bad configuration: kernel ", p.kernel_h, "x", p.kernel_w, ", stride ", p.stride_h, "x",
               p.stride_w, ", padding ", p.pad_h, "x", p.pad_w);
}

Tensor MaxPool2d::forward(const Tensor& x) { return max_pool2d(x, params); }

std::string MaxPool2d::describe() const {
  const Pool2dParams& p = params;
  if (p.kernel_h == p.kernel_w && p.stride_h == p.stride_w && p.pad_h == p.pad_w)
    return str_cat("MaxPool2d(kernel ", kernel_size, ", stride ", stride, ", padding ", padding, ")");
  return str_cat("MaxPool2d(kernel ", p.kernel_h, "x", p.kernel_w, ", stride ", p.stride_h, "x", p.stride_w,
                 ", padding ", p.pad_h, "x", p.pad_w, ")");
}

AvgPool2d::AvgPool2d(int k, int s, int p) : kernel_size(k), stride(s < 0 ? k : s), padding(p) {
  MINIDL_CHECK(k > 0 && stride > 0 && p >= 0, "AvgPool2d: bad configuration: kernel ", k, ", stride ", s,
               ", padding ", p);
}

Tensor AvgPool2d::forward(const Tensor& x) { return avg_pool2d(x, kernel_size, stride, padding); }

std::string AvgPool2d::describe() const {
  return str_cat("AvgPool2d(kernel ", kernel_size, ", stride ", stride, ", padding ", padding, ")");
}

// ------------------------------------------------------------------ Dropout

Dropout::Dropout(double prob) : p(prob) {
  MINIDL_CHECK(p >= 0 && p < 1, "Dropout: p must be in [0, 1), got ", p);
}

Tensor Dropout::forward(const Tensor& x) { return dropout(x, p, is_training()); }

std::string Dropout::describe() const { return str_cat("Dropout(p=", p, ")"); }

// ------------------------------------------------------------------ BatchNorm

BatchNorm::BatchNorm(int64_t c, double e, double m, int dims)
    : num_features(c), eps(e), momentum(m), input_dims_(dims) {
  MINIDL_CHECK(c > 0 && e > 0 && m >= 0 && m <= 1, "BatchNorm: bad configuration: ", c, " features, eps ", e,
               ", momentum ", m);
  weight = register_parameter("weight", ones({c}));
  bias = register_parameter("bias", zeros({c}));
  running_mean = register_buffer("running_mean", zeros({c}));
  running_var = register_buffer("running_var", ones({c}));
}

Tensor BatchNorm::forward(const Tensor& x) {
  MINIDL_CHECK(x.dim() == input_dims_ && x.size(1) == num_features, describe(), ": expected input ",
               input_dims_ == 2 ? "[N, " : "[N, ", num_features, input_dims_ == 2 ? "]" : ", H, W]", ", got ",
               shape_str(x.shape()));
  return batch_norm(x, weight, bias, running_mean, running_var, is_training(), momentum, eps);
}

Tensor BatchNorm::forward_relu(const Tensor& x) {
  MINIDL_CHECK(x.dim() == input_dims_ && x.size(1) == num_features, describe(), ": expected input ",
               input_dims_ == 2 ? "[N, " : "[N, ", num_features, input_dims_ == 2 ? "]" : ", H, W]", ", got ",
               shape_str(x.shape()));
  return batch_norm_relu(x, weight, bias, running_mean, running_var, is_training(), momentum, eps);
}

std::string BatchNorm::describe() const {
  return str_cat(type_name(), "(", num_features, ", eps=", eps, ", momentum=", momentum, ")");
}

// ------------------------------------------------------------------ ReLU, Flatten

Tensor ReLU::forward(const Tensor& x) { return relu(x); }

Tensor Flatten::forward(const Tensor& x) { return x.flatten(start_dim, end_dim); }

std::string Flatten::describe() const { return str_cat("Flatten(", start_dim, ", ", end_dim, ")"); }

// ------------------------------------------------------------------ Sequential

void Sequential::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(children().size()), std::move(module));
}

Module& Sequential::operator[](size_t i) const {
  MINIDL_CHECK(i < children().size(), "Sequential: index ", i, " out of range (", children().size(), " modules)");
  return *children()[i].second;
}

// Runs the modules in order; where a module's output goes straight into a ReLU (and a max pool), the ReLU
// fusion pass (nn/fuse_relu.h) may compute them as one fused op.
Tensor Sequential::forward(const Tensor& x) {
  const auto& list = children();
  Tensor y = x;
  for (size_t i = 0; i < list.size(); ++i) {
    Module& layer = *list[i].second;
    if (i + 2 < list.size()) {
      Tensor fused = fused_relu_max_pool_forward(layer, *list[i + 1].second, *list[i + 2].second, y);
      if (fused.defined()) {
        y = fused;
        i += 2;  // the ReLU and the pool are done
        continue;
      }
    }
    if (i + 1 < list.size()) {
      Tensor fused = fused_relu_forward(layer, *list[i + 1].second, y);
      if (fused.defined()) {
        y = fused;
        ++i;  // the ReLU is done
        continue;
      }
    }
    y = layer.forward(y);
  }
  return y;
}

}  // namespace minidl
