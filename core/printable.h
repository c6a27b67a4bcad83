// core/printable.h — how a value read from a file or given by a user is shown inside an error message.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace minidl {

// `text` as at most `max_chars` characters on one printable line: every byte outside ' '..'~' (a
// newline, a control character, a byte of UTF-8) becomes '?', and a longer text is cut to
// max_chars - 3 characters followed by "...". A damaged or hostile file then cannot flood, split or
// garble the message that names it. max_chars must be at least 4.
//   shown_value("12\n34")            -> "12?34"
//   shown_value(std::string(50, 'x')) -> 40 x's and "..."
inline std::string shown_value(std::string_view text, size_t max_chars = 43) {
  const bool cut = text.size() > max_chars;
  std::string out(cut ? text.substr(0, max_chars - 3) : text);
  for (char& c : out)
    if (c < ' ' || c > '~') c = '?';
  return cut ? out + "..." : out;
}

}  // namespace minidl
