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
inline std::shared_ptr<minidl::Sequential> make_model() {
  using namespace minidl;
  return std::make_shared<Sequential>(
      Conv2d(1, 32, 3), ReLU(),                // [N, 32, 26, 26]
      Conv2d(32, 64, 3), ReLU(),               // [N, 64, 24, 24]
      MaxPool2d(2), Dropout(0.25), Flatten(),  // [N, 64 * 12 * 12 = 9216]
      Linear(9216, 128), ReLU(), Dropout(0.5),
      Linear(128, 10));                        // [N, 10]
}

// Restores `model` (from make_model()) from a checkpoint file already read: one line, before any tensor
// is looked at, when the file holds another kind of model; then the checks of load_checkpoint.
inline void load_model_from(const minidl::Checkpoint& file, const std::string& path, minidl::Module& model) {
  minidl::check_checkpoint_model(file, path, kModelName, "`mnist train --save`");
  minidl::load_checkpoint(file, path, model);
}

}  // namespace mnist
