// tests/test_image_csv.cpp — the CSV image reader (Kaggle's digit-recognizer format) on fixture files
// written here: both header forms, line endings, a byte-order mark, --limit; every kind of malformed file,
// each named by file and line; and the stratified validation split.
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "nn/image_csv.h"
#include "nn/split.h"

using namespace minidl;

namespace {

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/minidl_test_csv_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  // Writes `text` to a file called `name` and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::string file = path + "/" + name;
    std::FILE* f = std::fopen(file.c_str(), "wb");
    REQUIRE(f != nullptr);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
    return file;
  }
  std::string path;
};

// Files of 4 pixels keep the fixtures readable; the format is the same for 784.
ImageCsvOptions four_pixels(CsvLabels labels = CsvLabels::required) {
  ImageCsvOptions o;
  o.pixels = 4;
  o.labels = labels;
  return o;
}

const std::string kLabelled = "label,pixel0,pixel1,pixel2,pixel3\n";
const std::string kPixelsOnly = "pixel0,pixel1,pixel2,pixel3\n";

// The message of the error reading `text` (as file "bad.csv") throws; fails when it reads.
std::string error_of(const TempDir& dir, const std::string& text, CsvLabels labels = CsvLabels::required) {
  const std::string path = dir.write("bad.csv", text);
  try {
    read_image_csv(path, four_pixels(labels));
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("no error for:\n" << text);
  return "";
}

}  // namespace

TEST_CASE("image csv: labelled and pixel-only files read their rows exactly", "[image_csv]") {
  TempDir dir;
  const std::string train = dir.write("train.csv", kLabelled + "3,0,255,17,4\n9,1,2,3,250\n0,0,0,0,0\n");
  const ImageCsv a = read_image_csv(train, four_pixels());
  CHECK(a.rows == 3);
  CHECK(a.pixels == 4);
  CHECK(a.labelled);
  CHECK(a.labels == std::vector<int64_t>{3, 9, 0});
  CHECK(a.images == std::vector<uint8_t>{0, 255, 17, 4, 1, 2, 3, 250, 0, 0, 0, 0});

  const std::string test = dir.write("test.csv", kPixelsOnly + "0,255,17,4\n1,2,3,250\n");
  const ImageCsv b = read_image_csv(test, four_pixels(CsvLabels::optional));
  CHECK(b.rows == 2);
  CHECK_FALSE(b.labelled);
  CHECK(b.labels.empty());
  CHECK(b.images == std::vector<uint8_t>{0, 255, 17, 4, 1, 2, 3, 250});
  // A labelled file is fine where labels are optional.
  CHECK(read_image_csv(train, four_pixels(CsvLabels::optional)).labels == a.labels);

  // \r\n line endings, a UTF-8 byte-order mark, no final newline, blank lines at the very end, leading
  // zeros: the same contents.
  const std::string windows =
      dir.write("windows.csv", "\xEF\xBB\xBFlabel,pixel0,pixel1,pixel2,pixel3\r\n3,0,255,17,4\r\n9,1,2,3,250\r\n0,00,0,0,000");
  const ImageCsv c = read_image_csv(windows, four_pixels());
  CHECK(c.labels == a.labels);
  CHECK(c.images == a.images);
  const std::string trailing = dir.write("trailing.csv", kLabelled + "3,0,255,17,4\n\n\n");
  CHECK(read_image_csv(trailing, four_pixels()).rows == 1);

  // limit: the first rows only (what `mnist train --limit N` reads of a CSV file).
  ImageCsvOptions first_two = four_pixels();
  first_two.limit = 2;
  const ImageCsv d = read_image_csv(train, first_two);
  CHECK(d.rows == 2);
  CHECK(d.labels == std::vector<int64_t>{3, 9});

  // A header and no rows is a file of 0 rows (the programs refuse it, naming the file).
  CHECK(read_image_csv(dir.write("empty_rows.csv", kLabelled), four_pixels()).rows == 0);
}

