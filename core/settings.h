// core/settings.h — every MINIDL_* environment variable, declared once.
//
// A setting is an environment variable that changes what minidl computes or how (which kernel runs,
// whether outputs are checked, how much GPU memory to use, ...). Each one is declared once, in the table
// of core/settings.cpp, with its type, its default, the values it accepts and what it means, and every
// part of minidl reads it through that declaration:
//
//     if (settings::check_numerics.read()) ...          // MINIDL_CHECK_NUMERICS, a yes/no switch
//     const int64_t level = settings::log_dispatch.read();  // MINIDL_LOG_DISPATCH, an integer 0..2
//     if (profile_mode() == ProfileMode::shapes) ...    // MINIDL_PROFILE, a switch or the word "shapes"
//
// Parsing is strict and the same for every variable: the whole string must be a value of the setting's
// type ("5abc" is not 5, "inf" and "nan" are not numbers), within its range; a switch takes 1/0, yes/no,
// on/off or true/false (any case). An unset or empty variable means the default. Anything else throws an
// Error that names the variable, quotes the value and says what it accepts. Programs call
// check_environment() (core/backend.h), which checks every setting before any work, so a typo fails at
// once instead of being ignored; `minidl info` prints every setting with its value (INVALID and the reason
// for a bad one), and the README's list of variables is checked against this table by a test.
//
// Reads are not cached here: a setting is read where it is used, and the few that are read once per
// process (the dispatch log, the profile, the `auto` file, the ReLU fusion, TF32) say so in their meaning.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace minidl {

class Setting {
 public:
  // constexpr: every setting is initialised before any code runs (no static-initialisation order).
  constexpr Setting(const char* name, const char* default_text, const char* meaning)
      : name_(name), default_text_(default_text), meaning_(meaning) {}
  Setting(const Setting&) = delete;
  Setting& operator=(const Setting&) = delete;

  const char* name() const { return name_; }
  // What an unset variable means, as text ("off", "0", "none").
  const char* default_text() const { return default_text_; }
  // One line: what the setting does.
  const char* meaning() const { return meaning_; }
  // The values it accepts, in words ("0 or 1 (also no/yes, off/on, false/true)", "an integer from 0 to 2").
  virtual std::string accepted() const = 0;

  // The variable's text; "" when it is unset or empty.
  std::string text() const;
  bool is_set() const { return !text().empty(); }
  // Throws the setting's Error when the variable is set to something it does not accept.
  void check() const;

 protected:
  ~Setting() = default;  // settings are the table's static objects, never deleted through a Setting*
  // Throws "MINIDL_X='value' ...: expected <accepted()>" (with `why` when there is more to say).
  [[noreturn]] void refuse(const std::string& value, const std::string& why = "") const;
  // Checks a non-empty value; throws through refuse().
  virtual void check_value(const std::string& value) const = 0;

 private:
  const char* name_;
  const char* default_text_;
  const char* meaning_;
};

// 1/0, yes/no, on/off, true/false (any case).
class SwitchSetting final : public Setting {
 public:
  constexpr SwitchSetting(const char* name, bool default_value, const char* meaning)
      : Setting(name, default_value ? "on" : "off", meaning), default_value_(default_value) {}
  bool read() const;
  std::string accepted() const override;

 protected:
  void check_value(const std::string& value) const override;

 private:
  bool default_value_;
};

// A whole number in [min, max], written in decimal digits (a leading '-' where min is negative).
class IntegerSetting final : public Setting {
 public:
  constexpr IntegerSetting(const char* name, int64_t default_value, int64_t min, int64_t max, const char* default_text,
                 const char* meaning)
      : Setting(name, default_text, meaning), default_value_(default_value), min_(min), max_(max) {}
  int64_t read() const;
  std::string accepted() const override;

 protected:
  void check_value(const std::string& value) const override;

 private:
  int64_t default_value_, min_, max_;
};

// A finite decimal number in [min, max] ("0.5", "64", "1e3"), in `unit`.
class NumberSetting final : public Setting {
 public:
  constexpr NumberSetting(const char* name, double default_value, double min, double max, const char* unit,
                const char* default_text, const char* meaning)
      : Setting(name, default_text, meaning), default_value_(default_value), min_(min), max_(max), unit_(unit) {}
  double read() const;
  std::string accepted() const override;

