// examples/mnist/eval.cpp — `mnist eval`: the loss and accuracy of a model saved by `mnist train` on the
// MNIST test set (--data DIR: the folder of the IDX files, searched as by train without it), or on a
// labelled CSV file in Kaggle's format (--data FILE.csv: label,pixel0,...,pixel783, as train.csv; every
// row is scored).
#include <cmath>
#include <cstdio>

#include "core/determinism.h"
#include "core/dispatch.h"
#include "core/numerics.h"
#include "examples/mnist/common.h"
#include "examples/data/mnist_data.h"

using namespace minidl;

namespace mnist {

int eval(const std::string& model_path, const std::string& data, const std::string& device_flag,
         const std::vector<std::string>& kernels, bool deterministic) {
  select_kernels_from_flags(kernels);
  set_deterministic_algorithms(deterministic);
  const Device device = choose_device(device_flag);
  std::shared_ptr<Sequential> model = load_model(model_path, device);
  std::shared_ptr<TensorDataset> test_set;
  std::string name = "test";  // how the lines name the set
  const bool csv = is_file(data) || (data.size() > 4 && data.compare(data.size() - 4, 4, ".csv") == 0);
  if (csv) {
    test_set = csv_dataset(data);
    name = data;
  } else {
    const std::string dir = find_mnist_dir(data);
    test_set = std::make_shared<TensorDataset>(load_mnist(dir, /*train=*/false));
    MINIDL_CHECK(test_set->size() > 0, "the test set in ", dir, " (t10k-images-idx3-ubyte) has no images");
  }
  DataLoaderOptions options;
  options.batch_size = eval_batch_size(device);
  DataLoader loader(test_set, options);
  const EvalResult r = evaluate(*model, loader, device);
  // Finite weights can still be absurd (1e30, saved by a run that diverged): then the outputs are not
  // numbers, and neither is the loss.
  MINIDL_CHECK(std::isfinite(r.loss), "'", model_path, "' gives a ",
               name == "test" ? std::string("test loss") : "loss on " + name, " of ", number_str(r.loss),
               ": its outputs are NaN or infinite (weights of a run that diverged); train again");
  if (name == "test")
    std::printf("test loss: %.4f\ntest accuracy: %s (%lld/%lld)\n", r.loss, percent(r.accuracy).c_str(),
                static_cast<long long>(r.correct), static_cast<long long>(r.count));
  else
    std::printf("%s: loss %.4f, accuracy %s (%lld/%lld)\n", name.c_str(), r.loss, percent(r.accuracy).c_str(),
                static_cast<long long>(r.correct), static_cast<long long>(r.count));
  return 0;
}
}  // namespace mnist
