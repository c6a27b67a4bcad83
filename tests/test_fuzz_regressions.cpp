// tests/test_fuzz_regressions.cpp — every input with which a fuzzer (fuzz/) ever broke a reader, kept
// under tests/fixtures/fuzz/<target>/, fed to the reader through the fuzz harness (fuzz/harness.h) in
// the normal test run: each must now be refused cleanly, with one line of error message. Under
// `make test-asan` this is also where a regression would show as a sanitizer report. The seeds of the
// fuzzers (fuzz/corpus/<target>/) are valid files: they must be accepted.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fuzz/harness.h"

namespace fs = std::filesystem;

namespace {

using Harness = std::function<std::string(const uint8_t*, size_t)>;

const std::map<std::string, Harness>& harnesses() {
  static const std::map<std::string, Harness> h = {{"idx", minidl::fuzz::idx_input},
                                                   {"image", minidl::fuzz::image_input},
                                                   {"checkpoint", minidl::fuzz::checkpoint_input},
                                                   {"image_csv", minidl::fuzz::image_csv_input},
                                                   {"captcha_folder", minidl::fuzz::captcha_folder_input},
                                                   {"font", minidl::fuzz::font_input}};
  return h;
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  if (fs::is_directory(dir))
    for (const fs::directory_entry& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint8_t> read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

bool one_printable_line(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= ' ' && c <= '~'; });
}

}  // namespace

TEST_CASE("fuzz regressions: every input that broke a reader is now refused with one clean line", "[fuzz]") {
  size_t count = 0;
  for (const auto& [target, run] : harnesses()) {
    for (const fs::path& input : files_in(fs::path("tests/fixtures/fuzz") / target)) {
      INFO(input.string());
      const std::vector<uint8_t> bytes = read(input);
      const std::string message = run(bytes.data(), bytes.size());
      CHECK(!message.empty());
      CHECK(one_printable_line(message));
      ++count;
    }
  }
  CHECK(count > 0);  // the fixtures are there (the test runs from the source folder)
}

TEST_CASE("fuzz seeds: the valid files the fuzzers start from are accepted", "[fuzz]") {
  size_t count = 0;
  for (const auto& [target, run] : harnesses()) {
    for (const fs::path& input : files_in(fs::path("fuzz/corpus") / target)) {
      const std::string name = input.filename().string();
      if (name.find("bad") != std::string::npos || name.find("extra") != std::string::npos ||
          name.find("partial") != std::string::npos)
        continue;  // nearly valid on purpose
      INFO(input.string());
      const std::vector<uint8_t> bytes = read(input);
      CHECK(run(bytes.data(), bytes.size()) == "");
      ++count;
    }
  }
  CHECK(count >= 12);
}
