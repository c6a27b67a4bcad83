// tests/test_bench_sweep.cpp — `minidl bench --shape-sweep`: the sizes of a range, the shapes they make,
// the flags refused (naming the field), and a tiny sweep's CSV (one row per size and kernel) and SVG (axis
// labels with units, one path per kernel). Times are only checked to be there, never compared.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/bench_test_util.h"
#include "tools/bench/bench.h"
#include "tools/bench/sweep.h"
#include "tools/svg.h"

using namespace minidl;
using namespace minidl::testing;

TEST_CASE("bench --shape-sweep: ranges of sizes, and the shapes they make", "[bench][sweep]") {
  CHECK(bench::sweep_sizes("64:1024:x2") == std::vector<int64_t>{64, 128, 256, 512, 1024});
  CHECK(bench::sweep_sizes("64:1000:x2") == std::vector<int64_t>{64, 128, 256, 512});  // HI only when reached
  CHECK(bench::sweep_sizes("32:128:+32") == std::vector<int64_t>{32, 64, 96, 128});
  CHECK(bench::sweep_sizes("7:7:x3") == std::vector<int64_t>{7});
  CHECK(bench::sweep_sizes("1:2147483647:x2").size() == 31);  // no overflow past kMaxSize
  CHECK(bench::sweep_shape("nxnxn", 64) == "64x64x64");
  CHECK(bench::sweep_shape("8xnx16x16,nxnx3x3,s1p1", 32) == "8x32x16x16,32x32x3x3,s1p1");
  CHECK(bench::default_sweep_spec("matmul") == "nxnxn");
  CHECK(bench::default_sweep_spec("conv2d.backward_input") == bench::default_sweep_spec("conv2d"));
  CHECK(bench::default_sweep_spec("relu") == "");

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"64:1024", "expected LO:HI:xF or LO:HI:+S"},
      {"0:1024:x2", "LO '0' must be at least 1"},
      {"64:32:x2", "HI 32 is below LO 64"},
      {"64:1024:x1", "the factor must be at least 2"},
      {"64:1024:*2", "the step '*2' must be xF (multiply by F) or +S (add S)"},
      {"64:1024:+", "the step '' is empty"},
      {"6a:1024:x2", "LO '6a' is not a whole number"},
      {"1:1000:+1", "more than 64 sizes"},
      {"1:99999999999:x2", "HI '99999999999' is larger than 2147483647"},
  };
  for (const auto& [range, message] : bad) {
    INFO(range);
    CHECK_THROWS_WITH(bench::sweep_sizes(range),
                      Catch::StartsWith("bench --shape-sweep '" + range + "': ") && Catch::Contains(message));
  }

  bench::BenchOptions o;
  o.sweep = "4:16:x2";
  o.ops = {"matmul"};
  const bench::SweepPlan plan = bench::plan_sweep(o);
  CHECK(plan.shapes == std::vector<std::string>{"matmul:4x4x4", "matmul:8x8x8", "matmul:16x16x16"});
  o.sweep_spec = "nx3x5,tb";
  CHECK(bench::plan_sweep(o).shapes.back() == "matmul:16x3x5,tb");
  o.sweep_spec = "4x4x4";
  CHECK_THROWS_WITH(bench::plan_sweep(o), Catch::Contains("no n where the size goes"));
  o.sweep_spec = "nxn";  // the --shape reader's error, for the first size
  CHECK_THROWS_WITH(bench::plan_sweep(o), Catch::Contains("bench --shape matmul:4x4: '4x4' has 2 size(s)"));
  o.sweep_spec = "";
  o.ops = {"relu"};
  CHECK_THROWS_WITH(bench::plan_sweep(o), Catch::Contains("relu has no default sweep spec; give --sweep-spec"));
  o.ops = {"matmul", "relu"};
  CHECK_THROWS_WITH(bench::plan_sweep(o), Catch::Contains("name the one op"));
  o.ops = {"matmul"};
  o.shapes = {"matmul:4x4x4"};
  CHECK_THROWS_WITH(bench::plan_sweep(o), Catch::Contains("--shape cannot be given too"));
}

