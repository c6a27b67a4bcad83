// examples/mnist/predict.cpp — `mnist predict`: the digit in each image file, or Kaggle's submission file
// for a CSV file of images (--csv test.csv --out submission.csv).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/numerics.h"
#include "examples/mnist/common.h"
#include "nn/checkpoint.h"
#include "nn/files.h"
#include "nn/image.h"
#include "nn/image_csv.h"
#include "examples/data/mnist_data.h"

using namespace minidl;

namespace mnist {
namespace {

// An image file as the model expects it: gray, 28x28, a white digit on black (MNIST's polarity; an
// image whose border is bright is a dark digit on a light background and is inverted), normalised.
Tensor image_as_input(const std::string& path, bool& inverted) {
  Image img = resize_image(load_image(path, 1), 28, 28);
  double border = 0;
  int n = 0;
  for (int i = 0; i < 28; ++i) {
    border += img.at(0, i) + img.at(27, i) + img.at(i, 0) + img.at(i, 27);
    n += 4;
  }
  inverted = border / n > 127;
  std::vector<float> pixels(28 * 28);
  for (int i = 0; i < 28 * 28; ++i) {
    const uint8_t p = img.pixels[i];
    pixels[i] = mnist_normalize(inverted ? static_cast<uint8_t>(255 - p) : p);
  }
  return from_data(pixels.data(), {1, 1, 28, 28}, Device::cpu());
}

}  // namespace

int predict(const std::string& model_path, const std::vector<std::string>& images, const std::string& device_flag,
            const std::vector<std::string>& kernels) {
  select_kernels_from_flags(kernels);
  const Device device = choose_device(device_flag);
  std::shared_ptr<Sequential> model = load_model(model_path, device);
  NoGradGuard no_grad;
  int failures = 0;
  for (const std::string& path : images) {
    try {
      bool inverted = false;
      const Tensor x = image_as_input(path, inverted);
      const std::vector<float> p = softmax((*model)(x.to(device)), 1).to_vector<float>();
      for (float v : p)
        MINIDL_CHECK(std::isfinite(v), path, ": the model's probabilities are ", number_str(v), ": '", model_path,
                     "' holds weights of a run that diverged; train again");
      int best = 0;
      for (int d = 1; d < 10; ++d)
        if (p[d] > p[best]) best = d;
      std::printf("%s: %d (probability %.4f)%s\n", path.c_str(), best, p[best],
                  inverted ? "  [inverted: dark digit on a light background]" : "");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mnist: %s\n", e.what());
      ++failures;
    }
  }
  return failures ? 1 : 0;
}

// predict --csv: a digit for every row of a CSV file in Kaggle's format (nn/image_csv.h; a label column,
// if the file has one, is only used to report the accuracy), written as Kaggle's submission file:
// "ImageId,Label", then "<row number from 1>,<digit>" per row. The --out path is checked before any work,
// and the file is written at the end, atomically (nn/checkpoint.h write_file_atomically): a failure at
// any point (a malformed row, say) leaves no file, or the previous one whole.
int predict_csv(const std::string& model_path, const std::string& csv, const std::string& out,
                const std::string& device_flag, const std::vector<std::string>& kernels) {
  select_kernels_from_flags(kernels);
  check_outputs_are_not_inputs({{"--out", out}}, {{"--model", model_path}, {"--csv", csv}});
  const SavePath target = prepare_checkpoint_path(out, "--out");
  if (target.stale_removed > 0)
    std::printf("mnist: removed %d temporary file(s) %s.tmp-* left by interrupted writes\n", target.stale_removed,
                target.target.c_str());
  const Device device = choose_device(device_flag);
  std::shared_ptr<Sequential> model = load_model(model_path, device);
  ImageCsvOptions options;
  options.labels = CsvLabels::optional;
  const ImageCsv file = read_image_csv(csv, options);
  MINIDL_CHECK(file.rows > 0, csv, ": no rows after the header");

  NoGradGuard no_grad;
  const int64_t batch = eval_batch_size(device);
  std::string text = "ImageId,Label\n";
  int64_t correct = 0;
  for (int64_t first = 0; first < file.rows; first += batch) {
    const int64_t n = std::min(batch, file.rows - first);
    std::vector<float> pixels(static_cast<size_t>(n * 28 * 28));
    const uint8_t* from = file.images.data() + first * 28 * 28;
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = mnist_normalize(from[i]);
    const Tensor x = from_data(pixels.data(), {n, 1, 28, 28}, Device::cpu());
    const Tensor logits = (*model)(x.to(device));
    const NonFinite bad = first_non_finite(logits);
    MINIDL_CHECK(!bad.found(), csv, ": the model's output for row ", first + bad.index / 10 + 1, " is ",
                 number_str(bad.value), ": '", model_path, "' holds weights of a run that diverged; nothing written");
    const std::vector<int64_t> digits = argmax(logits, 1).to_vector<int64_t>();
    for (int64_t k = 0; k < n; ++k) {
      text += str_cat(first + k + 1, ",", digits[k], "\n");
      if (file.labelled) correct += digits[k] == file.labels[first + k];
    }
  }
  write_file_atomically(out, text);
  std::printf("mnist: wrote %lld predictions to %s\n", static_cast<long long>(file.rows), out.c_str());
  if (file.labelled)
    std::printf("accuracy against the labels in %s: %s (%lld/%lld)\n", csv.c_str(),
                percent(static_cast<double>(correct) / file.rows).c_str(), static_cast<long long>(correct),
                static_cast<long long>(file.rows));
  return 0;
}
}  // namespace mnist
