// nn/image_csv.h — images stored one per line of a CSV file, as Kaggle's "Digit Recognizer" competition
// ships MNIST:
//
//   train.csv   label,pixel0,pixel1,...,pixel783     a header, then per image its class and its pixels
//   test.csv    pixel0,pixel1,...,pixel783           a header, then per image its pixels only
//
// Pixels are whole numbers 0..255 in row-major order (pixel k is row k / 28, column k % 28 of a 28x28
// image; the header's names only need to count up from pixel0). Parsing is strict, because a silently
// misread file trains a model on garbage: the header must be exactly one of the two forms above (a
// UTF-8 byte-order mark before it is skipped), every row must have the header's number of columns,
// every field must be a whole number written in plain digits (std::from_chars: no spaces, signs,
// decimals or exponents) within its range, and a blank line may only come at the very end. Lines may
// end in \n or \r\n. Every error names the file and the line ("train.csv:17: ..."), and the column when
// one is at fault; a field quoted in a message is cut to 24 characters, bytes outside printable ASCII
// shown as '?'. Reading allocates no more than the rows it keeps.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace minidl {

// What the file must have in its first column.
enum class CsvLabels {
  required,  // label,pixel0,... (training)
  optional,  // either form (prediction: a labelled file can be scored)
};

struct ImageCsvOptions {
  int64_t pixels = 784;                     // columns pixel0 .. pixel<pixels - 1>
  int64_t classes = 10;                     // labels 0 .. classes - 1
  CsvLabels labels = CsvLabels::required;
  int64_t limit = 0;                        // > 0: keep the first `limit` rows only (the rest is not read)
};

struct ImageCsv {
  int64_t rows = 0;
  int64_t pixels = 0;            // per row
  bool labelled = false;         // the file has the label column
  std::vector<uint8_t> images;   // rows * pixels, row after row
  std::vector<int64_t> labels;   // rows (empty when not labelled)
};

// Reads `path` (see the header comment). Throws minidl::Error "PATH:LINE: what is wrong".
ImageCsv read_image_csv(const std::string& path, const ImageCsvOptions& options = {});

}  // namespace minidl
