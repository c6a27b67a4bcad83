// examples/data/captcha_data.cpp — reading a folder of labelled captchas, and rendering captchas on demand
// (examples/data/captcha_data.h).
#include "examples/data/captcha_data.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "core/error.h"
#include "nn/files.h"

namespace minidl {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool has_image_extension(const fs::path& p) {
  const std::string ext = lower(p.extension().string());
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp";
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

struct Entry {
  std::string path;
  std::string label;
};

// labels.csv: "file,label" per line; an optional header line "file,label"; blank lines ignored. The label
// is everything after the first comma (so it may not contain a comma that matters; it is trimmed).
std::vector<Entry> read_labels_csv(const fs::path& folder, const fs::path& csv) {
  std::ifstream in(csv);
  MINIDL_CHECK(in.good(), "captcha data: cannot read '", csv.string(), "'");
  std::vector<Entry> entries;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = trim(line);
    if (line.empty()) continue;
    const size_t comma = line.find(',');
    MINIDL_CHECK(comma != std::string::npos, "captcha data: ", csv.string(), " line ", number,
                 ": expected 'file,label', got '", line, "'");
    const std::string file = trim(line.substr(0, comma)), label = trim(line.substr(comma + 1));
    if (number == 1 && lower(file) == "file" && lower(label) == "label") continue;
    MINIDL_CHECK(!file.empty(), "captcha data: ", csv.string(), " line ", number, ": empty file name");
    entries.push_back({(folder / file).string(), label});
  }
  return entries;
}

void check_label(const Entry& e, const CaptchaFolderOptions& options, bool from_csv) {
  MINIDL_CHECK(!e.label.empty(), "captcha data: '", e.path, "' has an empty label",
               from_csv ? " in labels.csv" : " (the label is the file name up to the first '_')");
  for (char c : e.label) {
    MINIDL_CHECK(c > ' ' && c <= '~', "captcha data: the label '", e.label, "' of '", e.path,
                 "' has a character that is not printable ASCII (byte ", static_cast<int>(static_cast<unsigned char>(c)),
                 ")");
    MINIDL_CHECK(options.charset.empty() || options.charset.find(c) != std::string::npos, "captcha data: the label '",
                 e.label, "' of '", e.path, "' has '", c, "', which is not in the charset \"", options.charset, "\"");
  }
  MINIDL_CHECK(options.length <= 0 || static_cast<int>(e.label.size()) == options.length, "captcha data: the label '",
               e.label, "' of '", e.path, "' has ", e.label.size(), " characters, not ", options.length);
}

// What a folder entry is when it is not a regular file (nor a link to one): "a directory", "a FIFO
// (named pipe)", "a link to a directory", "a broken symbolic link (to 'x.png')"...; "" for a file.
std::string not_a_file(const fs::path& p) {
  struct stat st, link;
  const bool is_link = ::lstat(p.c_str(), &link) == 0 && S_ISLNK(link.st_mode);
  if (::stat(p.c_str(), &st) == 0) {
    if (S_ISREG(st.st_mode)) return "";
    return is_link ? "a link to " + non_regular_file_kind(st.st_mode) : non_regular_file_kind(st.st_mode);
  }
  if (is_link) {
    std::error_code ec;
    const fs::path target = fs::read_symlink(p, ec);
    return ec ? "a broken symbolic link" : "a broken symbolic link (to '" + target.string() + "')";
  }
  return str_cat("unreadable (", std::strerror(errno), ")");
}

// "1 file" or "3 files".
std::string count_of(size_t n, const char* one, const char* many) { return str_cat(n, " ", n == 1 ? one : many); }

// "a, b, c and 5 more"
std::string some(const std::vector<std::string>& items, size_t shown = 3) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < shown; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > shown) out += str_cat(" and ", items.size() - shown, " more");
  return out;
}

// How often each value (a character, a label length) occurs, with the first files it occurs in.
template <class Key>
struct Occurrences {
  struct Entry {
    int64_t labels = 0;
    std::vector<std::string> files;  // the first two
  };
  std::map<Key, Entry> of;
  void add(const Key& key, const std::string& file) {
    Entry& e = of[key];
    ++e.labels;
    if (e.files.size() < 2) e.files.push_back(file);
  }
  // "'x' in 1 label (a/NCVx_99.png)": the file names are shown for values of at most 3 labels.
  static std::string describe(const std::string& value, const Entry& e) {
    std::string s = str_cat(value, " in ", e.labels, e.labels == 1 ? " label" : " labels");
    if (e.labels <= 3) s += " (" + some(e.files, 2) + ")";
    return s;
  }
};

