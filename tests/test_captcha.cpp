// tests/test_captcha.cpp — the captcha generator (determinism, size, text distribution, that it draws
// something) and the labelled-folder reader on fixture folders written here.
#include <stb_image_write.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <sys/stat.h>
#include <unistd.h>

#include "examples/data/captcha_data.h"
#include "examples/data/captcha_gen.h"
#include "tests/test_util.h"

using namespace minidl;
namespace fs = std::filesystem;

namespace {

// A fresh folder under the system temp folder, removed at scope exit.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() / ("minidl_test_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

double luma(const Image& img, int y, int x) {
  return 0.299 * img.at(y, x, 0) + 0.587 * img.at(y, x, 1) + 0.114 * img.at(y, x, 2);
}

}  // namespace

TEST_CASE("captcha generator is deterministic in (seed, index) and independent of threads", "[captcha]") {
  const CaptchaOptions o;
  const std::string text = random_captcha_text(o, 42, 7);
  CHECK(text == random_captcha_text(o, 42, 7));
  const Image a = render_captcha(text, o, 42, 7);
  CHECK(a.pixels == render_captcha(text, o, 42, 7).pixels);

  // The same images rendered by several threads at once, in another order.
  std::vector<Image> serial, parallel(8);
  for (uint64_t i = 0; i < 8; ++i) serial.push_back(render_captcha(random_captcha_text(o, 3, i), o, 3, i));
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([&, t] {
      for (int k = 1; k >= 0; --k) {
        const uint64_t i = static_cast<uint64_t>(t + 4 * k);
        parallel[i] = render_captcha(random_captcha_text(o, 3, i), o, 3, i);
      }
    });
  for (std::thread& t : pool) t.join();
  for (int i = 0; i < 8; ++i) CHECK(parallel[i].pixels == serial[i].pixels);

  // Another index or seed: another picture, even of the same text.
  CHECK(render_captcha(text, o, 42, 8).pixels != a.pixels);
  CHECK(render_captcha(text, o, 43, 7).pixels != a.pixels);
}

TEST_CASE("captcha images have the configured size and show dark text on a light background", "[captcha]") {
  CaptchaOptions o;
  for (auto [w, h] : {std::pair<int, int>{192, 64}, std::pair<int, int>{120, 40}, std::pair<int, int>{64, 64}}) {
    o.width = w;
    o.height = h;
    for (uint64_t i = 0; i < 10; ++i) {
      INFO(w << "x" << h << " index " << i);
      const Image img = render_captcha(random_captcha_text(o, 1, i), o, 1, i);
      REQUIRE(img.width == w);
      REQUIRE(img.height == h);
      REQUIRE(img.channels == 3);
      REQUIRE(img.pixels.size() == static_cast<size_t>(w) * h * 3);
      double mean = 0, var = 0, dark = 0;
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) mean += luma(img, y, x) / (w * h);
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          var += std::pow(luma(img, y, x) - mean, 2) / (w * h);
          dark += luma(img, y, x) < 180 ? 1.0 / (w * h) : 0.0;
        }
      CHECK(std::sqrt(var) > 20);  // not blank
      CHECK(mean > 150);           // mostly background
      CHECK(dark > 0.05);          // ink covers a visible part ...
      CHECK(dark < 0.6);           // ... but not everything
    }
  }
}

TEST_CASE("captcha texts have the configured lengths and cover the charset evenly", "[captcha]") {
  CaptchaOptions o;
  std::map<char, int> counts;
  int total = 0;
  for (uint64_t i = 0; i < 2000; ++i) {
    const std::string t = random_captcha_text(o, 9, i);
    REQUIRE(t.size() == 4);
    for (char c : t) {
      REQUIRE(o.charset.find(c) != std::string::npos);
      ++counts[c];
      ++total;
    }
  }
  CHECK(counts.size() == o.charset.size());
  const double expected = static_cast<double>(total) / o.charset.size();  // 222
  for (const auto& [c, n] : counts) {
    INFO("character " << c);
    CHECK(std::fabs(n - expected) < 5 * std::sqrt(expected));
  }

  o.charset = "ab";
  o.min_length = 2;
  o.max_length = 5;
  std::map<size_t, int> lengths;
  for (uint64_t i = 0; i < 400; ++i) ++lengths[random_captcha_text(o, 9, i).size()];
  CHECK(lengths.size() == 4);
  CHECK(lengths.begin()->first == 2);
  CHECK(lengths.rbegin()->first == 5);
  // A different seed gives different texts.
  CHECK(random_captcha_text(CaptchaOptions(), 9, 0) + random_captcha_text(CaptchaOptions(), 9, 1) !=
        random_captcha_text(CaptchaOptions(), 10, 0) + random_captcha_text(CaptchaOptions(), 10, 1));
}

