// core/precision.cpp — the float32 precision switch (core/precision.h).
#include "core/precision.h"

#include <atomic>

#include "core/error.h"
#include "core/settings.h"

namespace minidl {

namespace {

// -1: not set by the API (the environment decides), else a Precision.
std::atomic<int> g_precision{-1};

Precision from_environment() {
  static const Precision p = settings::tf32.read() ? Precision::tf32 : Precision::fp32;  // MINIDL_TF32
  return p;
}

}  // namespace

Precision float32_precision() {
  const int set = g_precision.load(std::memory_order_relaxed);
  return set < 0 ? from_environment() : static_cast<Precision>(set);
}

void set_float32_precision(Precision p) { g_precision.store(static_cast<int>(p), std::memory_order_relaxed); }

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::fp32;
  if (name == "tf32") return Precision::tf32;
  if (name == "bf16") return Precision::bf16;
  throw Error(str_cat("precision '", name,
                      "': expected fp32 (strict float32), tf32 (TF32 tensor cores) or bf16 (BF16 tensor cores, "
                      "float32 everywhere else)"));
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::bf16: return "bf16";
  }
  return "?";
}

}  // namespace minidl
