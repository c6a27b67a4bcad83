// tools/bench/case_util.cpp — the helpers of tools/bench/case.h: shape-spec parsing and input makers.
#include <algorithm>
#include <cctype>

#include "ops/ops.h"
#include "tools/bench/case.h"

namespace minidl {
namespace bench {

std::vector<std::string> split_spec(const std::string& spec) {
  std::vector<std::string> parts;
  std::string part;
  for (char c : spec) {
    if (c == ',') {
      parts.push_back(part);
      part.clear();
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      part += c;
    }
  }
  parts.push_back(part);
  return parts;
}

namespace {
// Reads a positive integer at text[pos...]; false when there is none.
bool read_number(const std::string& text, size_t& pos, int64_t& value) {
  const size_t start = pos;
  value = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    if (value > (int64_t(1) << 40)) return false;  // absurd sizes are a typo, not a request
    value = value * 10 + (text[pos++] - '0');
  }
  return pos > start;
}
}  // namespace

Shape parse_dims(const std::string& text, const std::string& what) {
  Shape dims;
  size_t pos = 0;
  while (true) {
    int64_t v = 0;
    MINIDL_CHECK(read_number(text, pos, v) && v > 0, what, ": '", text, "' is not a list of sizes like 64x32x26x26");
    dims.push_back(v);
    if (pos == text.size()) return dims;
    MINIDL_CHECK(text[pos] == 'x', what, ": '", text, "' is not a list of sizes like 64x32x26x26");
    ++pos;
  }
}

std::vector<std::pair<char, LetterOption>> parse_letters(const std::string& text, const std::string& what) {
  std::vector<std::pair<char, LetterOption>> options;
  size_t pos = 0;
  while (pos < text.size()) {
    const char letter = text[pos++];
    MINIDL_CHECK(std::isalpha(static_cast<unsigned char>(letter)), what, ": '", text,
                 "': expected a letter followed by a number (s2, p1, k2x1)");
    LetterOption o;
    if (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      read_number(text, pos, o.first);
      o.second = o.first;
      if (pos + 1 < text.size() && text[pos] == 'x' && std::isdigit(static_cast<unsigned char>(text[pos + 1]))) {
        ++pos;
        read_number(text, pos, o.second);
      }
    }
    options.emplace_back(letter, o);
  }
  return options;
}

void bad_spec(const std::string& key, const std::string& spec, const std::string& syntax, const std::string& why) {
  throw Error(str_cat("bench: shape '", key, ":", spec, "' does not follow ", key, ":", syntax, " (", why, ")"));
}

Tensor uniform_input(const Shape& shape, double lo, double hi, Device d) {
  const Tensor u = rand(shape, TensorOptions(DType::float32, Device::cpu()));
  return add_scalar(mul_scalar(u, hi - lo), lo).to(d);
}

Tensor normal_input(const Shape& shape, Device d) {
  return randn(shape, TensorOptions(DType::float32, Device::cpu())).to(d);
}

Tensor index_input(const Shape& shape, int64_t lo, int64_t hi, Device d) {
  const std::vector<float> u = rand(shape, TensorOptions(DType::float32, Device::cpu())).to_vector<float>();
  std::vector<double> values(u.size());
  for (size_t i = 0; i < u.size(); ++i)
    values[i] = static_cast<double>(std::min<int64_t>(hi - 1, lo + static_cast<int64_t>(u[i] * (hi - lo))));
  return from_vector(values, shape, TensorOptions(DType::int64, Device::cpu())).to(d);
}

Tensor output(const Shape& shape, Device d) { return empty(shape, TensorOptions(DType::float32, d)); }

}  // namespace bench
}  // namespace minidl
