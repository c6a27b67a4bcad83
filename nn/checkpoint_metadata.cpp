// nn/checkpoint_metadata.cpp — strict reading of checkpoint metadata values (nn/checkpoint_metadata.h).
#include "nn/checkpoint_metadata.h"

#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "core/printable.h"

namespace minidl {

std::optional<int64_t> parse_whole_number(const std::string& text) {
  const bool negative = !text.empty() && text[0] == '-';
  const size_t first = negative ? 1 : 0;
  if (text.size() == first || text.size() - first > 18) return std::nullopt;  // 18 digits cannot overflow
  int64_t v = 0;
  for (size_t i = first; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    v = v * 10 + (text[i] - '0');
  }
  return negative ? -v : v;
}

const std::string& metadata_text(const std::map<std::string, std::string>& metadata, const std::string& key,
                                 const std::string& path) {
  auto it = metadata.find(key);
  MINIDL_CHECK(it != metadata.end(), "checkpoint '", path, "' has no '", key, "' in its metadata");
  return it->second;
}

namespace {
// A value quoted in a message: one printable line of at most 43 characters (core/printable.h).
std::string quoted(const std::string& value) { return "'" + shown_value(value) + "'"; }
}  // namespace

int64_t metadata_int(const std::map<std::string, std::string>& metadata, const std::string& key, int64_t min,
                     int64_t max, const std::string& path) {
  const std::string& text = metadata_text(metadata, key, path);
  const std::optional<int64_t> v = parse_whole_number(text);
  MINIDL_CHECK(v.has_value(), "checkpoint '", path, "': metadata ", key, " = ", quoted(text), " is not a whole number");
  MINIDL_CHECK(*v >= min && *v <= max, "checkpoint '", path, "': metadata ", key, " = ", *v, " is outside ", min, "..",
               max);
  return *v;
}

double metadata_real(const std::map<std::string, std::string>& metadata, const std::string& key, double min,
                     double max, const std::string& path) {
  const std::string& text = metadata_text(metadata, key, path);
  // strtod also reads "inf", "nan", hex and leading spaces: only plain decimal text is let through to it.
  const bool plain = !text.empty() && text.size() <= 64 &&
                     text.find_first_not_of("0123456789.-eE") == std::string::npos;
  char* end = nullptr;
  const double v = plain ? std::strtod(text.c_str(), &end) : 0;
  MINIDL_CHECK(plain && end == text.c_str() + text.size() && std::isfinite(v), "checkpoint '", path, "': metadata ",
               key, " = ", quoted(text), " is not a number");
  MINIDL_CHECK(v >= min && v <= max, "checkpoint '", path, "': metadata ", key, " = ", v, " is outside ", min, "..",
               max);
  return v;
}

}  // namespace minidl
