// tests/test_settings.cpp — the table of MINIDL_* variables (core/settings.h): one strict parser for
// every type, errors that name the variable, `minidl info` and the README listing every setting.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "core/backend.h"
#include "core/settings.h"
#include "dist/data_parallel.h"
#include "tests/env_scope.h"
#include "tools/settings.h"

using namespace minidl;
using minidl::testing::EnvScope;

TEST_CASE("settings: switches take yes/no words and refuse anything else, naming the variable", "[settings]") {
  for (const char* on : {"1", "yes", "on", "true", "TRUE", "Yes"}) {
    EnvScope v("MINIDL_CHECK_NUMERICS", on);
    CHECK(settings::check_numerics.read());
  }
  for (const char* off : {"0", "no", "off", "false", "FALSE"}) {
    EnvScope v("MINIDL_FUSE_RELU", off);
    CHECK_FALSE(settings::fuse_relu.read());
  }
  {
    EnvScope v("MINIDL_FUSE_RELU", "");
    CHECK(settings::fuse_relu.read());  // unset or empty: the default (on)
  }
  // MINIDL_DIST_OVERLAP=false used to turn the overlap on (anything but "0" did).
  {
    EnvScope v("MINIDL_DIST_OVERLAP", "false");
    CHECK_FALSE(settings::dist_overlap.read());
  }
  for (const char* bad : {"maybe", "2", "1 ", " 1", "yes!", "enable"}) {
    EnvScope v("MINIDL_TF32", bad);
    CHECK_THROWS_WITH(settings::tf32.read(),
                      Catch::Contains(std::string("MINIDL_TF32='") + bad + "' is not valid") &&
                          Catch::Contains("expected 1 or 0 (also yes/no, on/off, true/false)"));
  }
  {
    EnvScope v("MINIDL_PROFILE", "garbage");
    CHECK_THROWS_WITH(settings::profile.read(), Catch::StartsWith("MINIDL_PROFILE='garbage' is not valid"));
    CHECK_THROWS_WITH(profile_mode(), Catch::Contains("expected 1 or 0 (also yes/no, on/off, true/false), or shapes"));
  }
}

TEST_CASE("settings: MINIDL_PROFILE is a switch or 'shapes'", "[settings]") {
  CHECK(profile_mode() == ProfileMode::off);  // unset
  for (const char* off : {"0", "no", "off", "FALSE", ""}) {
    EnvScope v("MINIDL_PROFILE", off);
    CHECK(profile_mode() == ProfileMode::off);
  }
  for (const char* on : {"1", "yes", "On", "true"}) {
    EnvScope v("MINIDL_PROFILE", on);
    CHECK(profile_mode() == ProfileMode::table);
  }
  for (const char* shapes : {"shapes", "SHAPES"}) {
    EnvScope v("MINIDL_PROFILE", shapes);
    CHECK(profile_mode() == ProfileMode::shapes);
  }
  for (const char* bad : {"2", "shape", "shapes ", "1,shapes"}) {
    EnvScope v("MINIDL_PROFILE", bad);
    CHECK_THROWS_WITH(check_environment(), Catch::StartsWith(std::string("MINIDL_PROFILE='") + bad + "' is not valid"));
  }
  // Every op ('*') takes only auto.
  {
    EnvScope v("MINIDL_KERNELS", "*=auto,conv2d=naive");
    CHECK_NOTHROW(settings::kernels.read());
  }
  {
    EnvScope v("MINIDL_KERNELS", "*=naive");
    CHECK_THROWS_WITH(check_environment(), Catch::Contains("every op ('*') can only be given auto"));
  }
}

