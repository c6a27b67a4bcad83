// examples/flags.h — flag checks shared by the example programs (mnist, captcha), on top of CLI11. Each
// failing check is reported by CLI11 as "<flag>: <message>" and the program exits with status 2.
// Nothing here knows the programs: the `minidl` command can use the same checks for its flags.
#pragma once
#include <CLI/CLI.hpp>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "core/device.h"
#include "core/error.h"
#include "core/memory_format.h"
#include "core/precision.h"

namespace examples {

// The values a numeric flag accepts, for number_in(). Every bound is printed as a plain number in the
// message ("must be a whole number from 1 to 2147483647, got 0"), never a type's limit in 300 digits.
// NaN and the infinities are refused by every range: a flag's value is a finite number.
struct FlagRange {
  long double lo = -std::numeric_limits<long double>::infinity();
  long double hi = std::numeric_limits<long double>::infinity();
  bool lo_inclusive = true, hi_inclusive = true;
  bool integer = false;  // whole numbers only, written as digits with an optional sign ("1e3" is refused)
  std::string note;      // said after the range in the message: "a fraction, e.g. 0.99"

  // Whole numbers from lo to hi (inclusive), by default up to what the flag's type T holds: the bound
  // that keeps a value from wrapping (CLI11 reads -1 into an unsigned flag as 2^64 - 1).
  template <typename T>
  static FlagRange whole(T lo, T hi = std::numeric_limits<T>::max()) {
    static_assert(std::is_integral<T>::value, "FlagRange::whole is for integer flags");
    FlagRange r;
    r.lo = static_cast<long double>(lo);
    r.hi = static_cast<long double>(hi);
    r.integer = true;
    return r;
  }
  // Finite real numbers from lo to hi (inclusive; either may be infinite: no bound on that side).
  static FlagRange real(long double lo, long double hi = std::numeric_limits<long double>::infinity()) {
    FlagRange r;
    r.lo = lo;
    r.hi = hi;
    return r;
  }
  // Finite real numbers above lo (a learning rate: above 0).
  static FlagRange above(long double lo) {
    FlagRange r = real(lo);
    r.lo_inclusive = false;
    return r;
  }
  FlagRange& excluding_lo() { lo_inclusive = false; return *this; }
  FlagRange& excluding_hi() { hi_inclusive = false; return *this; }
  FlagRange& with_note(std::string text) { note = std::move(text); return *this; }

  // "a whole number from 1 to 2147483647", "a finite number above 0", "a number in [0, 1)".
  std::string describe() const {
    const bool has_lo = std::isfinite(lo), has_hi = std::isfinite(hi);
    std::string what;
    if (integer) {
      what = "a whole number";
      if (has_lo && has_hi) what += " from " + shown(lo) + " to " + shown(hi);
      else if (has_lo) what += " of at least " + shown(lo);
      else if (has_hi) what += " of at most " + shown(hi);
    } else if (has_lo && has_hi) {
      what = "a number in " + std::string(lo_inclusive ? "[" : "(") + shown(lo) + ", " + shown(hi) +
             (hi_inclusive ? "]" : ")");
    } else if (has_lo) {
      what = "a finite number " + std::string(lo_inclusive ? "of at least " : "above ") + shown(lo);
    } else if (has_hi) {
      what = "a finite number " + std::string(hi_inclusive ? "of at most " : "below ") + shown(hi);
    } else {
      what = "a finite number";
    }
    return note.empty() ? what : what + " (" + note + ")";
  }

  // "" when `text` is a number in the range, else why not ("must be ..., got <text>").
  std::string check(const std::string& text) const {
    long double v = 0;
    if (!parse(text, v)) return "'" + text + "' is not " + (integer ? "a whole number" : "a number");
    const bool above_lo = lo_inclusive ? v >= lo : v > lo;
    const bool below_hi = hi_inclusive ? v <= hi : v < hi;
    // Finite as a double too: 1e999 is a long double, but a double flag would hold infinity.
    if (std::isfinite(static_cast<double>(v)) && above_lo && below_hi) return "";
    return "must be " + describe() + ", got " + text;
  }

