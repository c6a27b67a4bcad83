// core/strings.h — join: a list's items as text with a separator between them, the one way minidl writes
// "a, b, c" into messages, listings and help (join({"a", "b", "c"}, ", ") == "a, b, c").
#pragma once
#include <string>

namespace minidl {

// The items, each turned into text by show, with separator between two neighbours (none before the first
// or after the last; an empty list gives "").
template <class Range, class Show>
std::string join(const Range& items, const std::string& separator, Show show) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += separator;
    out += show(item);
    first = false;
  }
  return out;
}

// The items, already text (std::string or const char*), with separator between two neighbours.
template <class Range>
std::string join(const Range& items, const std::string& separator) {
  return join(items, separator, [](const auto& item) -> std::string { return item; });
}

}  // namespace minidl
