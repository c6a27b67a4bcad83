// tests/env_scope.h — EnvScope: sets an environment variable for a scope and restores it (or unsets it)
// at the end, for tests of settings read from the environment (MINIDL_FUSE_RELU, MINIDL_V8_CONFIG, ...).
#pragma once
#include <cstdlib>
#include <string>

namespace minidl {
namespace testing {

struct EnvScope {
  EnvScope(const char* name, const std::string& value) : name(name) {
    const char* old = std::getenv(name);
    had = old != nullptr;
    if (had) saved = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~EnvScope() {
    if (had)
      ::setenv(name, saved.c_str(), 1);
    else
      ::unsetenv(name);
  }
  EnvScope(const EnvScope&) = delete;
  EnvScope& operator=(const EnvScope&) = delete;
  const char* name;
  bool had = false;
  std::string saved;
};

}  // namespace testing
}  // namespace minidl