TEST_CASE("settings: integers and numbers must be whole, finite and in range", "[settings]") {
  {
    EnvScope v("MINIDL_LOG_DISPATCH", "2");
    CHECK(settings::log_dispatch.read() == 2);
  }
  for (const char* bad : {"5abc", "3", "-1", "1.5", "1e1", "x", "0x1"}) {
    EnvScope v("MINIDL_LOG_DISPATCH", bad);
    CHECK_THROWS_WITH(settings::log_dispatch.read(), Catch::Contains("MINIDL_LOG_DISPATCH='") &&
                                                         Catch::Contains("a whole number from 0 to 2"));
  }
  {
    EnvScope v("MINIDL_DIST_BUCKET_MB", "0.5");
    CHECK(settings::dist_bucket_mb.read() == 0.5);
    CHECK(dist::DataParallelOptions::from_environment().bucket_bytes == size_t(1) << 19);
  }
  // "inf" and "1e30" used to overflow to one bucket per tensor; "5abc" read as 5.
  for (const char* bad : {"inf", "nan", "1e30", "5abc", "0", "-4", "", " 4"}) {
    EnvScope v("MINIDL_DIST_BUCKET_MB", bad);
    if (std::string(bad).empty()) {
      CHECK(settings::dist_bucket_mb.read() == 4);  // empty: the default
      continue;
    }
    CHECK_THROWS_WITH(settings::dist_bucket_mb.read(),
                      Catch::Contains("MINIDL_DIST_BUCKET_MB='") && Catch::Contains("a number from 0.001 to 65536 (MiB)"));
    CHECK_THROWS_WITH(dist::DataParallelOptions::from_environment(), Catch::Contains("MINIDL_DIST_BUCKET_MB"));
  }
  int64_t i = 0;
  double d = 0;
  CHECK(parse_whole_integer("+7", i));
  CHECK(i == 7);
  CHECK_FALSE(parse_whole_integer("99999999999999999999", i));
  CHECK(parse_finite_number("2.5e-3", d));
  CHECK(d == 2.5e-3);
  CHECK_FALSE(parse_finite_number("1e400", d));
  CHECK_FALSE(parse_finite_number("0x10", d));
}

TEST_CASE("settings: text settings check their syntax, and check_environment refuses every malformed one", "[settings]") {
  {
    EnvScope v("MINIDL_KERNELS", "matmul=naive,,conv2d=im2col_blas");
    CHECK_THROWS_WITH(settings::kernels.read(), Catch::Contains("MINIDL_KERNELS=") &&
                                                   Catch::Contains("an empty item between commas"));
  }
  {
    EnvScope v("MINIDL_KERNELS", "matmul");
    CHECK_THROWS_WITH(check_environment(), Catch::Contains("'matmul' is not of the form OP=NAME"));
  }
  {
    EnvScope v("MINIDL_CUDA_MEMORY_LIMIT", "4X");
    CHECK_THROWS_WITH(check_environment(), Catch::StartsWith("MINIDL_CUDA_MEMORY_LIMIT: cannot parse '4X'"));
  }
  // Every switch, integer and number of the table is checked by check_environment().
  for (const Setting* s : all_settings()) {
    if (dynamic_cast<const TextSetting*>(s) != nullptr) continue;
    EnvScope v(s->name(), "5abc");
    CHECK_THROWS_WITH(check_environment(), Catch::StartsWith(std::string(s->name()) + "='5abc'"));
  }
  CHECK_NOTHROW(check_environment());
}

TEST_CASE("settings: minidl info shows every setting, and the README lists exactly the table", "[settings]") {
  const std::string report = settings_report();
  for (const Setting* s : all_settings()) CHECK_THAT(report, Catch::Contains(s->name()) && Catch::Contains(s->meaning()));
  {
    EnvScope v("MINIDL_LOG_DISPATCH", "seven");
    CHECK_THAT(settings_report(), Catch::Contains("INVALID: MINIDL_LOG_DISPATCH='seven' is not valid"));
  }

  // The README's table: one row "| `MINIDL_X` | default | meaning |" per setting, no other.
  std::ifstream readme(std::string(MINIDL_SOURCE_DIR) + "/README.md");
  REQUIRE(readme);
  std::set<std::string> listed;
  std::string line;
  bool in_section = false;
  while (std::getline(readme, line)) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Settings (environment variables)";
    if (in_section && line.rfind("| `MINIDL_", 0) == 0) listed.insert(line.substr(3, line.find('`', 3) - 3));
  }
  std::set<std::string> table;
  for (const Setting* s : all_settings()) table.insert(s->name());
  CHECK(listed == table);
}
