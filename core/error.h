// core/error.h — the one exception type of minidl and the check macro that builds its message.
//
// Every error names the op (or subsystem) and the shapes/devices involved, e.g.
//   matmul: shapes [64,9216] and [128,9216] do not align; did you mean to transpose the second?
#pragma once
#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace minidl {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// The numbers of a failed allocation, as far as the allocator knows them (0 when it does not).
struct OutOfMemoryInfo {
  std::string device;      // "cuda:0", "cpu"
  size_t requested = 0;    // bytes asked for
  size_t device_free = 0;  // bytes the device reported free after the failure
  size_t in_use = 0;       // bytes the allocator had handed out
  size_t cached = 0;       // bytes it held for reuse when the request came (released before the retry)
  size_t limit = 0;        // its cap on in use + cached bytes; 0 = none
};

// Thrown when a device allocator cannot satisfy a request (typed so callers can catch it, free memory
// and carry on: a failed request leaves the allocator as it was, minus its cache).
class OutOfMemoryError : public Error {
 public:
  explicit OutOfMemoryError(const std::string& what, OutOfMemoryInfo info = {})
      : Error(what), info_(std::move(info)) {}
  const OutOfMemoryInfo& info() const { return info_; }

 private:
  OutOfMemoryInfo info_;
};

namespace detail {
inline void append_all(std::ostringstream&) {}
template <class T, class... Rest>
void append_all(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  append_all(os, rest...);
}
}  // namespace detail

// Concatenates its arguments with operator<< into one string.
template <class... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  detail::append_all(os, args...);
  return os.str();
}

// "[2,3,4]"
inline std::string shape_str(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  os << ']';
  return os.str();
}

}  // namespace minidl

// MINIDL_CHECK(cond, "op: message ", value, ...) throws minidl::Error when cond is false.
#define MINIDL_CHECK(cond, ...)                                      \
  do {                                                               \
    if (!(cond)) throw ::minidl::Error(::minidl::str_cat(__VA_ARGS__)); \
  } while (0)
