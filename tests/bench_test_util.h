// tests/bench_test_util.h — what the tests of `minidl bench`'s baselines, sweeps and ragged check share:
// the text a function printed, a file's text and lines, a path in the temporary folder, the fixtures.
#pragma once
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace minidl {
namespace testing {

// What `write(FILE*)` printed.
inline std::string printed_by(const std::function<void(std::FILE*)>& write) {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  write(f);
  std::fflush(f);
  std::rewind(f);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  std::fclose(f);
  return text;
}

inline std::string text_of(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::vector<std::string> lines_in(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) lines.push_back(line);
  return lines;
}

// A file of this name in the temporary folder, with the process id so that parallel ctest entries differ.
inline std::string temp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "_" + name)).string();
}

// tests/fixtures/bench/NAME: hand-written `minidl bench --json` files.
inline std::string bench_fixture(const std::string& name) {
  return std::string(MINIDL_SOURCE_DIR) + "/tests/fixtures/bench/" + name;
}

}  // namespace testing
}  // namespace minidl