TEST_CASE("image csv: Kaggle's 784-pixel header", "[image_csv]") {
  TempDir dir;
  std::string header = "label", row = "7";
  for (int k = 0; k < 784; ++k) {
    header += ",pixel" + std::to_string(k);
    row += "," + std::to_string(k % 256);
  }
  const ImageCsv csv = read_image_csv(dir.write("train.csv", header + "\n" + row + "\n" + row + "\n"));
  CHECK(csv.rows == 2);
  CHECK(csv.labels == std::vector<int64_t>{7, 7});
  REQUIRE(csv.images.size() == 2 * 784);
  CHECK(csv.images[783] == 783 % 256);
}

TEST_CASE("image csv: every kind of malformed file is an error naming the file and the line", "[image_csv]") {
  TempDir dir;
  const std::string bad = dir.path + "/bad.csv";
  using Catch::Contains;
  using Catch::StartsWith;

  // The header.
  CHECK_THAT(error_of(dir, ""), StartsWith(bad + ":1: the file is empty; expected a header"));
  CHECK_THAT(error_of(dir, "id,pixel0,pixel1,pixel2,pixel3\n1,2,3,4,5\n"),
             StartsWith(bad + ":1: the header starts with 'id'; expected 'label,pixel0,pixel1,...,pixel3'"));
  CHECK_THAT(error_of(dir, "label,pixel0,pixel1,pixel2\n1,2,3,4\n"),
             StartsWith(bad + ":1: the header has 4 columns; expected 5"));
  CHECK_THAT(error_of(dir, "label,pixel0,pixel1,pixel3,pixel2\n"),
             StartsWith(bad + ":1: column 4 of the header is 'pixel3', expected 'pixel2'"));
  // A pixel-only file (test.csv) where labels are required (training).
  CHECK_THAT(error_of(dir, kPixelsOnly + "1,2,3,4\n"),
             StartsWith(bad + ":1: the header has no 'label' column") && Contains("like Kaggle's test.csv"));

  // Rows: the line number counts the header as line 1.
  CHECK_THAT(error_of(dir, kLabelled + "1,2,3,4,5\n1,2,3,4\n"),
             StartsWith(bad + ":3: 4 column(s), but the header has 5 (label and 4 pixels)"));
  CHECK_THAT(error_of(dir, kLabelled + "1,2,3,4,5,6\n"), StartsWith(bad + ":2: 6 column(s), but the header has 5"));
  CHECK_THAT(error_of(dir, kLabelled + "1,2,abc,4,5\n"),
             StartsWith(bad + ":2: column 3 (pixel1): 'abc' is not a whole number"));
  CHECK_THAT(error_of(dir, kLabelled + "1,2,3,4.5,5\n"),
             StartsWith(bad + ":2: column 4 (pixel2): '4.5' is not a whole number"));
  CHECK_THAT(error_of(dir, kLabelled + "1,2, 3,4,5\n"),
             StartsWith(bad + ":2: column 3 (pixel1): ' 3' is not a whole number"));
  CHECK_THAT(error_of(dir, kLabelled + "1,2,3,+4,5\n"),
             StartsWith(bad + ":2: column 4 (pixel2): '+4' is not a whole number"));
  CHECK_THAT(error_of(dir, kLabelled + "1,2,3,4,\n"), StartsWith(bad + ":2: column 5 (pixel3): the field is empty"));
  CHECK_THAT(error_of(dir, kLabelled + "1,2,3,256,5\n"),
             StartsWith(bad + ":2: column 4 (pixel2): 256 is outside 0..255 (pixels are 0..255)"));
  CHECK_THAT(error_of(dir, kLabelled + "1,-1,3,4,5\n"), StartsWith(bad + ":2: column 2 (pixel0): -1 is outside 0..255"));
  CHECK_THAT(error_of(dir, kLabelled + "1,99999999999999999999,3,4,5\n"),
             StartsWith(bad + ":2: column 2 (pixel0): 99999999999999999999 is outside 0..255"));
  CHECK_THAT(error_of(dir, kLabelled + "1,2,3,4,5\n10,2,3,4,5\n"),
             StartsWith(bad + ":3: column 1 (label): 10 is outside 0..9 (labels are classes 0..9)"));
  CHECK_THAT(error_of(dir, kLabelled + "-3,2,3,4,5\n"), StartsWith(bad + ":2: column 1 (label): -3 is outside 0..9"));
  CHECK_THAT(error_of(dir, kLabelled + "x,2,3,4,5\n"),
             StartsWith(bad + ":2: column 1 (label): 'x' is not a whole number"));
  CHECK_THAT(error_of(dir, kPixelsOnly + "1,2,3,4\n1,2,300,4\n", CsvLabels::optional),
             StartsWith(bad + ":3: column 3 (pixel2): 300 is outside 0..255"));
  // A blank line with rows after it.
  CHECK_THAT(error_of(dir, kLabelled + "1,2,3,4,5\n\n1,2,3,4,5\n"),
             StartsWith(bad + ":3: an empty line, with rows after it (line 4)"));

  // What a message quotes: at most 24 characters, printable (a PNG given as CSV, a tab, a long field).
  CHECK_THAT(error_of(dir, std::string("\x89PNG\r\n\x1a\n\0\0", 10)),
             StartsWith(bad + ":1: the header starts with '?PNG'; expected"));
  CHECK_THAT(error_of(dir, kLabelled + "1,2,\t3,4,5\n"),
             StartsWith(bad + ":2: column 3 (pixel1): '?3' is not a whole number"));
  CHECK_THAT(error_of(dir, kLabelled + "1,2,3,4,abcdefghijklmnopqrstuvwxyz\n"),
             StartsWith(bad + ":2: column 5 (pixel3): 'abcdefghijklmnopqrstu...' is not a whole number"));

  // Not a file at all.
  CHECK_THROWS_WITH(read_image_csv(dir.path + "/missing.csv"),
                    StartsWith(dir.path + "/missing.csv: cannot open: No such file or directory"));
  CHECK_THROWS_WITH(read_image_csv(dir.path), Contains("is a folder, not a CSV file"));
}