// The warnings of an inferred charset and length: the rarest characters, and every label length when
// they differ, with files where they are rare (a mislabelled file shows up there).
void warn_about_inferred_labels(const std::vector<Entry>& entries, const CaptchaFolderOptions& options,
                                std::vector<std::string>& warnings) {
  if (options.charset.empty()) {
    Occurrences<char> chars;
    for (const Entry& e : entries)
      for (char c : std::set<char>(e.label.begin(), e.label.end())) chars.add(c, e.path);
    std::vector<std::pair<int64_t, char>> by_count;
    for (const auto& [c, entry] : chars.of) by_count.emplace_back(entry.labels, c);
    std::sort(by_count.begin(), by_count.end());
    std::vector<std::string> rarest;
    for (size_t i = 0; i < by_count.size() && i < 3; ++i)
      rarest.push_back(chars.describe(str_cat("'", by_count[i].second, "'"), chars.of.at(by_count[i].second)));
    warnings.push_back(str_cat("the charset was inferred from the labels: ", chars.of.size(),
                               " characters; the rarest: ", some(rarest),
                               ". A mislabelled file widens it silently: give the charset (--charset) to refuse "
                               "characters outside it"));
  }
  if (options.length <= 0) {
    Occurrences<size_t> lengths;
    for (const Entry& e : entries) lengths.add(e.label.size(), e.path);
    if (lengths.of.size() > 1) {
      std::vector<std::string> each;
      for (const auto& [length, entry] : lengths.of) each.push_back(lengths.describe(str_cat(length), entry));
      warnings.push_back(str_cat("the labels have ", lengths.of.size(), " different lengths: ", some(each, 6),
                                 ". A mislabelled file widens the length silently: give the length (--length) to "
                                 "refuse labels of another"));
    }
  }
}

}  // namespace

std::string label_from_file_name(const std::string& file_name) {
  const std::string stem = fs::path(file_name).stem().string();
  return stem.substr(0, stem.find('_'));
}

std::string infer_charset(const std::vector<std::string>& labels) {
  std::set<char> chars;
  for (const std::string& l : labels) chars.insert(l.begin(), l.end());
  return std::string(chars.begin(), chars.end());
}

CtcTargets encode_ctc_targets(const std::vector<std::string>& labels, const std::string& charset) {
  const int64_t N = static_cast<int64_t>(labels.size());
  int64_t S = 1;
  for (const std::string& l : labels) S = std::max<int64_t>(S, static_cast<int64_t>(l.size()));
  const TensorOptions cpu_int64(DType::int64, Device::cpu());
  CtcTargets out{zeros({N, S}, cpu_int64), empty({N}, cpu_int64)};
  int64_t* t = out.targets.data<int64_t>();
  int64_t* len = out.lengths.data<int64_t>();
  for (int64_t n = 0; n < N; ++n) {
    const std::string& l = labels[n];
    len[n] = static_cast<int64_t>(l.size());
    for (size_t s = 0; s < l.size(); ++s) {
      const size_t k = charset.find(l[s]);
      MINIDL_CHECK(k != std::string::npos, "encode_ctc_targets: label '", l, "' has '", l[s],
                   "', which is not in the charset \"", charset, "\"");
      t[n * S + static_cast<int64_t>(s)] = static_cast<int64_t>(k) + 1;
    }
  }
  return out;
}

void image_to_chw(const Image& img, int width, int height, float* out) {
  MINIDL_CHECK(img.channels == 1 || img.channels == 3, "image_to_chw: ", img.channels, " channels (need 1 or 3)");
  const Image sized = img.width == width && img.height == height ? img : resize_image(img, width, height);
  const size_t plane = static_cast<size_t>(width) * height;
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x)
        out[c * plane + static_cast<size_t>(y) * width + x] = sized.at(y, x, sized.channels == 3 ? c : 0) / 255.0f;
}

Tensor images_to_tensor(const std::vector<Image>& images, int width, int height) {
  const int64_t N = static_cast<int64_t>(images.size());
  Tensor out = empty({N, 3, height, width}, TensorOptions(DType::float32, Device::cpu()));
  float* p = out.data<float>();
  for (int64_t n = 0; n < N; ++n) image_to_chw(images[n], width, height, p + n * 3 * int64_t(width) * height);
  return out;
}