TEST_CASE("captcha options and fonts are checked", "[captcha]") {
  CaptchaOptions o;
  o.charset = "";
  CHECK_THROWS_WITH(random_captcha_text(o, 0, 0), Catch::Contains("charset is empty"));
  o.charset = "ABA";
  CHECK_THROWS_WITH(random_captcha_text(o, 0, 0), Catch::Contains("'A' twice"));
  o.charset = "A B";
  CHECK_THROWS_WITH(random_captcha_text(o, 0, 0), Catch::Contains("printable ASCII"));
  o = CaptchaOptions();
  o.min_length = 5;
  CHECK_THROWS_WITH(random_captcha_text(o, 0, 0), Catch::Contains("bad length range 5-4"));
  o = CaptchaOptions();
  o.fonts = {"/nonexistent/font.ttf"};
  CHECK_THROWS_WITH(render_captcha("AB", o, 0, 0), Catch::Contains("/nonexistent/font.ttf"));
  TempDir dir("font");
  write_text_file(dir.file("fake.ttf"), "this is not a font");
  o.fonts = {dir.file("fake.ttf")};
  CHECK_THROWS_WITH(render_captcha("AB", o, 0, 0), Catch::Contains("not a TrueType font"));
  CHECK_THROWS_WITH(render_captcha("", CaptchaOptions(), 0, 0), Catch::Contains("empty text"));

  // MINIDL_CAPTCHA_FONT overrides the search; a wrong value is reported, not skipped.
  const std::string found = find_captcha_font();
  CHECK(fs::exists(found));
  setenv("MINIDL_CAPTCHA_FONT", "/nonexistent/env.ttf", 1);
  CHECK_THROWS_WITH(find_captcha_font(), Catch::Contains("MINIDL_CAPTCHA_FONT: cannot open '/nonexistent/env.ttf'"));
  setenv("MINIDL_CAPTCHA_FONT", found.c_str(), 1);
  CHECK(find_captcha_font() == found);
  unsetenv("MINIDL_CAPTCHA_FONT");

  // Several fonts: each character picks one, still deterministically.
  o.fonts = {found, found};
  CHECK(render_captcha("XY", o, 1, 1).pixels == render_captcha("XY", o, 1, 1).pixels);
}

TEST_CASE("captcha folder: labels from file names, resizing, charset and CTC targets", "[captcha][data]") {
  TempDir dir("folder");
  CaptchaOptions small;
  small.width = 96;
  small.height = 32;
  const std::vector<std::string> labels = {"A3F9", "K2M8", "7QQ1"};
  std::vector<Image> originals;
  for (size_t i = 0; i < labels.size(); ++i) {
    originals.push_back(render_captcha(labels[i], small, 5, i));
    save_png(dir.file(labels[i] + "_" + std::to_string(i) + ".png"), originals.back());
  }
  // A JPEG without an index suffix, and a file that is not an image by its extension.
  const Image jpeg_src = render_captcha("ZZ9", CaptchaOptions(), 5, 9);
  REQUIRE(stbi_write_jpg(dir.file("ZZ9.jpg").c_str(), jpeg_src.width, jpeg_src.height, 3, jpeg_src.pixels.data(),
                         95) != 0);
  write_text_file(dir.file("notes.txt"), "not a captcha");

  CaptchaFolderOptions opt;
  const CaptchaDataset d = load_captcha_folder(dir.path.string(), opt);
  REQUIRE(d.labels == std::vector<std::string>{"7QQ1", "A3F9", "K2M8", "ZZ9"});  // sorted by file name
  CHECK(fs::path(d.files[1]).filename() == "A3F9_0.png");
  CHECK(d.images.shape() == Shape{4, 3, 64, 192});
  CHECK(d.images.dtype() == DType::float32);
  CHECK(d.charset == "123789AFKMQZ");
  REQUIRE(d.skipped.size() == 1);
  CHECK(fs::path(d.skipped[0]).filename() == "notes.txt");
  const std::vector<float> px = d.images.to_vector<float>();
  CHECK(std::count_if(px.begin(), px.end(), [](float v) { return v < 0.0f || v > 1.0f; }) == 0);

  // Image 1 is A3F9 (written first) upscaled from 96x32: channel-planar pixel / 255 of the bilinear resize.
  const Image resized = resize_image(originals[0], 192, 64);
  const size_t plane = 192 * 64, base = 1 * 3 * plane;
  int mismatches = 0;
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 64; ++y)
      for (int x = 0; x < 192; ++x)
        mismatches += std::fabs(px[base + c * plane + y * 192 + x] - resized.at(y, x, c) / 255.0f) > 1e-6f;
  CHECK(mismatches == 0);

  // CTC targets: class k is charset[k-1], padded with 0.
  const CtcTargets t = encode_ctc_targets(d.labels, d.charset);
  CHECK(t.targets.shape() == Shape{4, 4});
  CHECK(t.lengths.to_vector<int64_t>() == std::vector<int64_t>{4, 4, 4, 3});
  const std::vector<int64_t> tv = t.targets.to_vector<int64_t>();
  // "7QQ1" with charset 123789AFKMQZ: 7 is at 3, Q at 10, 1 at 0 -> classes 4 11 11 1.
  CHECK(std::vector<int64_t>(tv.begin(), tv.begin() + 4) == std::vector<int64_t>{4, 11, 11, 1});
  CHECK(tv[3 * 4 + 3] == 0);  // "ZZ9" padded
  CHECK_THROWS_WITH(encode_ctc_targets({"AB"}, "A"), Catch::Contains("'B'"));

  // A given charset and a fixed length are enforced, naming the file.
  opt.charset = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  CHECK(load_captcha_folder(dir.path.string(), opt).charset == opt.charset);
  opt.length = 4;
  CHECK_THROWS_WITH(load_captcha_folder(dir.path.string(), opt), Catch::Contains("ZZ9.jpg' has 3 characters, not 4"));
  opt.length = 0;
  opt.charset = "0123456789";
  CHECK_THROWS_WITH(load_captcha_folder(dir.path.string(), opt),
                    Catch::Contains("7QQ1_2.png' has 'Q', which is not in the charset"));
}

