// core/settings.cpp — the table of MINIDL_* environment variables and their one strict parser
// (core/settings.h).
#include "core/settings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/backend.h"
#include "core/error.h"
#include "core/printable.h"

namespace minidl {

// ------------------------------------------------------------------ the strict parsers

bool parse_whole_integer(const std::string& text, int64_t& value) {
  if (text.empty()) return false;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (*first == '+') ++first;  // from_chars takes '-' but not '+'
  int64_t parsed = 0;
  const auto [end, error] = std::from_chars(first, last, parsed);
  if (error != std::errc() || end != last || first == last) return false;
  value = parsed;
  return true;
}

bool parse_finite_number(const std::string& text, double& value) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return false;
  // strtod also reads "inf", "nan" and hexadecimal floats: only decimal digits, a sign, a point and an
  // exponent are numbers here.
  for (const char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '+' && c != 'e' && c != 'E')
      return false;
  char* end = nullptr;
  const double parsed = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(parsed)) return false;
  value = parsed;
  return true;
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A number as a person writes it: 0.5, 64, 1024, 1e+06.
std::string plain(double x) { return str_cat(x); }

}  // namespace

// ------------------------------------------------------------------ Setting

std::string Setting::text() const {
  const char* v = std::getenv(name_);
  return v ? std::string(v) : std::string();
}

void Setting::check() const {
  const std::string value = text();
  if (!value.empty()) check_value(value);
}

void Setting::refuse(const std::string& value, const std::string& why) const {
  throw Error(str_cat(name_, "='", shown_value(value), "' is not valid", why.empty() ? "" : ": ", why,
                      "; expected ", accepted(), " (unset: ", default_text_, ")"));
}

// ------------------------------------------------------------------ the typed settings

std::string SwitchSetting::accepted() const { return "1 or 0 (also yes/no, on/off, true/false)"; }

void SwitchSetting::check_value(const std::string& value) const {
  const std::string v = lower(value);
  if (v == "1" || v == "yes" || v == "on" || v == "true" || v == "0" || v == "no" || v == "off" || v == "false")
    return;
  refuse(value);
}

bool SwitchSetting::read() const {
  const std::string value = text();
  if (value.empty()) return default_value_;
  check_value(value);
  const std::string v = lower(value);
  return v == "1" || v == "yes" || v == "on" || v == "true";
}

std::string IntegerSetting::accepted() const { return str_cat("a whole number from ", min_, " to ", max_); }

void IntegerSetting::check_value(const std::string& value) const {
  int64_t parsed = 0;
  if (!parse_whole_integer(value, parsed)) refuse(value, "not a whole number");
  if (parsed < min_ || parsed > max_) refuse(value, "out of range");
}

int64_t IntegerSetting::read() const {
  const std::string value = text();
  if (value.empty()) return default_value_;
  check_value(value);
  int64_t parsed = 0;
  parse_whole_integer(value, parsed);
  return parsed;
}

std::string NumberSetting::accepted() const {
  return str_cat("a number from ", plain(min_), " to ", plain(max_), " (", unit_, ")");
}

void NumberSetting::check_value(const std::string& value) const {
  double parsed = 0;
  if (!parse_finite_number(value, parsed)) refuse(value, "not a finite decimal number");
  if (parsed < min_ || parsed > max_) refuse(value, "out of range");
}

double NumberSetting::read() const {
  const std::string value = text();
  if (value.empty()) return default_value_;
  check_value(value);
  double parsed = 0;
  parse_finite_number(value, parsed);
  return parsed;
}

void TextSetting::check_value(const std::string& value) const {
  if (check_text_ == nullptr) return;
  try {
    check_text_(value);
  } catch (const Error& e) {
    // A check whose message names the variable already (parse_cuda_memory_limit's) says it all.
    if (std::string(e.what()).rfind(name(), 0) == 0) throw;
    refuse(value, e.what());
  }
}

std::string TextSetting::read() const {
  const std::string value = text();
  if (!value.empty()) check_value(value);
  return value;
}

// ------------------------------------------------------------------ checks of the text settings

namespace {

// MINIDL_KERNELS: OP=NAME items separated by commas (NAME may be auto, OP may be * with auto). Whether OP and NAME exist is checked against the
// dispatch table when it applies the selection (core/registry_init.cpp), naming the kernels there.
void check_kernel_spec(const std::string& spec) {
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string item = spec.substr(start, comma - start);
    const size_t eq = item.find('=');
    MINIDL_CHECK(!item.empty(), "an empty item between commas");
    MINIDL_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < item.size(), "'", shown_value(item),
                 "' is not of the form OP=NAME (e.g. matmul=naive)");
    MINIDL_CHECK(item.substr(0, eq) != "*" || item.substr(eq + 1) == "auto", "'", shown_value(item),
                 "': every op ('*') can only be given auto");
    start = comma + 1;
  }
}

// Percentages are checked against a nominal device size here; the real one is used when a GPU first
// allocates (cuda/backend.cu).
void check_memory_limit(const std::string& text) {
  constexpr size_t kNominalDeviceBytes = size_t(1) << 40;
  parse_cuda_memory_limit(text, kNominalDeviceBytes);
}

}  // namespace

// ------------------------------------------------------------------ the table