 private:
  // A whole number as digits, exactly (long double holds every 64-bit integer); a real number as
  // strtold reads it, the whole text and nothing else ("nan" and "inf" parse: check() refuses them).
  bool parse(const std::string& text, long double& value) const {
    if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
    if (integer) {
      const size_t digits = text[0] == '-' || text[0] == '+' ? 1 : 0;
      if (digits == text.size() || text.find_first_not_of("0123456789", digits) != std::string::npos) return false;
    }
    char* end = nullptr;
    value = std::strtold(text.c_str(), &end);
    return end == text.c_str() + text.size();
  }
  // A bound as a plain number: digits for a whole number, else the shortest of %Lg's forms.
  static std::string shown(long double x) {
    char buf[64];
    if (x == std::floor(x) && std::fabs(x) < 1e20L)
      std::snprintf(buf, sizeof buf, "%.0Lf", x);
    else
      std::snprintf(buf, sizeof buf, "%Lg", x);
    return buf;
  }
};

// The one check of every numeric flag of the programs: a finite number in `range`, else the message
// CLI11 prints as "<flag>: <message>" (exit status 2): "--epochs: must be a whole number from 1 to
// 2147483647, got 0", "--lr: must be a finite number above 0, got inf", "'fast' is not a number".
inline CLI::Validator number_in(FlagRange range) {
  return CLI::Validator([range](std::string& text) { return range.check(text); }, "");
}

// A flag check for file names: `--save ""` would otherwise mean "no file" and silently save nothing.
inline CLI::Validator non_empty() {
  return CLI::Validator(
      [](std::string& text) -> std::string { return text.empty() ? "needs a file name, got an empty one" : ""; },
      "");
}

// The line a program prints for a command-line error (after "<program>: "). CLI11's words are kept,
// except where they do not say what is wrong: a flag given twice ("--epochs: At Most 1 required but
// received 2") becomes "--epochs was given twice: give it once".
inline std::string parse_error_message(const CLI::ParseError& e) {
  const std::string what = e.what();
  const std::string repeated = ": At Most 1 required but received ";
  const size_t at = what.find(repeated);
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) == nullptr || at == std::string::npos) return what;
  const std::string count = what.substr(at + repeated.size());
  return what.substr(0, at) + " was given " + (count == "2" ? std::string("twice") : count + " times") +
         ": give it once";
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
                  "is faster; weights, activations and losses stay float32 unless the captcha model's --activations "
                  "bf16 asks); default " + default_text)
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}));
}

// Applies a --precision value (before the first GPU operation); "" leaves the environment's choice.
inline void apply_precision_flag(const std::string& precision) {
  if (!precision.empty()) minidl::set_float32_precision(minidl::parse_precision(precision));
}

// --memory-format's default on a CUDA device: the format measured faster there for the program
// (docs/results/README.md, "Issue 26, round 2"; the constants below), so a measurement that says otherwise
// flips it here.
//   nchw                  MNIST: its convolutions are minidl's implicit-GEMM kernels, which read NCHW;
//   nhwc_on_tensor_cores  the captcha model: channels-last when float32 convolutions may use tensor cores
//                         (--precision tf32 or bf16), where cuDNN's NHWC engines are its fastest; NCHW under
//                         strict FP32, where its NHWC engines are slow.
// The CPU's default is always nchw: its convolution and pooling kernels serve NCHW only (core/memory_format.h).
enum class GpuFormatDefault { nchw, nhwc_on_tensor_cores };
constexpr GpuFormatDefault kMnistGpuFormats = GpuFormatDefault::nchw;
constexpr GpuFormatDefault kCaptchaGpuFormats = GpuFormatDefault::nhwc_on_tensor_cores;

inline const char* gpu_format_default_text(GpuFormatDefault rule) {
  return rule == GpuFormatDefault::nchw ? "nchw on a GPU" : "nhwc on a GPU under --precision tf32 or bf16, else nchw";
}

