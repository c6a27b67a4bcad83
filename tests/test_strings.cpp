// tests/test_strings.cpp — core/strings.h: join puts the separator between items only.
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/strings.h"

using namespace minidl;

TEST_CASE("join puts the separator between items, none around them", "[core][strings]") {
  CHECK(join(std::vector<std::string>{}, ", ") == "");
  CHECK(join(std::vector<std::string>{"a"}, ", ") == "a");
  CHECK(join(std::vector<std::string>{"a", "b", "c"}, ", ") == "a, b, c");
  CHECK(join(std::vector<std::string>{"", "b"}, ",") == ",b");  // an empty item still counts
  CHECK(join(std::set<std::string>{"y", "x"}, " ") == "x y");   // in the range's order
}

TEST_CASE("join shows each item through the function it is given", "[core][strings]") {
  const std::vector<int> dims{64, 1, 28, 28};
  CHECK(join(dims, "x", [](int v) { return std::to_string(v); }) == "64x1x28x28");
  CHECK(join(std::string("ab"), " or ", [](char c) { return std::string(1, c) + "2"; }) == "a2 or b2");
}