TEST_CASE("bench --shape-sweep: a CSV row per size and kernel, an SVG line per kernel with labelled axes",
          "[bench][sweep]") {
  bench::BenchOptions o;
  o.repeat = 2;
  o.budget_seconds = 1e-3;
  o.ops = {"matmul"};
  o.kernels = {"naive", "ikj", "blocked"};
  o.sweep = "4:16:x2";
  o.csv_path = temp_file("minidl_test_sweep.csv");
  o.svg_path = temp_file("minidl_test_sweep.svg");
  o.json_path = temp_file("minidl_test_sweep.jsonl");
  int status = -1;
  const std::string table = printed_by([&](std::FILE* f) { status = bench::run_bench(o, f); });
  INFO(table);
  CHECK(status == 0);
  for (const char* shape : {"matmul 4x4x4: ", "matmul 8x8x8: ", "matmul 16x16x16: "})
    CHECK_THAT(table, Catch::Contains(shape));

  // CSV: the header, then one row per (size, kernel) of the three shown; numbers where the kernel ran.
  const std::vector<std::string> csv = lines_in(text_of(o.csv_path));
  REQUIRE(csv.size() == 1 + 3 * 3);
  CHECK(csv[0] ==
        "device,key,shape,size,kernel,status,median_ms,min_ms,max_ms,spread,runs,gflops,gbs,max_rel_err,wrong");
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 1; i < csv.size(); ++i) {
    INFO(csv[i]);
    std::vector<std::string> cells;
    std::stringstream ss(csv[i]);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    if (!csv[i].empty() && csv[i].back() == ',') cells.push_back("");
    REQUIRE(cells.size() == 15);
    CHECK(cells[0] == "cpu");
    CHECK(cells[1] == "matmul");
    CHECK(cells[2] == cells[3] + "x" + cells[3] + "x" + cells[3]);
    CHECK(cells[5] == "ok");
    CHECK(std::stod(cells[6]) > 0);                       // median ms
    CHECK(std::stod(cells[7]) <= std::stod(cells[6]));     // min <= median
    CHECK(std::stod(cells[8]) >= std::stod(cells[6]));     // max >= median
    CHECK(std::stod(cells[11]) > 0);                      // GFLOP/s
    CHECK(cells[14] == "false");
    seen.insert({cells[3], cells[4]});
  }
  CHECK(seen.size() == 9);
  CHECK(seen.count({"16", "ikj"}) == 1);

  // JSON: each record has its sweep size and the spread fields.
  for (const std::string& line : lines_in(text_of(o.json_path))) {
    const nlohmann::json r = nlohmann::json::parse(line);
    if (r["record"] != "kernel") continue;
    CHECK(r["size"].get<int>() * r["size"].get<int>() * r["size"].get<int>() * 2 == r["flops"].get<double>());
    CHECK(r.contains("max_ms"));
    CHECK(r.contains("spread"));
  }

  // SVG: well-formed; both axes labelled with their units; one path per kernel, named in the legend.
  const std::string drawing = text_of(o.svg_path);
  CHECK(svg::problems(drawing) == "");
  CHECK_THAT(drawing, Catch::Contains(">GFLOP/s (log scale)</text>"));
  CHECK_THAT(drawing, Catch::Contains(">size n (elements; n in nxnxn, log2 scale)</text>"));
  CHECK_THAT(drawing, Catch::Contains("shape nxnxn with n = 4, 8, 16"));
  size_t paths = 0;
  for (size_t at = drawing.find("<path "); at != std::string::npos; at = drawing.find("<path ", at + 1)) ++paths;
  CHECK(paths == 3);
  for (const char* kernel : {"naive", "ikj", "blocked"})
    CHECK_THAT(drawing, Catch::Contains(std::string("<title>") + kernel + "</title></path>") &&
                            Catch::Contains(std::string(">") + kernel + "</text>"));
  for (const std::string& path : {o.csv_path, o.svg_path, o.json_path}) std::filesystem::remove(path);
}
