// tests/test_bench_baseline.cpp — `minidl bench --baseline`: reading an earlier --json file, the verdicts
// (faster, slower, same within noise, REGRESSION), new and missing cases, the spread of records that have
// none, the cases a baseline runs again, and the one-line errors for files that are not bench output.
// Every verdict here comes from hand-written files (tests/fixtures/bench/before.jsonl, after.jsonl), so
// nothing depends on how fast this machine is.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>

#include "core/error.h"
#include "tests/bench_test_util.h"
#include "tools/bench/baseline.h"
#include "tools/bench/bench.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

const bench::CaseComparison& find(const bench::BaselineComparison& c, const std::string& shape,
                                  const std::string& kernel) {
  for (const bench::CaseComparison& cmp : c.compared)
    if (cmp.now.shape == shape && cmp.now.kernel == kernel) return cmp;
  FAIL("no comparison of " << shape << " " << kernel);
  throw 0;
}

// The line of the printed table about `kernel` at `shape`.
std::string line_of(const std::string& table, const std::string& shape, const std::string& kernel) {
  for (const std::string& line : lines_in(table))
    if (line.find(" " + shape + " ") != std::string::npos && line.find(" " + kernel + " ") != std::string::npos)
      return line;
  return "";
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = temp_file(name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("bench --baseline: reading a --json file, records without a spread, other records skipped",
          "[bench][baseline]") {
  const bench::BaselineFile b = bench::read_baseline(bench_fixture("before.jsonl"));
  CHECK(b.device == "cpu");
  CHECK(b.threads == 2);
  CHECK_FALSE(b.loaded);
  REQUIRE(b.cases.size() == 7);  // the blank line and the "ragged" record are skipped
  CHECK(b.cases[0].id() == "matmul 64x64x64 openblas on cpu");
  CHECK(b.cases[0].noise() == Approx(0.02));
  // A record written before the spread field: its median and min (20 runs) give it, (10 - 9) / 9.
  CHECK(b.cases[3].kernel == "naive");
  CHECK(b.cases[3].spread < 0);
  CHECK(b.cases[3].noise() == Approx(1.0 / 9));
  // Fewer than 3 runs and no spread: the documented default.
  CHECK(b.cases[4].runs == 2);
  CHECK(b.cases[4].noise() == Approx(bench::kDefaultSpread));
}

TEST_CASE("bench --baseline: 50% slower is a regression, within the noise is the same, new and missing listed",
          "[bench][baseline]") {
  const bench::BaselineFile before = bench::read_baseline(bench_fixture("before.jsonl"));
  const bench::BaselineFile after = bench::read_baseline(bench_fixture("after.jsonl"));
  const bench::BaselineComparison c = bench::compare_with_baseline(before.cases, after.cases, 0.10);
  REQUIRE(c.compared.size() == 5);

  const bench::CaseComparison& slower = find(c, "64x64x64", "openblas");
  CHECK(slower.change == Approx(0.5));
  CHECK(slower.noise == Approx(0.02));
  CHECK(slower.verdict == "slower");
  CHECK(slower.regression);
  // +5% with spreads of 5% and 8%: within the noise.
  const bench::CaseComparison& same = find(c, "64x64x64", "ikj");
  CHECK(same.change == Approx(0.05));
  CHECK(same.noise == Approx(0.08));
  CHECK(same.verdict == "same");
  CHECK_FALSE(same.regression);
  CHECK(find(c, "64x64x64", "blocked").verdict == "faster");
  // +10% against an old record whose median and min say 11.1% of noise: the same, not slower.
  CHECK(find(c, "64x64x64", "naive").verdict == "same");
  // +8% where neither run measured a spread (2 runs each): the same, within the default 10%.
  const bench::CaseComparison& unmeasured = find(c, "128x128x128", "packed_avx2");
  CHECK(unmeasured.noise == Approx(bench::kDefaultSpread));
  CHECK(unmeasured.verdict == "same");
  CHECK(c.regressions() == 1);

  REQUIRE(c.only_now.size() == 1);
  CHECK(c.only_now[0].kernel == "packed_omp");
  REQUIRE(c.only_before.size() == 1);
  CHECK(c.only_before[0].id() == "relu 5x7 naive on cpu");
  REQUIRE(c.not_compared.size() == 1);
  CHECK(c.not_compared[0].second.status == "declined");

  // The printed table and the exit status of `minidl bench --baseline before.jsonl --against after.jsonl`.
  int status = -1;
  const std::string table = printed_by([&](std::FILE* f) {
    status = bench::compare_files(bench_fixture("before.jsonl"), bench_fixture("after.jsonl"), 0.10, f);
  });
  INFO(table);
  CHECK(status == bench::kExitRegression);
  CHECK_THAT(line_of(table, "64x64x64", "openblas"), Catch::Contains("+50.0%") && Catch::Contains("slower: REGRESSION"));
  CHECK_THAT(line_of(table, "64x64x64", "ikj"), Catch::Contains("+5.0%") && Catch::Contains("same (within noise)"));
  CHECK_THAT(line_of(table, "64x64x64", "blocked"), Catch::Contains("-50.0%") && Catch::Contains("faster"));
  CHECK_THAT(table, Catch::Contains("missing (in the baseline, not in this run): relu 5x7 naive on cpu"));
  CHECK_THAT(table, Catch::Contains("new (not in the baseline): matmul 64x64x64 packed_omp on cpu"));
  CHECK_THAT(table, Catch::Contains("not compared: matmul 64x128x9216,tb ikj: ok in the baseline, declined now"));
  CHECK_THAT(table, Catch::Contains("5 compared: 1 faster, 1 slower, 3 same within noise; 1 new, 1 missing"));
  CHECK_THAT(table, Catch::Contains("REGRESSION: 1 kernel(s) slower than the baseline by more than 10%"));

  // A threshold above the change: still slower, no longer a regression, exit 0.
  const bench::BaselineComparison lenient = bench::compare_with_baseline(before.cases, after.cases, 0.60);
  CHECK(find(lenient, "64x64x64", "openblas").verdict == "slower");
  CHECK(lenient.regressions() == 0);
  std::FILE* sink = std::tmpfile();
  CHECK(bench::compare_files(bench_fixture("before.jsonl"), bench_fixture("after.jsonl"), 0.60, sink) == 0);
  // A file against itself: every case the same.
  const bench::BaselineComparison itself = bench::compare_with_baseline(before.cases, before.cases, 0.10);
  CHECK(itself.count("same") == static_cast<int>(itself.compared.size()));
  CHECK(itself.regressions() == 0);
  std::fclose(sink);
}

TEST_CASE("bench --baseline: the machine's drift between the runs widens the noise of every case",
          "[bench][baseline]") {
  CHECK(bench::calibration_drift({6.0, 6.2}, {6.1, 6.0}) == Approx(0.2 / 6.0));
  CHECK(bench::calibration_drift({6.0, 6.2}, {9.6}) == Approx(0.6));
  CHECK(bench::calibration_drift({}, {9.6}) == 0);  // a file written before the medians were recorded

  // The same two runs, the calibration's median 6 ms around the baseline and 9.6 ms around the new run:
  // the machine itself got 60% slower, so the 50% change is within the noise.
  const auto with_calibration = [](const std::string& name, const std::string& fields) {
    std::string text = text_of(bench_fixture(name));
    const std::string machine_end = "\"repeat\":20}";
    REQUIRE(text.find(machine_end) != std::string::npos);
    text.replace(text.find(machine_end), machine_end.size(), "\"repeat\":20," + fields + "}");
    return write_temp("minidl_test_drift_" + name, text);
  };
  const std::string before_path = with_calibration(
      "before.jsonl", "\"calibration_median_ms_before\":6.0,\"calibration_median_ms_after\":6.1");
  const std::string after_path = with_calibration(
      "after.jsonl", "\"calibration_median_ms_before\":9.6,\"calibration_median_ms_after\":9.5");
  const bench::BaselineFile before = bench::read_baseline(before_path), after = bench::read_baseline(after_path);
  CHECK(before.calibration_ms == std::vector<double>{6.0, 6.1});
  const double drift = bench::calibration_drift(before.calibration_ms, after.calibration_ms);
  CHECK(drift == Approx(0.6));
  const bench::BaselineComparison c = bench::compare_with_baseline(before.cases, after.cases, 0.10, drift);
  CHECK(find(c, "64x64x64", "openblas").noise == Approx(0.6));
  CHECK(find(c, "64x64x64", "openblas").verdict == "same");
  CHECK(find(c, "64x64x64", "blocked").verdict == "faster");  // twice as fast is beyond 60%
  CHECK(c.regressions() == 0);
  std::FILE* sink = std::tmpfile();
  CHECK(bench::compare_files(before_path, after_path, 0.10, sink) == 0);
  std::fclose(sink);
  std::filesystem::remove(before_path);
  std::filesystem::remove(after_path);
}

TEST_CASE("bench --baseline: the baseline's cases are run again when the command line names none",
          "[bench][baseline]") {
  const bench::BaselineFile b = bench::read_baseline(bench_fixture("before.jsonl"));
  bench::BenchOptions o;
  o.device = "";
  bench::use_baseline_cases(b, o);
  CHECK(o.device == "cpu");
  CHECK(o.keys_only);
  CHECK(o.ops == std::vector<std::string>{"matmul", "relu"});
  CHECK(o.shapes == std::vector<std::string>{"matmul:64x64x64", "matmul:128x128x128", "matmul:64x128x9216,tb",
                                             "relu:5x7"});
  // The fixture names some of matmul's kernels, not all: those (relu's naive too), so naive is timed again.
  CHECK(std::find(o.kernels.begin(), o.kernels.end(), "ikj") != o.kernels.end());
  CHECK(std::find(o.kernels.begin(), o.kernels.end(), "naive") != o.kernels.end());
  CHECK(std::find(o.kernels.begin(), o.kernels.end(), "packed_omp") == o.kernels.end());

  // Cases named on the command line win; only the device comes from the baseline.
  bench::BenchOptions named;
  named.device = "";
  named.ops = {"relu"};
  bench::use_baseline_cases(b, named);
  CHECK(named.ops == std::vector<std::string>{"relu"});
  CHECK(named.shapes.empty());
  CHECK(named.device == "cpu");
}

TEST_CASE("bench --baseline: a missing or malformed file is one line naming it", "[bench][baseline][errors]") {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "is empty, not a `minidl bench --json` file"},
      {"not json\n", "line 1 is not JSON (parse error at byte"},
      {"{\"record\":\"kernel\",\"key\":\"matmul\"}\n", "its first record is not a machine record"},
      {"[1, 2]\n", "line 1 is not a `minidl bench --json` record"},
      {"{\"record\":\"machine\",\"device\":\"cpu\"}\n{\"record\":\"kernel\",\"shape\":\"4x4x4\"}\n",
       "line 2: a kernel record without \"key\" (a string)"},
      {"{\"record\":\"machine\",\"device\":\"cpu\"}\n\n{\"record\":\"kernel\",\"key\":\"matmul\",\"shape\":\"4x4x4\","
       "\"kernel\":\"naive\",\"status\":\"ok\",\"median_ms\":\"fast\"}\n",
       "line 3: \"median_ms\" is not a number"},
      {"{\"record\":\"machine\",\"device\":\"cpu\"}\n{\"record\":\"kernel\",\"key\":\"matmul\",\"shape\":\"4x4x4\","
       "\"kernel\":\"naive\",\"status\":\"ok\",\"median_ms\":null}\n",
       "line 2: a kernel record with status \"ok\" and no \"median_ms\" above 0"},
  };
  for (const auto& [text, message] : bad) {
    const std::string path = write_temp("minidl_test_bad_baseline.jsonl", text);
    INFO(text);
    try {
      bench::read_baseline(path);
      FAIL("no error");
    } catch (const Error& e) {
      const std::string what = e.what();
      CHECK_THAT(what, Catch::StartsWith("bench --baseline '" + path + "': ") && Catch::Contains(message));
      CHECK(what.find('\n') == std::string::npos);
    }
    std::filesystem::remove(path);
  }
  CHECK_THROWS_WITH(bench::read_baseline("/nonexistent/old.json"),
                    "bench --baseline '/nonexistent/old.json': cannot open it (No such file or directory)");
  CHECK_THROWS_WITH(bench::read_baseline(MINIDL_SOURCE_DIR), Catch::Contains("is a folder"));
  CHECK_THROWS_WITH(bench::read_baseline("/nonexistent/new.json", "--against"),
                    Catch::StartsWith("bench --against '/nonexistent/new.json'"));
  // run_bench reads the baseline before it measures anything.
  bench::BenchOptions o;
  o.baseline_path = "/nonexistent/old.json";
  std::FILE* sink = std::tmpfile();
  CHECK_THROWS_WITH(bench::run_bench(o, sink), Catch::StartsWith("bench --baseline '/nonexistent/old.json'"));
  std::fclose(sink);
}