namespace settings {

const TextSetting kernels("MINIDL_KERNELS",
                          "OP=NAME items separated by commas, e.g. matmul=naive,conv2d=im2col_blas; NAME auto times "
                          "the kernels per call shape; *=auto for every op",
                          "none",
                          "kernels tried first for those ops, on every device that has them (as --kernel OP=NAME); "
                          "auto: the fastest per call shape",
                          check_kernel_spec);
const IntegerSetting log_dispatch("MINIDL_LOG_DISPATCH", 0, 0, 2, "0",
                                  "log which kernel served each key: 1 once per (key, device, kernel), 2 every "
                                  "call and every decline, with its shape (read once per process)");
// MINIDL_PROFILE: a switch, or "shapes" (the table and the shapes, core/kernel_profile.h).
void check_profile(const std::string& value) {
  const std::string v = lower(value);
  for (const char* word : {"1", "yes", "on", "true", "0", "no", "off", "false", "shapes"})
    if (v == word) return;
  throw Error("not a switch word or 'shapes'");
}
const TextSetting profile("MINIDL_PROFILE", "1 or 0 (also yes/no, on/off, true/false), or shapes", "off",
                          "time every kernel call (a GPU is synchronised after each) and print a table at exit, a "
                          "row per key, kernel and call shape; shapes: also list the shapes as `minidl bench "
                          "--shape` arguments (read once per process)",
                          check_profile);
const TextSetting profile_file("MINIDL_PROFILE_FILE", "a path", "stderr",
                               "where MINIDL_PROFILE=shapes writes the run's shapes, one `--shape KEY:SPEC` a line");
const TextSetting auto_file("MINIDL_AUTO_FILE", "a path", "none",
                            "the `auto` kernel selection's choices (key device shape kernel): read at the first "
                            "`auto` call, written at exit, so the next run times only new shapes");
const SwitchSetting check_numerics("MINIDL_CHECK_NUMERICS", false,
                                   "check every output of every kernel call for NaN and infinity and stop at the "
                                   "first, naming the kernel (slow: for debugging)");
const SwitchSetting fuse_relu("MINIDL_FUSE_RELU", true,
                              "run a Linear or Conv2d with a bias, or a batch norm, followed by a ReLU as one fused "
                              "kernel (read once per process)");
const SwitchSetting tf32("MINIDL_TF32", false,
                         "float32 products on TF32 tensor cores when a program gives no --precision (read once per "
                         "process)");
const TextSetting cuda_memory_limit("MINIDL_CUDA_MEMORY_LIMIT",
                                    "a size in bytes with an optional K, M, G or T suffix (binary), or a "
                                    "percentage of the device's memory, e.g. 6G or 50%",
                                    "none", "cap on the memory the GPU caching allocator holds, per device",
                                    check_memory_limit);
const TextSetting v8_config("MINIDL_V8_CONFIG",
                            "an index or a name of a tile configuration of cuda/matmul_v8_tuned.cu (checked at the "
                            "kernel's first call, which lists them)",
                            "its default tile", "the tile of the v8_tuned SGEMM (the GEMM ladder's tuning knob)");
const NumberSetting dist_bucket_mb("MINIDL_DIST_BUCKET_MB", 4, 0.001, 65536, "MiB", "4",
                                   "--distributed: the size of the gradient buckets all-reduced during backward");
const SwitchSetting dist_overlap("MINIDL_DIST_OVERLAP", true,
                                 "--distributed: start each bucket's all-reduce during backward (off: after it)");
const TextSetting nccl_library("MINIDL_NCCL_LIBRARY", "a path to libnccl.so.2", "libnccl.so.2 from the loader's path",
                               "the NCCL library --distributed loads for GPUs");
const TextSetting data("MINIDL_DATA", "a folder", "none",
                       "a folder whose mnist/ subfolder holds the four MNIST files (searched before data/mnist)");
// "off", 0, or a number of seconds from 1 to a week: below 1 s a healthy step could time out.
void check_dist_timeout(const std::string& value) {
  if (value == "off") return;
  double seconds = 0;
  if (!parse_finite_number(value, seconds)) throw Error("not a number of seconds");
  if (seconds != 0 && (seconds < 1 || seconds > 604800)) throw Error("out of range");
}
const TextSetting dist_timeout("MINIDL_DIST_TIMEOUT", "0 or off (wait forever), or a number of seconds from 1 to 604800",
                               "600", "--distributed: how long a rank waits in a collective before it ends the job, "
                               "naming the silent ranks (mpi backend and the process layer)",
                               check_dist_timeout);
const TextSetting captcha_font("MINIDL_CAPTCHA_FONT", "a path to a TrueType font", "DejaVu Sans from fonts-dejavu-core",
                               "the font the captcha generator draws with");

}  // namespace settings

const std::vector<const Setting*>& all_settings() {
  static const std::vector<const Setting*> table = {
      &settings::kernels,     &settings::log_dispatch,      &settings::profile,        &settings::profile_file,
      &settings::auto_file,   &settings::check_numerics,
      &settings::fuse_relu,   &settings::tf32,              &settings::cuda_memory_limit, &settings::v8_config,
      &settings::dist_bucket_mb, &settings::dist_overlap,   &settings::nccl_library,   &settings::data,
      &settings::dist_timeout, &settings::captcha_font,
  };
  return table;
}

void check_settings() {
  for (const Setting* s : all_settings()) s->check();
}

ProfileMode profile_mode() {
  const std::string value = lower(settings::profile.read());  // checked
  if (value == "shapes") return ProfileMode::shapes;
  if (value.empty() || value == "0" || value == "no" || value == "off" || value == "false") return ProfileMode::off;
  return ProfileMode::table;
}

double dist_timeout_seconds() {
  const std::string value = settings::dist_timeout.read();  // checked
  if (value.empty()) return 600;
  if (value == "off") return 0;
  return std::strtod(value.c_str(), nullptr);
}

std::string describe_setting(const Setting& setting) {
  try {
    setting.check();
  } catch (const Error& e) {
    return str_cat("INVALID: ", e.what(), " (programs refuse to start)");
  }
  return setting.is_set() ? shown_value(setting.text()) : str_cat("unset (", setting.default_text(), ")");
}

}  // namespace minidl
