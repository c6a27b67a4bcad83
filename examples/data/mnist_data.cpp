#include "examples/data/mnist_data.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>

#include "core/error.h"
#include "core/settings.h"
#include "nn/idx.h"

namespace minidl {

namespace {

const char* const kFiles[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                              "t10k-labels-idx1-ubyte"};

// Anything at `path`: a file, or a folder or FIFO in its place (which read_idx then names as such, rather
// than this search calling the file missing).
bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// dir/name.gz if present, else dir/name if present, else "".
std::string locate(const std::string& dir, const std::string& name) {
  const std::string base = dir + "/" + name;
  if (exists(base + ".gz")) return base + ".gz";
  if (exists(base)) return base;
  return "";
}

std::vector<std::string> missing_in(const std::string& dir) {
  std::vector<std::string> missing;
  for (const char* f : kFiles)
    if (locate(dir, f).empty()) missing.push_back(f);
  return missing;
}

}  // namespace

std::vector<std::string> mnist_search_dirs(const std::string& data_flag) {
  if (!data_flag.empty()) return {data_flag};
  std::vector<std::string> dirs;
  if (const std::string env = settings::data.read(); !env.empty()) dirs.push_back(env + "/mnist");  // MINIDL_DATA
  dirs.push_back("data/mnist");
  dirs.push_back("../shared/data/mnist");
  return dirs;
}

std::string find_mnist_dir(const std::string& data_flag) {
  std::string looked;
  for (const std::string& dir : mnist_search_dirs(data_flag)) {
    const std::vector<std::string> missing = missing_in(dir);
    if (missing.empty()) return dir;
    std::string names;
    for (const auto& m : missing) names += (names.empty() ? "" : ", ") + m;
    struct stat st;
    const bool exists = ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    looked += str_cat("\n  ", dir, ": ", !exists ? "no such directory" : missing.size() == 4 ? "no MNIST files" : "missing " + names);
  }
  throw Error(str_cat("cannot find the MNIST files (", kFiles[0], "[.gz] and the three others). Looked in:", looked,
                      "\nRun `make data` to fetch them into data/mnist, or pass --data DIR",
                      data_flag.empty() ? " or set MINIDL_DATA (its mnist/ subdirectory is searched)" : ""));
}

TensorDataset load_mnist(const std::string& dir, bool train, int64_t limit) {
  const std::string images_path = locate(dir, train ? kFiles[0] : kFiles[2]);
  const std::string labels_path = locate(dir, train ? kFiles[1] : kFiles[3]);
  MINIDL_CHECK(!images_path.empty() && !labels_path.empty(), "mnist: the ", train ? "training" : "test",
               " files are not in ", dir);
  // Labels first (one byte per sample): the images' header is then checked against them before its
  // data is read, so a damaged or mismatched images file costs no memory (nn/idx.h).
  const IdxArray labels = read_idx(labels_path, [&](const std::vector<int64_t>& dims) {
    MINIDL_CHECK(dims.size() == 1, "mnist: '", labels_path, "' should hold one label per image, but its dimensions are ",
                 shape_str(dims));
  });
  const IdxArray images = read_idx(images_path, [&](const std::vector<int64_t>& dims) {
    MINIDL_CHECK(dims.size() == 3 && dims[1] == 28 && dims[2] == 28, "mnist: '", images_path,
                 "' should hold N 28x28 images, but its dimensions are ", shape_str(dims));
    check_idx_counts_match(dims[0], images_path, labels.dims[0], labels_path);
  });

  const int64_t n = limit > 0 ? std::min(limit, images.dims[0]) : images.dims[0];
  constexpr int64_t kPixels = 28 * 28;
  Tensor x = empty({n, 1, 28, 28}, TensorOptions(DType::float32, Device::cpu()));
  Tensor y = empty({n}, TensorOptions(DType::int64, Device::cpu()));
  float* px = x.data<float>();
  int64_t* py = y.data<int64_t>();
  float table[256];
  for (int v = 0; v < 256; ++v) table[v] = mnist_normalize(static_cast<uint8_t>(v));
  for (int64_t i = 0; i < n * kPixels; ++i) px[i] = table[images.data[i]];
  for (int64_t i = 0; i < n; ++i) {
    MINIDL_CHECK(labels.data[i] <= 9, "mnist: '", labels_path, "': label ", int(labels.data[i]), " of sample ", i,
                 " is not a digit 0..9");
    py[i] = labels.data[i];
  }
  return TensorDataset(x, y);
}

}  // namespace minidl
