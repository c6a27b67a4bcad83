// examples/mnist/minimal.cpp — MNIST in one page: the digits, a CNN, three epochs of Adam, the test accuracy.
// No flags; the data is found as by `mnist train`, the device is the GPU if there is one. Chapter 8 reads it
// line by line; `mnist train` (train.cpp) is this loop with what long runs need (resume, metrics, GPUs).
#include <cstdio>
#include <exception>

#include "core/autograd.h"
#include "core/backend.h"
#include "core/random.h"
#include "nn/data.h"
#include "nn/layers.h"
#include "examples/data/mnist_data.h"
#include "nn/optim.h"
#include "ops/ops.h"

using namespace minidl;

int main() try {
  // [doc:minimal_data]
  const std::string dir = find_mnist_dir("");  // the four IDX files
  auto train_set = std::make_shared<TensorDataset>(load_mnist(dir, /*train=*/true));  // [N, 1, 28, 28]
  auto test_set = std::make_shared<TensorDataset>(load_mnist(dir, /*train=*/false));
  DataLoaderOptions options;  // batches of 64
  options.shuffle = true;     // a new order every epoch
  DataLoader train_loader(train_set, options);
  options.shuffle = false;
  DataLoader test_loader(test_set, options);
  // [/doc:minimal_data]

  // [doc:minimal_model]
  const Device device = choose_device("auto", "mnist_minimal");  // says which, and why
  manual_seed(1);  // the initial weights and dropout's masks
  auto model = std::make_shared<Sequential>();  // one layer per statement: the same weights with any compiler
  model->push_back(std::make_shared<Conv2d>(1, 32, 3));   // [N, 32, 26, 26]
  model->push_back(std::make_shared<ReLU>());
  model->push_back(std::make_shared<Conv2d>(32, 64, 3));  // [N, 64, 24, 24]
  model->push_back(std::make_shared<ReLU>());
  model->push_back(std::make_shared<MaxPool2d>(2));       // [N, 64, 12, 12]
  model->push_back(std::make_shared<Dropout>(0.25));
  model->push_back(std::make_shared<Flatten>());          // [N, 9216]
  model->push_back(std::make_shared<Linear>(9216, 128));
  model->push_back(std::make_shared<ReLU>());
  model->push_back(std::make_shared<Dropout>(0.5));
  model->push_back(std::make_shared<Linear>(128, 10));    // [N, 10]: one score per digit
  model->to(device);  // before the optimizer takes the parameters
  Adam optimizer(model->parameters(), AdamOptions{});  // lr 1e-3
  // [/doc:minimal_model]

  // [doc:minimal_train]
  for (int epoch = 1; epoch <= 3; ++epoch) {
    model->train();  // dropout on
    double loss_sum = 0;
    for (Batch& batch : train_loader.epoch(epoch - 1)) {
      const Tensor logits = (*model)(batch.inputs.to(device));
      const Tensor loss = cross_entropy(logits, batch.targets.to(device));
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      loss_sum += loss.item<float>();  // waits for the device: fine here, not in a fast loop
    }
    std::printf("epoch %d: train loss %.4f\n", epoch, loss_sum / train_loader.num_batches());
  }
  // [/doc:minimal_train]

  // [doc:minimal_eval]
  model->eval();  // dropout off
  NoGradGuard no_grad;  // no graph: nothing will call backward
  int64_t correct = 0;
  for (Batch& batch : test_loader.epoch(0)) {
    const std::vector<int64_t> predicted = argmax((*model)(batch.inputs.to(device)), 1).to_vector<int64_t>();
    const std::vector<int64_t> labels = batch.targets.to_vector<int64_t>();
    for (size_t i = 0; i < labels.size(); ++i) correct += predicted[i] == labels[i];
  }
  std::printf("test accuracy: %.2f%%\n", 100.0 * static_cast<double>(correct) / test_set->size());
  // [/doc:minimal_eval]
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "mnist_minimal: %s\n", e.what());
  return 1;
}
