// examples/data/mnist_data.h — finding and loading the MNIST files.
//
// The four standard files (each may be gzip-compressed with a .gz suffix, or not):
//   train-images-idx3-ubyte  train-labels-idx1-ubyte  t10k-images-idx3-ubyte  t10k-labels-idx1-ubyte
// Images become float32 [N, 1, 28, 28] normalised as (x / 255 - 0.1307) / 0.3081 (the training set's
// mean and standard deviation); labels int64 [N] in 0..9.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nn/data.h"

namespace minidl {

constexpr double kMnistMean = 0.1307, kMnistStd = 0.3081;

// The directory holding the four files: `data_flag` when given (an error if the files are not there),
// else the first of $MINIDL_DATA/mnist, data/mnist, ../shared/data/mnist (relative to the working
// directory) that has them. The error lists every place it looked and says to run `make data`. A folder or
// FIFO in place of a file counts as present, so that reading it says what it is rather than "missing".
std::string find_mnist_dir(const std::string& data_flag);

// The candidate directories in search order (for messages and tests).
std::vector<std::string> mnist_search_dirs(const std::string& data_flag);

// Loads the training (train = true) or test split from `dir`; limit > 0 keeps the first `limit` samples.
// The labels are read first; the images file's header must then say N 28x28 images, N the label count,
// which is checked before its data is read (a mismatched or damaged file costs no memory).
TensorDataset load_mnist(const std::string& dir, bool train, int64_t limit = -1);

// (pixel / 255 - mean) / std, the normalisation the model was trained with.
inline float mnist_normalize(uint8_t pixel) {
  return static_cast<float>((pixel / 255.0 - kMnistMean) / kMnistStd);
}

}  // namespace minidl