CaptchaDataset load_captcha_folder(const std::string& folder, const CaptchaFolderOptions& options) {
  MINIDL_CHECK(options.width > 0 && options.height > 0, "captcha data: bad input size ", options.width, "x",
               options.height);
  std::set<char> given;
  for (char c : options.charset)
    MINIDL_CHECK(c > ' ' && c <= '~' && given.insert(c).second, "captcha data: the charset \"", options.charset,
                 "\" has a character that is not printable ASCII or appears twice (byte ",
                 static_cast<int>(static_cast<unsigned char>(c)), ")");
  const fs::path dir(folder);
  MINIDL_CHECK(fs::is_directory(dir), "captcha data: '", folder, "' is not a folder");
  CaptchaDataset data;
  std::vector<Entry> entries;
  const fs::path csv = dir / "labels.csv";
  const bool from_csv = fs::exists(csv);
  if (from_csv) entries = read_labels_csv(dir, csv);
  // What the folder holds: images (read unless labels.csv says otherwise) and what is skipped.
  std::vector<fs::path> images;
  std::set<std::string> listed;
  for (const Entry& e : entries) listed.insert(fs::path(e.path).lexically_normal().string());
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.' || (from_csv && e.path() == csv)) continue;
    std::error_code ignored;
    const bool image = e.is_regular_file(ignored) && has_image_extension(e.path());
    if (image && (!from_csv || listed.count(e.path().lexically_normal().string())))
      images.push_back(e.path());
    else
      data.skipped.push_back(e.path().string());
  }
  std::sort(images.begin(), images.end());
  std::sort(data.skipped.begin(), data.skipped.end());
  if (!from_csv)
    for (const fs::path& p : images) entries.push_back({p.string(), label_from_file_name(p.filename().string())});
  MINIDL_CHECK(!entries.empty(), "captcha data: no images in '", folder, "'",
               from_csv ? " (labels.csv lists none)" : " (looked for .png, .jpg, .jpeg, .bmp files)");
  for (const Entry& e : entries) check_label(e, options, from_csv);
  if (!data.skipped.empty()) {  // each entry named for what it is: not a file, not an image, not listed
    std::vector<std::string> not_files, not_images, not_listed;
    for (const std::string& p : data.skipped) {
      const std::string name = fs::path(p).filename().string(), kind = not_a_file(p);
      if (!kind.empty())
        not_files.push_back(name + " is " + kind);
      else if (!has_image_extension(p))
        not_images.push_back(name);
      else
        not_listed.push_back(name);
    }
    std::vector<std::string> parts;
    if (!not_files.empty()) parts.push_back(some(not_files, 5));
    if (!not_images.empty())
      parts.push_back(str_cat(count_of(not_images.size(), "file", "files"),
                              " without an image extension (.png, .jpg, .jpeg, .bmp): ", some(not_images, 5)));
    if (!not_listed.empty())
      parts.push_back(str_cat(count_of(not_listed.size(), "image", "images"), " not listed in labels.csv: ",
                              some(not_listed, 5)));
    std::string joined;
    for (const std::string& part : parts) joined += (joined.empty() ? "" : "; ") + part;
    data.warnings.push_back(str_cat("'", folder, "': skipped ", count_of(data.skipped.size(), "entry", "entries"), ": ",
                                    joined));
  }
  warn_about_inferred_labels(entries, options, data.warnings);

  const int64_t N = static_cast<int64_t>(entries.size());
  const int W = options.width, H = options.height;
  data.images = empty({N, 3, H, W}, TensorOptions(DType::float32, Device::cpu()));
  float* pixels = data.images.data<float>();
  // Decode in parallel; each image's error is kept so the one reported is the first file's, every run.
  std::vector<std::string> errors(N);
  const int threads = static_cast<int>(std::min<int64_t>(
      N, options.threads > 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency())));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int64_t n = t; n < N; n += threads) {
        try {
          image_to_chw(load_image(entries[n].path, 3), W, H, pixels + n * 3 * int64_t(W) * H);
        } catch (const std::exception& e) {
          errors[n] = e.what();
        }
      }
    });
  for (std::thread& t : pool) t.join();
  for (int64_t n = 0; n < N; ++n)
    MINIDL_CHECK(errors[n].empty(), "captcha data: '", entries[n].path, "' is not a readable image (", errors[n], ")");

  for (const Entry& e : entries) {
    data.files.push_back(e.path);
    data.labels.push_back(e.label);
  }
  data.charset = options.charset.empty() ? infer_charset(data.labels) : options.charset;
  return data;
}