TEST_CASE("stratified split: each class gives the same fraction, reproducibly from the seed", "[image_csv]") {
  // 1000 samples of 10 classes in unequal numbers: class c has 50 + 10 c samples, in a mixed order.
  std::vector<int64_t> labels;
  for (int64_t c = 0; c < 10; ++c)
    for (int64_t k = 0; k < 50 + 10 * c; ++k) labels.push_back(c);
  for (size_t i = 0; i < labels.size(); ++i) std::swap(labels[i], labels[(i * 7919) % labels.size()]);

  const Split a = stratified_split(labels, 0.1, 42);
  std::map<int64_t, int64_t> total, held;
  for (int64_t l : labels) ++total[l];
  for (int64_t i : a.validation) ++held[labels[i]];
  for (const auto& [c, n] : total) {
    INFO("class " << c);
    CHECK(held[c] == std::llround(0.1 * n));  // 5, 6, ..., 14: the class proportions are kept
  }
  // Disjoint, together everything, each in increasing order.
  std::set<int64_t> all(a.train.begin(), a.train.end());
  for (int64_t i : a.validation) CHECK(all.insert(i).second);
  CHECK(all.size() == labels.size());
  CHECK(std::is_sorted(a.train.begin(), a.train.end()));
  CHECK(std::is_sorted(a.validation.begin(), a.validation.end()));

  // A pure function of the seed: the same split again, another one for another seed.
  const Split again = stratified_split(labels, 0.1, 42);
  CHECK(again.validation == a.validation);
  CHECK(stratified_split(labels, 0.1, 43).validation != a.validation);

  // 0 holds nothing out; a fraction outside [0, 1) is refused.
  CHECK(stratified_split(labels, 0, 42).validation.empty());
  CHECK_THROWS_WITH(stratified_split(labels, 1, 42), Catch::Contains("must be in [0, 1)"));
}
