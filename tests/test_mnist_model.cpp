// tests/test_mnist_model.cpp — the MNIST CNN (examples/mnist/model.h) takes its initial weights from the
// seed in layer order, first to last, whichever compiler built it: its first convolution gets the very
// weights of a Conv2d(1, 32, 3) constructed first after the same seed, its last Linear those of a
// Linear(128, 10) constructed after all the others.
#include <catch2/catch.hpp>

#include "core/random.h"
#include "examples/mnist/model.h"
#include "nn/layers.h"

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
