// examples/flags.h — flag checks shared by the example programs (mnist, captcha), on top of CLI11.
#pragma once
#include <CLI/CLI.hpp>
#include <exception>
#include <string>

#include "core/error.h"

namespace examples {

// A flag check with a plain message ("must be at least 1, got 0") instead of CLI11's numeric range dump.
inline CLI::Validator at_least(double min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        try {
          if (std::stod(text) >= min) return "";
        } catch (const std::exception&) {
          return "'" + text + "' is not a number";
        }
        return minidl::str_cat("must be at least ", min, ", got ", text);
      },
      "");
}

// A flag check for numbers above zero ("must be positive, got 0").
inline CLI::Validator positive() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          if (std::stod(text) > 0) return "";
        } catch (const std::exception&) {
          return "'" + text + "' is not a number";
        }
        return "must be positive, got " + text;
      },
      "");
}

}  // namespace examples
