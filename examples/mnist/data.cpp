// examples/mnist/data.cpp — `mnist train`'s data (examples/mnist/common.h load_training_data): the IDX
// files and their test set, or a CSV file in Kaggle's format with a stratified validation split, and the
// fingerprints --resume compares.
#include <sys/stat.h>

#include <algorithm>

#include "examples/mnist/common.h"
#include "nn/image_csv.h"
#include "examples/data/mnist_data.h"
#include "nn/split.h"

using namespace minidl;

namespace mnist {
namespace {


// Pixels 0..255 [N * 784] and labels -> the model's inputs [N, 1, 28, 28] (normalised) and targets [N].
std::shared_ptr<TensorDataset> dataset_of(const uint8_t* pixels, const int64_t* labels, int64_t n) {
  Tensor x = empty({n, 1, 28, 28}, TensorOptions(DType::float32, Device::cpu()));
  Tensor y = empty({n}, TensorOptions(DType::int64, Device::cpu()));
  float* px = x.data<float>();
  for (int64_t i = 0; i < n * 28 * 28; ++i) px[i] = mnist_normalize(pixels[i]);
  std::copy(labels, labels + n, y.data<int64_t>());
  return std::make_shared<TensorDataset>(x, y);
}

// Samples `indices` of a dataset, as a dataset of their own.
std::shared_ptr<TensorDataset> subset(const TensorDataset& all, const std::vector<int64_t>& indices) {
  const Batch b = all.get_batch(indices);
  return std::make_shared<TensorDataset>(b.inputs, b.targets);
}

// --val-split F > 0: a stratified fraction F of `all` becomes the validation set (nn/split.h).
void hold_out(TrainingData& d, const TensorDataset& all, double fraction, uint64_t seed, const std::string& source) {
  const Split split = stratified_split(all.targets().to_vector<int64_t>(), fraction, seed);
  MINIDL_CHECK(!split.validation.empty(), "--val-split ", fraction, " of the ", all.size(), " images of ", source,
               " holds out none of them: use a larger fraction or more data");
  MINIDL_CHECK(!split.train.empty(), "--val-split ", fraction, " leaves no training images of ", source);
  d.train = subset(all, split.train);
  d.eval = subset(all, split.validation);
  d.eval_name = "validation";
}

// The fingerprints --resume compares (examples/run_state.h): the training set, and the set evaluated
// after every epoch (the test set, or the held-out part), both chosen by --data.
void add_fingerprints(TrainingData& d) {
  for (const auto& [key, set] : {std::make_pair("data.train", d.train), std::make_pair("data.val", d.eval)}) {
    const auto* tensors = dynamic_cast<const TensorDataset*>(set.get());
    if (tensors) d.fingerprints.push_back({key, "--data", examples::data_fingerprint(tensors->inputs(), tensors->targets())});
  }
}

}  // namespace

std::shared_ptr<TensorDataset> csv_dataset(const std::string& path, int64_t limit) {
  ImageCsvOptions options;
  options.limit = limit;
  const ImageCsv file = read_image_csv(path, options);  // labels required
  MINIDL_CHECK(file.rows > 0, path, ": no rows after the header");
  return dataset_of(file.images.data(), file.labels.data(), file.rows);
}

bool is_file(const std::string& path) {
  struct stat st;
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
}

// --data: a folder of the four IDX files (or none: searched), or a CSV file in Kaggle's format
// (nn/image_csv.h). The CSV file has no test set: --val-split (0.1 unless given) holds out a validation
// set instead; the IDX files are evaluated on their test set unless --val-split is given.
TrainingData load_training_data(const TrainFlags& f) {
  TrainingData d;
  struct stat st;
  const bool exists = !f.data.empty() && ::stat(f.data.c_str(), &st) == 0;
  const bool csv = exists && !S_ISDIR(st.st_mode);
  MINIDL_CHECK(exists || f.data.size() < 4 || f.data.compare(f.data.size() - 4, 4, ".csv") != 0, "--data '", f.data,
               "': no such file");
  const double fraction = f.val_split >= 0 ? f.val_split : csv ? 0.1 : 0;
  const std::string split_note =
      str_cat(" (--val-split ", fraction, ", stratified, seed ", f.seed, ")");
  if (csv) {
    const auto all = csv_dataset(f.data, f.limit);
    d.train = all;
    if (fraction > 0) hold_out(d, *all, fraction, f.seed, f.data);
    d.description = str_cat(f.data, ": ", d.train->size(), " training images",
                            f.limit > 0 ? " (--limit)" : "",
                            d.eval ? str_cat(", ", d.eval->size(), " held out for validation", split_note)
                                   : std::string(", no validation (--val-split 0)"));
    const size_t slash = f.data.rfind('/');
    d.identity = str_cat("csv ", slash == std::string::npos ? f.data : f.data.substr(slash + 1), ": ",
                         d.train->size(), " training images, ", d.eval ? d.eval->size() : 0, " validation");
    add_fingerprints(d);
    return d;
  }
  const std::string dir = find_mnist_dir(f.data);
  auto all = std::make_shared<TensorDataset>(load_mnist(dir, /*train=*/true, f.limit));
  MINIDL_CHECK(all->size() > 0, "the training set in ", dir, " (train-images-idx3-ubyte) has no images");
  d.train = all;
  if (fraction > 0) {
    hold_out(d, *all, fraction, f.seed, dir);
  } else {
    d.eval = std::make_shared<TensorDataset>(load_mnist(dir, /*train=*/false));
    MINIDL_CHECK(d.eval->size() > 0, "the test set in ", dir, " (t10k-images-idx3-ubyte) has no images");
    d.eval_name = "test";
  }
  d.description = str_cat(dir, ": ", d.train->size(), " training images", f.limit > 0 ? " (--limit)" : "", ", ",
                          d.eval->size(), " ", d.eval_name, " images", fraction > 0 ? split_note : std::string());
  d.identity = str_cat("mnist idx: ", d.train->size(), " training images, ", d.eval->size(), " ", d.eval_name);
  add_fingerprints(d);
  return d;
}
}  // namespace mnist
