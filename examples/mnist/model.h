// examples/mnist/model.h — the MNIST CNN (the classic PyTorch example's architecture), and the smaller
// batch-norm CNN of the fast recipe.
#pragma once
#include <memory>
#include <string>

#include "nn/checkpoint.h"
#include "nn/layers.h"
#include "ops/memory_format.h"

namespace mnist {

// Stored in checkpoints' metadata ("model"), so `mnist eval` can tell its own files from others.
constexpr const char* kModelName = "mnist_cnn";

// x [N, 1, 28, 28] (normalised) -> logits [N, 10]. 1,199,882 parameters.
// One layer per statement: each layer draws its initial weights from the global generator when it is
// constructed, and the arguments of one Sequential(...) call are constructed in an order the compiler
// picks (g++ right to left, clang++ left to right), so the same seed would give other weights.
inline std::shared_ptr<minidl::Sequential> make_model() {
  using namespace minidl;
  auto model = std::make_shared<Sequential>();
  model->push_back(std::make_shared<Conv2d>(1, 32, 3));  // [N, 32, 26, 26]
  model->push_back(std::make_shared<ReLU>());
  model->push_back(std::make_shared<Conv2d>(32, 64, 3));  // [N, 64, 24, 24]
  model->push_back(std::make_shared<ReLU>());
  model->push_back(std::make_shared<MaxPool2d>(2));
  model->push_back(std::make_shared<Dropout>(0.25));
  model->push_back(std::make_shared<Flatten>());  // [N, 64 * 12 * 12 = 9216]
  model->push_back(std::make_shared<Linear>(9216, 128));
  model->push_back(std::make_shared<ReLU>());
  model->push_back(std::make_shared<Dropout>(0.5));
  model->push_back(std::make_shared<Linear>(128, 10));  // [N, 10]
  return model;
}

// The model of `mnist train --recipe fast` (or `--model mnist_cnn_bn`): both convolutions followed by batch
// norm, and a pooling after each, so the second convolution sees 13 x 13 instead of 26 x 26 (a fifth of
// the default model's multiply-adds there) and the first linear layer 1,600 inputs instead of 9,216.
// Batch norm lets a high learning rate train fast: it reaches 99% test accuracy in two epochs
// (docs/results/README.md, "The fast MNIST recipe"). No dropout: two epochs do not overfit.
// x [N, 1, 28, 28] -> logits [N, 10]. 225,226 parameters.
constexpr const char* kFastModelName = "mnist_cnn_bn";

inline std::shared_ptr<minidl::Sequential> make_fast_model() {
  using namespace minidl;
  auto model = std::make_shared<Sequential>();
  model->push_back(std::make_shared<Conv2d>(1, 32, 3));  // [N, 32, 26, 26]
  model->push_back(std::make_shared<BatchNorm2d>(32));
  model->push_back(std::make_shared<ReLU>());
  model->push_back(std::make_shared<MaxPool2d>(2));       // [N, 32, 13, 13]
  model->push_back(std::make_shared<Conv2d>(32, 64, 3));  // [N, 64, 11, 11]
  model->push_back(std::make_shared<BatchNorm2d>(64));
  model->push_back(std::make_shared<ReLU>());
  model->push_back(std::make_shared<MaxPool2d>(2));  // [N, 64, 5, 5]
  model->push_back(std::make_shared<Flatten>());     // [N, 1600]
  model->push_back(std::make_shared<Linear>(1600, 128));
  model->push_back(std::make_shared<ReLU>());
  model->push_back(std::make_shared<Linear>(128, 10));  // [N, 10]
  return model;
}

// The model called `name` (kModelName or kFastModelName); anything else throws, naming both.
inline std::shared_ptr<minidl::Sequential> make_model(const std::string& name) {
  if (name == kModelName) return make_model();
  if (name == kFastModelName) return make_fast_model();
  throw minidl::Error(minidl::str_cat("mnist: unknown model '", name, "' (known: ", kModelName, ", ", kFastModelName,
                                      ")"));
}

// The models' input [N, 1, 28, 28] in the memory format of a run (--memory-format, core/memory_format.h);
// the layers keep it. With one channel NCHW and NHWC are the same memory: only the strides change, so
// the conversion copies nothing. The parameters and checkpoints do not depend on it.
inline minidl::Tensor model_input(const minidl::Tensor& x, minidl::MemoryFormat format) {
  return minidl::to_memory_format(x, format);
}

// Restores `model` (from make_model(name)) from a checkpoint file already read: one line, before any
// tensor is looked at, when the file holds another kind of model; then the checks of load_checkpoint.
inline void load_model_from(const minidl::Checkpoint& file, const std::string& path, minidl::Module& model,
                            const std::string& name = kModelName) {
  minidl::check_checkpoint_model(file, path, name, "`mnist train --save`");
  minidl::load_checkpoint(file, path, model);
}

// The model a checkpoint file already read holds, built from its "model" metadata (either CNN) and
// restored as above.
inline std::shared_ptr<minidl::Sequential> load_model_from(const minidl::Checkpoint& file, const std::string& path) {
  auto it = file.metadata.find("model");
  const std::string name = it != file.metadata.end() && it->second == kFastModelName ? kFastModelName : kModelName;
  minidl::check_checkpoint_model(file, path, name, "`mnist train --save`");  // before building a model
  std::shared_ptr<minidl::Sequential> model = make_model(name);
  load_model_from(file, path, *model, name);
  return model;
}

}  // namespace mnist