// --memory-format nchw|nhwc and its alias --channels-last, bound to `format` ("" until given: the
// device's default, resolve_memory_format).
inline void add_memory_format_flag(CLI::App* cmd, std::string& format, GpuFormatDefault rule) {
  CLI::Option* opt = cmd->add_option(
      "--memory-format", format,
      std::string("activations between layers in NCHW or channels-last NHWC memory (core/memory_format.h; "
                  "checkpoints do not depend on it); default ") + gpu_format_default_text(rule) + ", nchw on the CPU");
  opt->check(CLI::IsMember({"nchw", "nhwc"}));
  cmd->add_flag_callback("--channels-last", [&format] { format = "nhwc"; }, "the same as --memory-format nhwc")
      ->excludes(opt);
}

// The memory format a run uses on `device`: the flag's value, or the device's default (after the
// precision is applied: apply_precision_flag).
inline minidl::MemoryFormat resolve_memory_format(const std::string& flag, const minidl::Device& device,
                                                  GpuFormatDefault rule) {
  if (!flag.empty()) return minidl::parse_memory_format(flag);
  const bool tensor_cores = minidl::float32_precision() != minidl::Precision::fp32;
  const bool nhwc = device.is_cuda() && rule == GpuFormatDefault::nhwc_on_tensor_cores && tensor_cores;
  return nhwc ? minidl::MemoryFormat::channels_last : minidl::MemoryFormat::contiguous;
}

// The line a program prints about it: "memory format nhwc", and on the CPU what channels-last costs there.
inline std::string memory_format_text(minidl::MemoryFormat format, const minidl::Device& device) {
  std::string text = std::string("memory format ") + minidl::memory_format_name(format);
  if (format == minidl::MemoryFormat::channels_last && !device.is_cuda())
    text += " (the CPU's convolutions and pooling run on NCHW copies of their inputs and outputs; batch norm, "
            "bias + ReLU, dropout and elementwise ops read NHWC as it is)";
  return text;
}

// --activations fp32|bf16 (the captcha model): the dtype of the CNN's activations between its layers,
// bound to `dtype` ("" until given: fp32). bf16 (meant for --precision bf16 on a GPU) halves the memory
// traffic of batch norm, ReLU and pooling, as PyTorch's autocast keeps those activations. It is not the
// default under --precision bf16 yet: its CUDA kernels compile but have not run on a GPU
// (docs/results/README.md, "Issue 26, round 13"); kActivationsDefault changes once
// `scripts/h200-run.sh bf16acts26` has measured it faster. On the CPU a bf16 run widens every op's inputs
// (the CPU computes float32): correct, and slower.
constexpr const char* kActivationsDefault = "fp32";
inline void add_activations_flag(CLI::App* cmd, std::string& dtype) {
  cmd->add_option("--activations", dtype,
                  std::string("dtype of the CNN's activations between layers: fp32 or bf16 (parameters, batch-norm "
                              "statistics and losses stay float32; bf16 is meant for --precision bf16 on a GPU); "
                              "default ") + kActivationsDefault)
      ->check(CLI::IsMember({"fp32", "bf16"}));
}

// The activation dtype a run uses: the flag's value, or kActivationsDefault.
inline minidl::DType resolve_activations(const std::string& flag) {
  const std::string value = flag.empty() ? kActivationsDefault : flag;
  return value == "bf16" ? minidl::DType::bfloat16 : minidl::DType::float32;
}

// The line a program prints about it: "activations bf16", with what that costs on the CPU.
inline std::string activations_text(minidl::DType dtype, const minidl::Device& device) {
  std::string text = std::string("activations ") + (dtype == minidl::DType::bfloat16 ? "bf16" : "fp32");
  if (dtype == minidl::DType::bfloat16 && !device.is_cuda())
    text += " (the CPU's kernels compute float32: each op widens its bfloat16 inputs and rounds its outputs)";
  return text;
}

}  // namespace examples
