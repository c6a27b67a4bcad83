// tools/bench/case_util.cpp — the helpers of tools/bench/case.h: the spec reader and the input makers.
#include <algorithm>
#include <cstdio>

#include "core/strings.h"
#include "ops/ops.h"
#include "tools/bench/case.h"

namespace minidl {
namespace bench {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::string trimmed(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// A character for a message: printable as itself, anything else as its code.
std::string shown(char c) {
  const unsigned char u = static_cast<unsigned char>(c);
  return u >= 0x20 && u < 0x7f ? str_cat("'", c, "'") : str_cat("byte ", static_cast<int>(u));
}

// Text from the command line for a one-line message: control characters as \xNN, at most `limit` characters.
std::string printable(const std::string& text, size_t limit) {
  std::string out;
  for (char c : text.substr(0, limit)) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    }
  }
  return text.size() > limit ? out + "..." : out;
}

}  // namespace

SpecReader::SpecReader(std::string key, std::string spec, std::string syntax)
    : key_(std::move(key)), spec_(std::move(spec)), syntax_(std::move(syntax)) {
  if (trimmed(spec_).empty()) fail("the spec is empty");
  size_t start = 0;
  while (true) {
    const size_t comma = spec_.find(',', start);
    parts_.push_back(trimmed(spec_.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (parts_.back().empty()) fail(str_cat("part ", parts_.size(), " is empty (a comma too many)"));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
}

void SpecReader::expect_parts(size_t min, size_t max, const std::string& what) const {
  if (parts_.size() >= min && parts_.size() <= max) return;
  const std::string wanted = min == max ? std::to_string(min) : str_cat(min, " to ", max);
  fail(str_cat("expected ", wanted, " comma-separated part(s) (", what, "), got ", parts_.size()));
}

namespace {

// Reads a whole number at text[pos...]; false when there is none. A value above kMaxSize stops growing
// (so it never overflows) and comes back above kMaxSize, for the caller's range message; `digits` is the
// number as written (its first 24 digits and "..." when longer).
bool read_number(const std::string& text, size_t& pos, int64_t& value, std::string& digits) {
  const size_t start = pos;
  value = 0;
  while (pos < text.size() && is_digit(text[pos])) {
    if (value <= kMaxSize) value = value * 10 + (text[pos] - '0');
    ++pos;
  }
  digits = pos - start > 24 ? text.substr(start, 24) + "..." : text.substr(start, pos - start);
  return pos > start;
}

}  // namespace

Shape SpecReader::sizes(size_t i, const std::string& prefix, size_t min_count, size_t max_count) const {
  std::vector<std::string> names;
  for (size_t k = 1; k <= max_count; ++k) names.push_back(prefix + std::to_string(k));
  return read_sizes(i, names, min_count);
}

Shape SpecReader::sizes(size_t i, const std::vector<std::string>& names) const {
  return read_sizes(i, names, names.size());
}

Shape SpecReader::sizes(size_t i, const std::vector<std::string>& names, size_t min_count) const {
  return read_sizes(i, names, min_count);
}

Shape SpecReader::read_sizes(size_t i, const std::vector<std::string>& names, size_t min_count) const {
  const std::string& text = part(i);
  Shape dims;
  size_t pos = 0;
  bool too_many = false;
  while (true) {
    int64_t v = 0;
    std::string digits;
    if (!read_number(text, pos, v, digits))
      fail(str_cat("'", text, "' is not a list of sizes like 64x32x26 (",
                   pos < text.size() ? shown(text[pos]) : std::string("nothing"), " where a size should be)"));
    if (dims.size() == names.size()) {
      too_many = true;  // said below
      break;
    }
    const std::string& name = names[dims.size()];
    if (v < 1) fail(str_cat(name, " = ", digits, " must be at least 1"));
    if (v > kMaxSize)
      fail(str_cat(name, " = ", digits, " is larger than ", kMaxSize, " (the largest size the kernels take)"));
    dims.push_back(v);
    if (pos == text.size()) break;
    if (text[pos] != 'x')
      fail(str_cat("'", text, "' is not a list of sizes like 64x32x26 (", shown(text[pos]), " after '",
                   text.substr(0, pos), "')"));
    ++pos;
  }
  if (dims.size() < min_count || too_many) {
    std::string list;
    for (size_t k = 0; k < names.size() && k < 6; ++k) list += (k ? " x " : "") + names[k];
    if (names.size() > 6) list += " x ...";
    const std::string wanted =
        min_count == names.size() ? std::to_string(min_count) : str_cat(min_count, " to ", names.size());
    const std::string got = too_many ? str_cat("more than ", names.size()) : std::to_string(dims.size());
    fail(str_cat("'", text, "' has ", got, " size(s); expected ", wanted, " (", list, ")"));
  }
  return dims;
}

void SpecReader::once(const std::string& name) {
  if (std::find(given_.begin(), given_.end(), name) != given_.end()) fail(str_cat("option '", name, "' is given twice"));
  given_.push_back(name);
}

bool SpecReader::word(size_t i, const std::string& w) {
  if (part(i) != w) return false;
  once(w);
  return true;
}

std::vector<LetterOption> SpecReader::options(size_t i, const std::string& allowed, bool two_axes) {
  const std::string& text = part(i);
  const std::string example = join(allowed, ", ", [&](char c) {
    return std::string(1, c) + (two_axes ? "2 or " + std::string(1, c) + "2x1" : "2");
  });
  std::vector<LetterOption> out;
  size_t pos = 0;
  while (pos < text.size()) {
    LetterOption o;
    const size_t start = pos;
    o.letter = text[pos++];
    if (!is_letter(o.letter) || allowed.find(o.letter) == std::string::npos)
      fail(str_cat("unexpected ", shown(o.letter), " in '", text, "' (options here: ", example, ")"));
    std::string digits;
    if (!read_number(text, pos, o.first, digits))
      fail(str_cat("option '", o.letter, "' in '", text, "' needs a number (", example, ")"));
    o.second = o.first;
    if (pos < text.size() && text[pos] == 'x') {
      if (!two_axes) fail(str_cat("option '", o.letter, "' takes one number, not '", text.substr(start), "'"));
      ++pos;
      if (!read_number(text, pos, o.second, digits))
        fail(str_cat("option '", text.substr(start, pos - start), "' in '", text, "' needs a number after 'x'"));
    }
    o.text = text.substr(start, pos - start);
    if (o.first > kMaxSize || o.second > kMaxSize)
      fail(str_cat("'", o.text, "' is larger than ", kMaxSize, " (the largest value the kernels take)"));
    once(std::string(1, o.letter));
    out.push_back(o);
  }
  return out;
}

void SpecReader::at_least(const LetterOption& o, const std::string& meaning, int64_t min) const {
  if (o.first < min || o.second < min) fail(str_cat(meaning, " '", o.text, "' must be at least ", min));
}

int64_t SpecReader::product(int64_t a, int64_t b, const std::string& what) const {
  if (a != 0 && b > kMaxCaseNumel / a)
    fail(str_cat(what, " has more than ", kMaxCaseNumel, " (2^58) elements"));
  return a * b;
}

int64_t SpecReader::numel(const Shape& shape, const std::string& what) const {
  int64_t n = 1;
  for (int64_t s : shape) n = product(n, s, str_cat(what, " ", shape_str(shape)));
  return n;
}

void SpecReader::fail(const std::string& why) const {
  throw Error(str_cat("bench --shape ", printable(key_ + ":" + spec_, 120), ": ", printable(why, 400), " (syntax ", key_, ":",
                      syntax_, ")"));
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