GeneratedCaptchaDataset::GeneratedCaptchaDataset(CaptchaOptions options, uint64_t seed, int64_t count, int threads,
                                                 uint64_t first_index)
    : options_(std::move(options)), seed_(seed), first_index_(first_index), count_(count), threads_(threads) {
  check_captcha_options(options_);
  MINIDL_CHECK(count >= 0, "generated captchas: negative count ", count);
  if (threads_ <= 0) threads_ = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::string GeneratedCaptchaDataset::text(int64_t i) const {
  return random_captcha_text(options_, seed_, first_index_ + static_cast<uint64_t>(i));
}

Batch GeneratedCaptchaDataset::get_batch(const std::vector<int64_t>& indices) const {
  const int64_t B = static_cast<int64_t>(indices.size()), S = options_.max_length;
  const int W = options_.width, H = options_.height;
  const TensorOptions cpu_float(DType::float32, Device::cpu()), cpu_int64(DType::int64, Device::cpu());
  Batch batch{empty({B, 3, H, W}, cpu_float), zeros({B, S}, cpu_int64)};
  float* pixels = batch.inputs.data<float>();
  int64_t* classes = batch.targets.data<int64_t>();
  std::vector<std::string> errors(B);
  auto render = [&](int64_t b) {
    const int64_t i = indices[b];
    MINIDL_CHECK(i >= 0 && i < count_, "generated captchas: index ", i, " outside [0, ", count_, ")");
    const uint64_t index = first_index_ + static_cast<uint64_t>(i);
    const std::string label = random_captcha_text(options_, seed_, index);
    image_to_chw(render_captcha(label, options_, seed_, index), W, H, pixels + b * 3 * int64_t(W) * H);
    for (size_t s = 0; s < label.size(); ++s)
      classes[b * S + static_cast<int64_t>(s)] = static_cast<int64_t>(options_.charset.find(label[s])) + 1;
  };
  const int threads = static_cast<int>(std::min<int64_t>(B, threads_));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int64_t b = t; b < B; b += threads) {
        try {
          render(b);
        } catch (const std::exception& e) {
          errors[b] = e.what();
        }
      }
    });
  for (std::thread& t : pool) t.join();
  for (const std::string& e : errors) MINIDL_CHECK(e.empty(), e);
  return batch;
}

Tensor ctc_target_lengths(const Tensor& padded_targets) {
  MINIDL_CHECK(padded_targets.dim() == 2 && padded_targets.dtype() == DType::int64,
               "ctc_target_lengths: expected int64 [N, S] targets, got ", shape_str(padded_targets.shape()), " ",
               dtype_name(padded_targets.dtype()));
  const int64_t N = padded_targets.size(0), S = padded_targets.size(1);
  const std::vector<int64_t> t = padded_targets.to_vector<int64_t>();
  std::vector<double> lengths(N, 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t s = 0; s < S; ++s) lengths[n] += t[n * S + s] != 0;
  return from_vector(lengths, {N}, TensorOptions(DType::int64, Device::cpu()));
}

std::vector<std::string> ctc_targets_to_text(const Tensor& padded_targets, const std::string& charset) {
  MINIDL_CHECK(padded_targets.dim() == 2 && padded_targets.dtype() == DType::int64,
               "ctc_targets_to_text: expected int64 [N, S] targets, got ", shape_str(padded_targets.shape()), " ",
               dtype_name(padded_targets.dtype()));
  const int64_t N = padded_targets.size(0), S = padded_targets.size(1);
  const std::vector<int64_t> t = padded_targets.to_vector<int64_t>();
  std::vector<std::string> out(N);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t s = 0; s < S && t[n * S + s] != 0; ++s) {
      const int64_t k = t[n * S + s];
      MINIDL_CHECK(k >= 1 && k <= static_cast<int64_t>(charset.size()), "ctc_targets_to_text: class ", k,
                   " is not in the charset \"", charset, "\"");
      out[n] += charset[k - 1];
    }
  return out;
}

}  // namespace minidl
