// examples/flags.h — flag checks shared by the example programs (mnist, captcha), on top of CLI11. Each
// failing check is reported by CLI11 as "<flag>: <message>" and the program exits with status 2.
#pragma once
#include <CLI/CLI.hpp>
#include <cmath>
#include <exception>
#include <string>

#include "core/error.h"
#include "core/precision.h"

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

// A flag check for learning rates and other scales: a finite number above zero ("inf" and "nan" parse
// as numbers, and an infinite learning rate only fails, as NaN, after the first step).
inline CLI::Validator finite_positive() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          const double v = std::stod(text);
          if (std::isfinite(v) && v > 0) return "";
        } catch (const std::exception&) {
          return "'" + text + "' is not a number";
        }
        return "must be a finite positive number, got " + text;
      },
      "");
}

// A flag check for probabilities such as dropout: lo <= value < hi ("must be in [0, 1), got 1.5").
inline CLI::Validator at_least_and_below(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        try {
          const double v = std::stod(text);
          if (v >= lo && v < hi) return "";
        } catch (const std::exception&) {
          return "'" + text + "' is not a number";
        }
        return minidl::str_cat("must be in [", lo, ", ", hi, "), got ", text);
      },
      "");
}

// A flag check for targets such as an accuracy: 0 < value <= 1 ("must be a fraction in (0, 1], e.g.
// 0.99, got 99": a percentage is the likely mistake).
inline CLI::Validator fraction() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          const double v = std::stod(text);
          if (v > 0 && v <= 1) return "";
        } catch (const std::exception&) {
          return "'" + text + "' is not a number";
        }
        return "must be a fraction in (0, 1], e.g. 0.99, got " + text;
      },
      "");
}

// A flag check for file names: `--save ""` would otherwise mean "no file" and silently save nothing.
inline CLI::Validator non_empty() {
  return CLI::Validator(
      [](std::string& text) -> std::string { return text.empty() ? "needs a file name, got an empty one" : ""; },
      "");
}

// --precision fp32|tf32|bf16 (core/precision.h), bound to `precision`. Its value before parsing is the
// program's default: "" lets MINIDL_TF32 decide (fp32 unless MINIDL_TF32=1).
inline void add_precision_flag(CLI::App* cmd, std::string& precision) {
  const std::string default_text =
      precision.empty() ? "fp32 unless MINIDL_TF32=1" : precision + " for this command, whatever MINIDL_TF32 says";
  cmd->add_option("--precision", precision,
                  "float32 products on a GPU: fp32 (strict), tf32 (TF32 tensor cores in cuBLAS, cuDNN and the "
                  "tf32_* kernels: faster, about 10 mantissa bits per product) or bf16 (matmuls, convolutions and "
                  "the RNN on BF16 tensor cores, 8 significant bits per operand, or TF32 for a shape where that "
                  "is faster; weights, activations and losses stay float32); default " + default_text)
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}));
}

// Applies a --precision value (before the first GPU operation); "" leaves the environment's choice.
inline void apply_precision_flag(const std::string& precision) {
  if (!precision.empty()) minidl::set_float32_precision(minidl::parse_precision(precision));
}

}  // namespace examples
