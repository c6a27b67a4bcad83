// nn/layers.h — the standard layers, each a Module over one op of ops/ops.h.
//
//   Linear(in, out)                 y = x W^T + b           W [out, in], b [out]          x [..., in]
//   Conv2d(in, out, k, s, p)        y = conv2d(x, W) + b    W [out, in, k, k], b [out]    x [N, in, H, W]
//   MaxPool2d(k, s, p), AvgPool2d   window max / mean       (stride defaults to the kernel size)
//   MaxPool2d(Pool2dParams)         a non-square window or stride, e.g. kernel and stride (2, 1)
//   Dropout(p)                      zero with probability p, scale the rest by 1/(1-p); identity in eval()
//   BatchNorm1d(C), BatchNorm2d(C)  per-channel normalisation of [N, C] / [N, C, H, W]; learnable
//                                   weight (gamma, ones) and bias (beta, zeros); running_mean/running_var
//                                   buffers, used in eval()
//   ReLU, Flatten(start=1, end=-1)  max(x, 0); reshape dims start..end into one
//   Sequential(m1, m2, ...)         m_k(...m_2(m_1(x))); children named "0", "1", ...
//
// Sequential runs the ReLU fusion pass (nn/fuse_relu.h): a Linear or Conv2d with a bias, or a BatchNorm,
// followed directly by a ReLU runs as one fused op (the layer's forward_relu) where the device has its
// kernels. MINIDL_FUSE_RELU=0 or set_relu_fusion(false) turns it off.
//
// A model in a few lines:
//   Sequential net(Conv2d(1, 32, 3), ReLU(), MaxPool2d(2), Flatten(), Linear(32 * 13 * 13, 10));
//   Tensor logits = net(x);
// The layers are arguments of one call, constructed in an order the compiler picks, and each draws its
// initial weights from the global generator: fine within one program, but for the same weights from the
// same seed whichever compiler built it, construct them one per statement (push_back), first to last.
#pragma once
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "nn/fuse_relu.h"  // the pass Sequential runs, and its switch (set_relu_fusion)
#include "nn/module.h"
#include "ops/kernel_signatures.h"

namespace minidl {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  // relu(forward(x)) with the bias add and the ReLU fused (bias_relu); needs a bias.
  Tensor forward_relu(const Tensor& x);
  std::string type_name() const override { return "Linear"; }
  std::string describe() const override;

  int64_t in_features, out_features;
  Tensor weight, bias;  // bias undefined when built without one
};

class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, int kernel_size, int stride = 1, int padding = 0,
         bool bias = true);
  Tensor forward(const Tensor& x) override;
  // relu(forward(x)) with the bias add and the ReLU fused (conv2d_bias_relu: in the convolution's call
  // where a fused kernel serves it, else bias_relu after it); needs a bias.
  Tensor forward_relu(const Tensor& x);
  // pool(relu(forward(x))) for a MaxPool2d `pool`: forward_relu's fused call, then the pool, with one
  // backward for the three (conv2d_bias_relu_max_pool2d); needs a bias.
  Tensor forward_relu_max_pool(const Tensor& x, const Pool2dParams& pool);
  std::string type_name() const override { return "Conv2d"; }
  std::string describe() const override;

  int64_t in_channels, out_channels;
  int kernel_size, stride, padding;
  Tensor weight, bias;

 private:
  // The convolution's parameters, after checking the bias and x for `caller` (forward_relu...).
  Conv2dParams params_for(const Tensor& x, const char* caller) const;
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(int kernel_size, int stride = -1, int padding = 0);
  explicit MaxPool2d(const Pool2dParams& params);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "MaxPool2d"; }
  std::string describe() const override;

  int kernel_size, stride, padding;  // along the height (and the width, for a square window)
  Pool2dParams params;               // the window forward uses
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(int kernel_size, int stride = -1, int padding = 0);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "AvgPool2d"; }
  std::string describe() const override;

  int kernel_size, stride, padding;
};

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Dropout"; }
  std::string describe() const override;

  double p;
};

// Shared by BatchNorm1d and BatchNorm2d, which differ only in the input rank they accept.
class BatchNorm : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  // relu(forward(x)), fused in training (batch_norm_relu).
  Tensor forward_relu(const Tensor& x);
  std::string describe() const override;

  int64_t num_features;
  double eps, momentum;
  Tensor weight, bias;               // gamma, beta [C]
  Tensor running_mean, running_var;  // buffers [C]

 protected:
  BatchNorm(int64_t num_features, double eps, double momentum, int input_dims);

 private:
  int input_dims_;
};

class BatchNorm1d : public BatchNorm {
 public:
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5, double momentum = 0.1)
      : BatchNorm(num_features, eps, momentum, 2) {}
  std::string type_name() const override { return "BatchNorm1d"; }
};

class BatchNorm2d : public BatchNorm {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1)
      : BatchNorm(num_features, eps, momentum, 4) {}
  std::string type_name() const override { return "BatchNorm2d"; }
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "ReLU"; }
};

class Flatten : public Module {
 public:
  explicit Flatten(int start_dim = 1, int end_dim = -1) : start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Flatten"; }
  std::string describe() const override;

  int start_dim, end_dim;
};

class Sequential : public Module {
 public:
  Sequential() = default;
  // Each argument is a layer by value (Linear(2, 3)) or a std::shared_ptr to a module.
  template <class... Modules>
  explicit Sequential(Modules&&... modules) {
    (push_back(as_module_ptr(std::forward<Modules>(modules))), ...);
  }

  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return children().size(); }
  Module& operator[](size_t i) const;

  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Sequential"; }

 private:
  template <class T>
  struct is_shared_ptr : std::false_type {};
  template <class T>
  struct is_shared_ptr<std::shared_ptr<T>> : std::true_type {};

  template <class M>
  static std::shared_ptr<Module> as_module_ptr(M&& m) {
    using T = std::decay_t<M>;
    if constexpr (is_shared_ptr<T>::value) {
      return std::static_pointer_cast<Module>(m);
    } else {
      static_assert(std::is_base_of<Module, T>::value, "Sequential: arguments must be modules");
      return std::make_shared<T>(std::forward<M>(m));
    }
  }
};

}  // namespace minidl
