// examples/standalone/main.cpp — a program outside minidl's tree that uses an installed minidl
// (CMakeLists.txt next to this file; README, "Use minidl as a library"). It trains a two-layer network on
// a toy problem and exits with status 1 when the network has not learned it.
//
// The problem is XOR on real numbers: points uniform in the square [-1, 1]^2, class 1 where x*y > 0 (the
// first and third quadrants), class 0 elsewhere. No straight line separates the classes, so a linear
// model stays near 50%; a hidden layer of ReLUs bends the boundary along the axes.
//
//   model     logits = W2 relu(W1 p + b1) + b2          p [2], hidden [32], logits [2]
//   loss      cross_entropy(logits, class), the mean over the whole training set (one batch)
//   training  Adam, lr 0.02, 300 steps, on 2,000 points; accuracy measured on 1,000 other points
//
//   two_layer [auto|cpu|cuda]      the device (auto, the default: the GPU when one is usable)
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <minidl/minidl.h>  // all of minidl: choose_device, manual_seed, Linear, Adam, cross_entropy, eq ...

using namespace minidl;

class TwoLayerNet : public Module {
 public:
  TwoLayerNet(int64_t inputs, int64_t hidden, int64_t classes) {
    fc1 = register_module("fc1", std::make_shared<Linear>(inputs, hidden));
    act = register_module("act", std::make_shared<ReLU>());
    fc2 = register_module("fc2", std::make_shared<Linear>(hidden, classes));
  }
  Tensor forward(const Tensor& x) override { return fc2->forward(act->forward(fc1->forward(x))); }

  std::shared_ptr<Linear> fc1, fc2;
  std::shared_ptr<ReLU> act;
};

struct Points {
  Tensor x;  // [n, 2] float32
  Tensor y;  // [n] int64, the class of each point
};

// n points of the XOR problem on `device`, drawn from minidl's seeded random stream.
Points make_points(int64_t n, Device device) {
  const Tensor x = rand({n, 2}, Device::cpu()) * 2.0 - 1.0;
  const std::vector<float> xy = x.to_vector<float>();
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[i] = xy[2 * i] * xy[2 * i + 1] > 0 ? 1 : 0;
  return {x.to(device), from_vector(labels, {n}, TensorOptions(DType::int64, device))};
}

// The fraction of points whose highest logit is their class: eq gives 1 where they agree, 0 elsewhere.
double accuracy(Module& net, const Points& points) {
  return mean(eq(argmax(net(points.x), 1), points.y)).item<double>();
}

int main(int argc, char** argv) {
  try {
    if (argc > 2) {
      std::fprintf(stderr, "usage: two_layer [auto|cpu|cuda]\n");
      return 2;
    }
    const Device device = choose_device(argc == 2 ? argv[1] : "auto", "two_layer");
    manual_seed(0);
    const Points train = make_points(2000, device);
    const Points test = make_points(1000, device);

    TwoLayerNet net(2, 32, 2);
    net.to(device);  // before the optimizer, which keeps its moments on the parameters' device
    AdamOptions options;
    options.lr = 0.02;
    Adam optimizer(net.parameters(), options);

    const int steps = 300;
    for (int step = 1; step <= steps; ++step) {
      const Tensor loss = cross_entropy(net(train.x), train.y);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      if (step == 1 || step % 50 == 0) std::printf("step %3d  loss %.4f\n", step, loss.item<float>());
    }

    const double test_accuracy = accuracy(net, test);
    const double required = 0.9;
    std::printf("test accuracy %.1f%% on %lld points (required: %.0f%%)\n", 100 * test_accuracy,
                static_cast<long long>(test.y.numel()), 100 * required);
    if (test_accuracy < required) {
      std::fprintf(stderr, "two_layer: the network did not learn the problem\n");
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "two_layer: %s\n", e.what());
    return 1;
  }
}
