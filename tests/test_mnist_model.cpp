// tests/test_mnist_model.cpp — the MNIST CNNs (examples/mnist/model.h). The default one takes its initial weights from the
// seed in layer order, first to last, whichever compiler built it: its first convolution gets the very
// weights of a Conv2d(1, 32, 3) constructed first after the same seed, its last Linear those of a
// Linear(128, 10) constructed after all the others.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "core/random.h"
#include "examples/mnist/model.h"
#include "nn/checkpoint.h"
#include "nn/layers.h"
#include "ops/ops.h"

using namespace minidl;

TEST_CASE("mnist model: layers draw their initial weights first to last, whatever the compiler", "[nn]") {
  manual_seed(11);
  const std::shared_ptr<Sequential> model = mnist::make_model();
  manual_seed(11);
  Conv2d conv1(1, 32, 3);
  Conv2d conv2(32, 64, 3);
  Linear fc1(9216, 128);
  Linear fc2(128, 10);
  auto weight_of = [](Module& m) { return m.parameters().front().to_vector<float>(); };
  CHECK(weight_of((*model)[0]) == weight_of(conv1));
  CHECK(weight_of((*model)[2]) == weight_of(conv2));
  CHECK(weight_of((*model)[7]) == weight_of(fc1));
  CHECK(weight_of((*model)[10]) == weight_of(fc2));
}

TEST_CASE("mnist fast model: its shapes and size, and a checkpoint rebuilds the model it names", "[nn]") {
  manual_seed(3);
  const std::shared_ptr<Sequential> fast = mnist::make_model(mnist::kFastModelName);
  CHECK(fast->parameter_count() == 225226);
  fast->eval();
  CHECK(fast->forward(zeros({5, 1, 28, 28})).shape() == Shape{5, 10});
  CHECK(mnist::make_model(mnist::kModelName)->parameter_count() == 1199882);
  CHECK_THROWS_WITH(mnist::make_model("mnist_mlp"), Catch::Contains("mnist_cnn, mnist_cnn_bn"));

  char dir_template[] = "/tmp/minidl_test_mnist_model_XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  const std::string path = dir + "/fast.ckpt";
  save_checkpoint(path, *fast, nullptr, {{"model", mnist::kFastModelName}});
  const std::shared_ptr<Sequential> loaded = mnist::load_model_from(read_checkpoint(path), path);
  CHECK(loaded->parameter_count() == 225226);
  loaded->eval();
  const Tensor x = rand({3, 1, 28, 28});
  CHECK(loaded->forward(x).to_vector<float>() == fast->forward(x).to_vector<float>());
  // A file of the default model is loaded as that model.
  const std::string default_path = dir + "/cnn.ckpt";
  save_checkpoint(default_path, *mnist::make_model(), nullptr, {{"model", mnist::kModelName}});
  CHECK(mnist::load_model_from(read_checkpoint(default_path), default_path)->parameter_count() == 1199882);
  std::remove(path.c_str());
  std::remove(default_path.c_str());
  ::rmdir(dir.c_str());
}