 protected:
  void check_value(const std::string& value) const override;

 private:
  double default_value_, min_, max_;
  const char* unit_;
};

// Free text with a setting-specific check (a kernel list, a memory size, a path): `check_text` throws
// minidl::Error saying what is wrong (the setting adds its name and value), or is null (any text).
class TextSetting final : public Setting {
 public:
  using Check = void (*)(const std::string& value);
  constexpr TextSetting(const char* name, const char* accepted, const char* default_text, const char* meaning,
              Check check_text = nullptr)
      : Setting(name, default_text, meaning), accepted_(accepted), check_text_(check_text) {}
  // The checked text; "" when unset.
  std::string read() const;
  std::string accepted() const override { return accepted_; }

 protected:
  void check_value(const std::string& value) const override;

 private:
  const char* accepted_;
  Check check_text_;
};

namespace settings {
// The table (core/settings.cpp defines each, with its default, range and meaning).
extern const TextSetting kernels;              // MINIDL_KERNELS         kernel selection, OP=NAME,...
extern const IntegerSetting log_dispatch;      // MINIDL_LOG_DISPATCH    0, 1 (each kernel once), 2 (every call)
extern const TextSetting profile;              // MINIDL_PROFILE         time every kernel call (1), and list the shapes (shapes)
extern const TextSetting profile_file;         // MINIDL_PROFILE_FILE    where MINIDL_PROFILE=shapes writes them
extern const TextSetting auto_file;            // MINIDL_AUTO_FILE       the `auto` selection's choices, kept between runs
extern const SwitchSetting check_numerics;     // MINIDL_CHECK_NUMERICS  check every kernel output for NaN/inf
extern const SwitchSetting fuse_relu;          // MINIDL_FUSE_RELU       fused bias+ReLU, batch norm+ReLU
extern const SwitchSetting tf32;               // MINIDL_TF32            TF32 tensor cores by default
extern const TextSetting cuda_memory_limit;    // MINIDL_CUDA_MEMORY_LIMIT  cap on the GPU caching allocator
extern const TextSetting v8_config;            // MINIDL_V8_CONFIG       tile of the v8_tuned SGEMM
extern const NumberSetting dist_bucket_mb;     // MINIDL_DIST_BUCKET_MB  gradient bucket size (MiB)
extern const SwitchSetting dist_overlap;       // MINIDL_DIST_OVERLAP    all-reduce during backward
extern const TextSetting nccl_library;         // MINIDL_NCCL_LIBRARY    path of libnccl.so.2
extern const TextSetting data;                 // MINIDL_DATA            folder that holds mnist/
extern const TextSetting captcha_font;         // MINIDL_CAPTCHA_FONT    TrueType font of the captchas
extern const TextSetting dist_timeout;         // MINIDL_DIST_TIMEOUT    seconds a rank waits in a collective
}  // namespace settings

// Every setting, in the order `minidl info` and the README list them.
const std::vector<const Setting*>& all_settings();

// Checks every setting; throws the first error.
void check_settings();

// "on", "2", "none set" or "INVALID: <the error> (programs refuse to start)": a setting's value as
// `minidl info` shows it.
std::string describe_setting(const Setting& setting);

// The strict number parsers the settings use, for other text of the same kind (a flag's value): the
// whole string must be a number; nullopt-style: false when it is not.
bool parse_whole_integer(const std::string& text, int64_t& value);
bool parse_finite_number(const std::string& text, double& value);

// MINIDL_PROFILE's value: off (unset, 0 and the other switch words for off), table (1, on, ...: the
// per-shape table at exit) or shapes (the table, and the shapes as `minidl bench --shape` arguments).
// Throws the setting's Error for anything else.
enum class ProfileMode { off, table, shapes };
ProfileMode profile_mode();

// MINIDL_DIST_TIMEOUT's value in seconds: 600 when unset, 0 (wait forever) for "0" or "off", else the
// number (1 to 604800, a week). Throws the setting's Error for anything else.
double dist_timeout_seconds();

}  // namespace minidl
