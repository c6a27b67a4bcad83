// examples/mnist/model.h — the MNIST CNN (the classic PyTorch example's architecture).
#pragma once
#include <memory>
#include <string>

#include "nn/checkpoint.h"
#include "nn/layers.h"

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

// Restores `model` (from make_model()) from a checkpoint file already read: one line, before any tensor
// is looked at, when the file holds another kind of model; then the checks of load_checkpoint.
inline void load_model_from(const minidl::Checkpoint& file, const std::string& path, minidl::Module& model) {
  minidl::check_checkpoint_model(file, path, kModelName, "`mnist train --save`");
  minidl::load_checkpoint(file, path, model);
}

}  // namespace mnist