TEST_CASE("captcha folder: labels.csv, bad files, empty labels and empty folders", "[captcha][data]") {
  TempDir dir("csv");
  const Image img = render_captcha("AB12", CaptchaOptions(), 2, 0);
  save_png(dir.file("first.png"), img);
  save_png(dir.file("second_image.png"), img);
  write_text_file(dir.file("labels.csv"), "file,label\nsecond_image.png, XY9 \n\nfirst.png,AB12\n");
  CaptchaFolderOptions opt;
  const CaptchaDataset d = load_captcha_folder(dir.path.string(), opt);
  CHECK(d.labels == std::vector<std::string>{"XY9", "AB12"});  // the CSV's order and labels
  CHECK(d.images.shape() == Shape{2, 3, 64, 192});
  CHECK(d.charset == "129ABXY");

  write_text_file(dir.file("labels.csv"), "first.png,AB12\nmissing.png,CD34\n");
  CHECK_THROWS_WITH(load_captcha_folder(dir.path.string(), opt), Catch::Contains("missing.png' is not a readable image"));
  write_text_file(dir.file("labels.csv"), "first.png AB12\n");
  CHECK_THROWS_WITH(load_captcha_folder(dir.path.string(), opt), Catch::Contains("line 1: expected 'file,label'"));
  write_text_file(dir.file("labels.csv"), "first.png,\n");
  CHECK_THROWS_WITH(load_captcha_folder(dir.path.string(), opt), Catch::Contains("first.png' has an empty label"));
  write_text_file(dir.file("labels.csv"), "file,label\n");
  CHECK_THROWS_WITH(load_captcha_folder(dir.path.string(), opt), Catch::Contains("no images"));

  TempDir bad("bad");
  save_png(bad.file("GOOD_0.png"), img);
  write_text_file(bad.file("WXYZ_1.png"), "this is not a PNG");
  CHECK_THROWS_WITH(load_captcha_folder(bad.path.string(), opt), Catch::Contains("WXYZ_1.png' is not a readable image"));

  TempDir unlabelled("empty_label");
  save_png(unlabelled.file("_3.png"), img);
  CHECK_THROWS_WITH(load_captcha_folder(unlabelled.path.string(), opt), Catch::Contains("_3.png' has an empty label"));

  TempDir none("none");
  write_text_file(none.file("readme.txt"), "no images here");
  CHECK_THROWS_WITH(load_captcha_folder(none.path.string(), opt), Catch::Contains("no images in"));
  CHECK_THROWS_WITH(load_captcha_folder(none.file("absent"), opt), Catch::Contains("is not a folder"));

  CHECK(label_from_file_name("dir/A3F9_17.png") == "A3F9");
  CHECK(label_from_file_name("K2M8.jpeg") == "K2M8");
  CHECK(label_from_file_name("A_B_C.png") == "A");
}

TEST_CASE("captcha folder: skipped entries and an inferred charset or length are reported", "[captcha][data]") {
  TempDir dir("warn");
  const Image img = render_captcha("AB12", CaptchaOptions(), 2, 0);
  save_png(dir.file("AB12_0.png"), img);
  save_png(dir.file("AB21_1.png"), img);
  save_png(dir.file("ABx12_2.png"), img);  // a mislabelled file: a lower-case x, and 5 characters
  write_text_file(dir.file("notes.txt"), "not a captcha");
  fs::create_directories(dir.path / "subfolder.png");
  CaptchaFolderOptions opt;
  CaptchaDataset d = load_captcha_folder(dir.path.string(), opt);
  CHECK(d.labels.size() == 3);
  REQUIRE(d.skipped.size() == 2);
  CHECK(fs::path(d.skipped[1]).filename() == "subfolder.png");
  REQUIRE(d.warnings.size() == 3);
  CHECK(d.warnings[0] == "'" + dir.path.string() + "': skipped 2 entries: subfolder.png is a directory; 1 file "
                         "without an image extension (.png, .jpg, .jpeg, .bmp): notes.txt");
  CHECK_THAT(d.warnings[1], Catch::Contains("the charset was inferred from the labels: 5 characters; the rarest: 'x' "
                                            "in 1 label (" + dir.file("ABx12_2.png") + ")"));
  CHECK_THAT(d.warnings[2], Catch::Contains("the labels have 2 different lengths: 4 in 2 labels (") &&
                                Catch::Contains("5 in 1 label (" + dir.file("ABx12_2.png") + ")"));
  // Given a charset and a length, the mislabelled file is an error; without it, nothing to warn about.
  opt.charset = "0123456789AB";
  opt.length = 4;
  CHECK_THROWS_WITH(load_captcha_folder(dir.path.string(), opt), Catch::Contains("ABx12_2.png' has 'x'"));
  fs::remove(dir.file("ABx12_2.png"));
  fs::remove(dir.file("notes.txt"));
  fs::remove(dir.path / "subfolder.png");
  CHECK(load_captcha_folder(dir.path.string(), opt).warnings.empty());
  // A given charset must be a set of printable characters.
  opt.charset = "0123456789ABA";
  CHECK_THROWS_WITH(load_captcha_folder(dir.path.string(), opt), Catch::Contains("has a character that is not printable "
                                                                                  "ASCII or appears twice"));

  // With labels.csv, images it does not list are skipped too (and said so).
  write_text_file(dir.file("labels.csv"), "AB12_0.png,AB12\n");
  d = load_captcha_folder(dir.path.string(), CaptchaFolderOptions());
  CHECK(d.labels == std::vector<std::string>{"AB12"});
  REQUIRE(d.skipped.size() == 1);
  CHECK(fs::path(d.skipped[0]).filename() == "AB21_1.png");
  CHECK(d.warnings[0] == "'" + dir.path.string() + "': skipped 1 entry: 1 image not listed in labels.csv: AB21_1.png");
}

// Issue 23, item 12: these were all reported as "not image files".
TEST_CASE("captcha folder: a broken link, a FIFO or a folder with an image name is named for what it is",
          "[captcha][data]") {
  TempDir dir("kinds");
  const Image img = render_captcha("AB12", CaptchaOptions(), 2, 0);
  save_png(dir.file("AB12_0.png"), img);
  fs::create_symlink(dir.file("AB12_0.png"), dir.file("CD34_5.png"));  // a link to an image is an image
  fs::create_symlink("gone.png", dir.file("ABCD_1.png"));
  REQUIRE(::mkfifo(dir.file("ABCD_2.png").c_str(), 0644) == 0);
  fs::create_directories(dir.path / "ABCD_994.png");
  fs::create_directory_symlink(dir.path / "ABCD_994.png", dir.path / "ABCD_995.png");
  write_text_file(dir.file("notes.txt"), "not a captcha");
  write_text_file(dir.file("x.csv"), "a,b");
  const CaptchaDataset d = load_captcha_folder(dir.path.string(), CaptchaFolderOptions());
  CHECK(d.labels == std::vector<std::string>{"AB12", "CD34"});
  REQUIRE(d.warnings.size() >= 1);
  CHECK(d.warnings[0] == "'" + dir.path.string() + "': skipped 6 entries: ABCD_1.png is a broken symbolic link (to "
                         "'gone.png'), ABCD_2.png is a FIFO (named pipe), ABCD_994.png is a directory, ABCD_995.png is "
                         "a link to a directory; 2 files without an image extension (.png, .jpg, .jpeg, .bmp): "
                         "notes.txt, x.csv");
}
