// tests/test_kernel_lab.cpp — the tools around the dispatch table: `minidl bench` (its table, JSON Lines
// and SVG, its error column catching a wrong kernel, a case for every key), `minidl kernels` (priorities,
// signatures, filters, the error for an unknown op), the --shape reader refusing bad fields before any
// work, MINIDL_LOG_DISPATCH=1 logging once, and the guide docs/adding-a-kernel.md showing its example
// kernel (cpu/matmul_ikj.cpp) as it is in the tree.
// Nothing here asserts a time: the bench runs tiny shapes, and only the shape of its output is checked.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/dispatch.h"
#include "core/random.h"
#include "tests/bench_test_util.h"
#include "tests/test_util.h"
#include "tools/bench/bench.h"
#include "tools/bench/case.h"
#include "tools/kernel_table.h"
#include "tools/svg.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

// What `fn` wrote to stderr (the file descriptor, so fprintf(stderr, ...) is caught).
std::string captured_stderr(const std::function<void()>& fn) {
  std::fflush(stderr);
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  const int saved = dup(2);
  dup2(fileno(f), 2);
  fn();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::rewind(f);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  std::fclose(f);
  return text;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) lines.push_back(line);
  return lines;
}

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string w;
  while (ss >> w) out.push_back(w);
  return out;
}

std::string temp_path(const std::string& name) { return (std::filesystem::temp_directory_path() / name).string(); }

// A deliberately wrong matmul: the naive product, then one element off by 1.
bool wrong_matmul(const Tensor& a, const Tensor& b, Tensor& out, bool ta, bool tb) {
  for (const KernelInfo* k : KernelRegistry::instance().candidates("matmul", DeviceType::cpu))
    if (k->name == "naive") {
      if (!reinterpret_cast<MatmulKernel*>(k->fn)(a, b, out, ta, tb)) return false;
      if (out.dtype() == DType::float32 && out.numel() > 0) out.data<float>()[0] += 1.0f;
      return true;
    }
  return false;
}

bench::BenchOptions tiny_options() {
  bench::BenchOptions o;
  o.repeat = 2;
  o.budget_seconds = 1e-3;
  return o;
}

}  // namespace

TEST_CASE("minidl bench: the table, JSON Lines and SVG, and a wrong kernel caught by the error column",
          "[bench]") {
  ScopedKernel<MatmulKernel> wrong("matmul", DeviceType::cpu, "test_wrong", wrong_matmul);
  bench::BenchOptions o = tiny_options();
  o.ops = {"matmul", "relu"};
  o.shapes = {"matmul:8x9x10", "matmul:6x5x4,ta,tb,b2", "relu:5x7"};
  o.json_path = temp_path("minidl_test_bench.jsonl");
  o.svg_path = temp_path("minidl_test_bench.svg");
  int status = -1;
  const std::string table = printed_by([&](std::FILE* f) { status = bench::run_bench(o, f); });
  INFO(table);
  CHECK(status == 2);  // a kernel is WRONG

  // The table: a header per case, the column names, one line per kernel with numbers in the columns.
  const std::vector<std::string> lines = lines_of(table);
  int cases = 0, rows = 0, wrong_rows = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("matmul 8x9x10: ", 0) == 0 || lines[i].rfind("relu 5x7: ", 0) == 0 ||
        lines[i].rfind("matmul 6x5x4,ta,tb,b2: ", 0) == 0) {
      ++cases;
      CHECK_THAT(lines[i], Catch::Contains("; reference naive"));
      REQUIRE(i + 1 < lines.size());
      const std::vector<std::string> header = words(lines[i + 1]);
      REQUIRE(header.size() >= 11);
      CHECK(header[0] == "kernel");
      CHECK(header[1] + " " + header[2] == "median ms");
      CHECK(header[3] + " " + header[4] == "min ms");
      CHECK(header[5] == "GFLOP/s");
      CHECK(header[6] == "GB/s");
      CHECK(header[7] == "vs");
      CHECK(header[9] + " " + header[10] == "max err");
      for (size_t j = i + 2; j < lines.size() && !lines[j].empty(); ++j) {
        const std::vector<std::string> cells = words(lines[j]);
        REQUIRE(cells.size() >= 7);
        ++rows;
        if (cells[1] == "-") {
          CHECK_THAT(lines[j], Catch::Contains("declined") || Catch::Contains("skipped"));
          continue;
        }
        CHECK(std::stod(cells[1]) > 0);               // median ms
        CHECK(std::stod(cells[2]) <= std::stod(cells[1]));  // min <= median
        CHECK(std::stod(cells[3]) > 0);               // GFLOP/s
        CHECK(std::stod(cells[4]) > 0);               // GB/s
        if (cells[0] == "naive") CHECK(cells[6] == "0");  // the reference against itself
        if (cells[0] == "test_wrong") {
          ++wrong_rows;
          CHECK(std::stod(cells[6]) >= 0.99);  // one element off by 1
          CHECK_THAT(lines[j], Catch::Contains("WRONG"));
        } else {
          CHECK_THAT(lines[j], !Catch::Contains("WRONG"));
        }
      }
    }
  }
  CHECK(cases == 3);
  CHECK(rows == static_cast<int>(2 * kernels_for("matmul", DeviceType::cpu).size() +
                                 kernels_for("relu", DeviceType::cpu).size()));
  CHECK(wrong_rows == 2);
  CHECK_THAT(table, Catch::Contains("2 kernel(s) WRONG"));

  // JSON Lines: a machine record, then one record per kernel and shape, every line valid JSON.
  const std::vector<std::string> json = lines_of(read_file(o.json_path));
  REQUIRE(json.size() >= 4);
  const nlohmann::json machine = nlohmann::json::parse(json[0]);
  CHECK(machine["record"] == "machine");
  CHECK(machine["device"] == "cpu");
  CHECK(machine["peak_gflops"].get<double>() > 0);
  CHECK(machine["peak_gbs"].get<double>() > 0);
  CHECK(machine["threads"].get<int>() >= 1);
  int wrong_records = 0, kernel_records = 0, ragged_records = 0;
  for (size_t i = 1; i < json.size(); ++i) {
    const nlohmann::json r = nlohmann::json::parse(json[i]);
    if (r["record"] == "ragged") {  // each kernel once on its key's ragged shape (test_bench_ragged.cpp)
      ++ragged_records;
      CHECK(r["wrong"] == (r["kernel"] == "test_wrong"));
      continue;
    }
    CHECK(r["record"] == "kernel");
    for (const char* field : {"key", "shape", "kernel", "status", "median_ms", "min_ms", "gflops", "gbs", "flops",
                              "bytes", "vs_vendor", "max_abs_err", "max_rel_err", "wrong", "reference"})
      CHECK(r.contains(field));
    ++kernel_records;
    if (r["status"] != "ok") continue;
    CHECK(r["median_ms"].get<double>() >= r["min_ms"].get<double>());
    if (r["key"] == "matmul" && r["shape"] == "8x9x10") CHECK(r["flops"].get<double>() == 2.0 * 8 * 9 * 10);
    if (r["kernel"] == "test_wrong") {
      ++wrong_records;
      CHECK(r["wrong"] == true);
      CHECK(r["max_abs_err"].get<double>() >= 0.99);
    } else {
      CHECK(r["wrong"] == false);
    }
  }
  CHECK(kernel_records == rows);
  CHECK(wrong_records == 2);
  CHECK(ragged_records == static_cast<int>(kernels_for("matmul", DeviceType::cpu).size() +
                                           kernels_for("relu", DeviceType::cpu).size() - 2));  // naive is the reference

  // The SVG: well-formed, with both panels and the peaks it assumed.
  const std::string drawing = read_file(o.svg_path);
  CHECK(svg::problems(drawing) == "");
  CHECK_THAT(drawing, Catch::Contains("roofline") && Catch::Contains("peaks assumed") && Catch::Contains("test_wrong"));
  std::filesystem::remove(o.json_path);
  std::filesystem::remove(o.svg_path);
}

TEST_CASE("minidl bench: every kernel of every key runs on a tiny shape and agrees with the reference",
          "[bench]") {
  bench::BenchOptions o = tiny_options();
  for (const bench::CaseFamily& family : bench::case_families())
    for (const bench::CaseKey& k : family.keys) o.shapes.push_back(k.key + ":" + family.example);
  o.json_path = temp_path("minidl_test_bench_all.jsonl");
  int status = -1;
  const std::string table = printed_by([&](std::FILE* f) { status = bench::run_bench(o, f); });
  INFO(table);
  CHECK(status == 0);
  std::set<std::pair<std::string, std::string>> ran;
  for (const std::string& line : lines_of(read_file(o.json_path))) {
    const nlohmann::json r = nlohmann::json::parse(line);
    if (r["record"] != "kernel") continue;
    INFO(line);
    CHECK((r["status"] == "ok" || (r["status"] == "declined" && r["key"] == "copy" && r["kernel"] == "memcpy")));
    CHECK(r["wrong"] == false);
    ran.insert({r["key"].get<std::string>(), r["kernel"].get<std::string>()});
  }
  for (const KernelInfo* k : KernelRegistry::instance().all())
    if (k->device == DeviceType::cpu) {
      INFO(k->key << " " << k->name);
      CHECK(ran.count({k->key, k->name}) == 1);
    }
  std::filesystem::remove(o.json_path);
}

TEST_CASE("minidl bench: conv2d's nhwc option gives channels-last activations to the kernels declared to take them",
          "[bench]") {
  // On the CPU no conv2d kernel is declared channels-last: every one gets NCHW tensors of the same values and
  // agrees with the reference. On a GPU the declared ones (cuDNN, nhwc_3x3_tf32) are checked on NHWC memory.
  std::vector<std::string> devices = {"cpu"};
  if (cuda_unavailable_reason().empty()) devices.push_back("cuda");  // the CPU half runs either way
  for (const std::string& device : devices) {
    INFO(device);
    bench::BenchOptions o = tiny_options();
    o.device = device;
    o.ops = {"conv2d"};
    o.shapes = {"conv2d:2x32x5x9,32x32x3x3,s1p1,nhwc"};
    o.json_path = temp_path("minidl_test_bench_nhwc.jsonl");
    int status = -1;
    const std::string table = printed_by([&](std::FILE* f) { status = bench::run_bench(o, f); });
    INFO(table);
    CHECK(status == 0);
    CHECK(table.find("conv2d.backward_weight 2x32x5x9,32x32x3x3,s1p1,nhwc") != std::string::npos);
    int ok = 0;
    for (const std::string& line : lines_of(read_file(o.json_path))) {
      const nlohmann::json r = nlohmann::json::parse(line);
      if (r["record"] != "kernel") continue;
      INFO(line);
      CHECK(r["wrong"] == false);
      ok += r["status"] == "ok";
    }
    CHECK(ok > 0);
    std::filesystem::remove(o.json_path);
  }
  std::FILE* sink = std::tmpfile();
  bench::BenchOptions o = tiny_options();
  o.shapes = {"conv2d:2x32x5x9,32x32x3x3,s1p1,nchw"};
  CHECK_THROWS_WITH(bench::run_bench(o, sink), Catch::Contains("nchw"));
  std::fclose(sink);
}

TEST_CASE("minidl bench: every registered key has a bench case with its kernels' signature", "[bench]") {
  for (const KernelInfo* k : KernelRegistry::instance().all()) {
    INFO(k->key << " " << device_type_name(k->device) << " " << k->name);
    const bench::CaseKey* entry = bench::find_case_key(k->key);
    REQUIRE(entry != nullptr);
    CHECK(entry->signature_type == k->signature);
  }
}

TEST_CASE("minidl bench: unknown ops, kernels and malformed shapes are errors that say what exists",
          "[bench][errors]") {
  bench::BenchOptions o = tiny_options();
  std::FILE* sink = std::tmpfile();
  o.ops = {"matmull"};
  CHECK_THROWS_WITH(bench::run_bench(o, sink), Catch::Contains("unknown op 'matmull' (did you mean 'matmul'?)") &&
                                                   Catch::Contains("ops: adam_step, add"));
  o.ops = {"matmul"};
  o.kernels = {"openblass"};
  CHECK_THROWS_WITH(bench::run_bench(o, sink), Catch::Contains("no kernel 'openblass'") && Catch::Contains("naive"));
  o.kernels = {};
  o.shapes = {"matmul:64x64"};
  CHECK_THROWS_WITH(bench::run_bench(o, sink), Catch::Contains("matmul:MxNxK[,ta][,tb][,bB]"));
  o.shapes = {"matmul"};
  CHECK_THROWS_WITH(bench::run_bench(o, sink), Catch::Contains("is not KEY:SPEC"));
  o.shapes = {"conv2d:2x3x7x6,4x5x3x3"};
  o.ops = {};
  CHECK_THROWS_WITH(bench::run_bench(o, sink), Catch::Contains("NxCxHxW,OxCxKHxKW[,sSpP][,nhwc]"));
  std::fclose(sink);
}

// Issue 23 item 5: specs that crashed the bench (a division by zero, a segfault in a naive kernel), tried to
// allocate far more than the machine has, or were silently accepted with garbage after them. Each is refused
// by run_bench before it measures the machine, with one line naming the field at fault.
TEST_CASE("minidl bench: zero, absurd and malformed --shape fields are refused, naming the field",
          "[bench][errors]") {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"conv2d:2x3x7x6,4x3x3x2,s0",
       "bench --shape conv2d:2x3x7x6,4x3x3x2,s0: stride 's0' must be at least 1 (syntax "
       "conv2d:NxCxHxW,OxCxKHxKW[,sSpP][,nhwc])"},
      {"conv2d:2x3x7x6,4x3x3x2,s1x0", "stride 's1x0' must be at least 1"},
      {"conv2d:2x3x7x6,4x3x0x2", "bench --shape conv2d:2x3x7x6,4x3x0x2: KH = 0 must be at least 1"},
      {"max_pool2d:2x3x7x6,k0", "bench --shape max_pool2d:2x3x7x6,k0: window 'k0' must be at least 1"},
      {"max_pool2d:2x3x7x6,k2s0", "bench --shape max_pool2d:2x3x7x6,k2s0: stride 's0' must be at least 1"},
      {"avg_pool2d.backward:2x3x7x6,k2x0", "window 'k2x0' must be at least 1"},
      {"max_pool2d:2x3x7x6,k2p2",
       "max_pool2d: padding 2 along height must be between 0 and half the window (2)"},
      {"gru_sequence:4x2x3,h5,l0",
       "bench --shape gru_sequence:4x2x3,h5,l0: the number of layers 'l0' must be at least 1"},
      {"lstm_sequence:4x2x3,h5,l0",
       "bench --shape lstm_sequence:4x2x3,h5,l0: the number of layers 'l0' must be at least 1"},
      {"lstm_sequence:4x2x3,h0", "the hidden size 'h0' must be at least 1"},
      {"gru_sequence:4x2x3,l2", "the hidden size hH is required"},
      {"matmul:4294967297x1x1",
       "bench --shape matmul:4294967297x1x1: M = 4294967297 is larger than 2147483647 (the largest size the kernels "
       "take)"},
      {"matmul:99999999999999999999999x1x1", "M = 99999999999999999999999 is larger than 2147483647"},
      {"matmul:0x4x4", "M = 0 must be at least 1"},
      {"matmul:2147483647x2147483647x2147483647", "a [1,2147483647,2147483647] has more than"},
      {"matmul:4x4x4,b0", "the batch 'b0' must be at least 1"},
      {"ctc_loss:6x2x5,s0", "the number of targets 's0' must be at least 1"},
      {"ctc_loss:6x2x1,s1", "C = 1 must be at least 2"},
      {"gather:2x5x3,k0", "the number of indices 'k0' must be at least 1"},
      // Garbage after a number, a trailing comma, a missing or repeated field, an unknown option.
      {"relu:4x4x4abc", "bench --shape relu:4x4x4abc: '4x4x4abc' is not a list of sizes like 64x32x26 ('a' after '4x4x4')"},
      {"relu:4x4x4,", "bench --shape relu:4x4x4,: part 2 is empty (a comma too many)"},
      {"matmul:4x4x4,", "part 2 is empty (a comma too many)"},
      {"conv2d:2x3x7x6,4x3x3x2,", "part 3 is empty (a comma too many)"},
      {"sgd_step:3x4,,5", "part 2 is empty (a comma too many)"},
      {"matmul:4x4", "'4x4' has 2 size(s); expected 3 (M x N x K)"},
      {"matmul:4x4x4x4", "'4x4x4x4' has more than 3 size(s); expected 3 (M x N x K)"},
      {"relu:4 4", "'4 4' is not a list of sizes like 64x32x26 (' ' after '4')"},
      {"conv2d:2x3x7x6,4x3x3x2,s", "option 's' in 's' needs a number"},
      {"conv2d:2x3x7x6,4x3x3x2,s1d2", "unexpected 'd' in 's1d2'"},
      {"max_pool2d:2x3x7x6,k2k3", "option 'k' is given twice"},
      {"gru_sequence:4x2x3,h5,h6", "option 'h' is given twice"},
      {"matmul:7x5x3,ta,ta", "option 'ta' is given twice"},
      {"matmul:7x5x3,tx", "unknown option 'tx' (options: ta, tb, bB)"},
      {"gru_cell:3x4x5", "'3x4x5' has more than 2 size(s); expected 2 (N x H)"},
      {"copy:5x7,t,t", "expected 1 to 2 comma-separated part(s)"},
  };
  std::FILE* sink = std::tmpfile();
  for (const auto& [spec, message] : bad) {
    bench::BenchOptions o = tiny_options();
    o.shapes = {spec};
    INFO(spec);
    REQUIRE_THROWS_WITH(bench::run_bench(o, sink), Catch::Contains(message));
  }
  // A valid spec whose tensors (8 TB) pass this machine's free memory: refused, with both numbers.
  bench::BenchOptions o = tiny_options();
  o.shapes = {"matmul:2000000000x2x1,b1000"};
  REQUIRE_THROWS_WITH(bench::run_bench(o, sink),
                      Catch::StartsWith("bench --shape matmul:2000000000x2x1,b1000: this case needs 24 TB for its "
                                        "tensors, more than the ") &&
                          Catch::Contains(" on the CPU ("));
  std::fclose(sink);
}

TEST_CASE("minidl bench: every default and example spec reads, and its tensors are counted", "[bench]") {
  for (const bench::CaseFamily& family : bench::case_families())
    for (const bench::CaseKey& k : family.keys) {
      INFO(k.key);
      for (const bench::DefaultShape& shape : family.defaults) {
        INFO(shape.spec);
        CHECK(family.check(k.key, shape.spec) > 0);
      }
      // The count covers at least the outputs the case compares.
      manual_seed(1);
      const bench::BenchCase c = family.make(k.key, family.example, Device::cpu());
      double output_bytes = 0;
      for (const Tensor& t : c.outputs()) output_bytes += static_cast<double>(t.numel()) * dtype_size(t.dtype());
      CHECK(family.check(k.key, family.example) >= output_bytes);
      CHECK(bench::check_shape_flag(k.key + ":" + family.example) > 0);
    }
  CHECK_THROWS_WITH(bench::check_shape_flag("conv2d:2x3x7x6,4x3x3x2,s0"), Catch::Contains("stride 's0'"));
  CHECK_THROWS_WITH(bench::check_shape_flag("matmull:4x4x4"), Catch::Contains("unknown op 'matmull'"));
}

TEST_CASE("minidl kernels: priorities and signatures, filters, and an error for an unknown op", "[kernels]") {
  const std::string matmul = printed_by([](std::FILE* f) { print_kernel_table(f, {"matmul"}, "cpu"); });
  INFO(matmul);
  CHECK_THAT(matmul, Catch::Contains("prio") && Catch::Contains("signature"));
  int kernel_lines = 0;
  for (const std::string& line : lines_of(matmul)) {
    const std::vector<std::string> w = words(line);
    if (w.size() < 6 || w[0] != "matmul") continue;
    ++kernel_lines;
    CHECK(w[2] == "cpu");
    CHECK_THAT(line, Catch::Contains(" MatmulKernel "));
    if (w[3] == "naive") CHECK(w[4] == "0");
    if (w[3] == "ikj") CHECK(w[4] == "1");
  }
  CHECK(kernel_lines == static_cast<int>(kernels_for("matmul", DeviceType::cpu).size()));
  // A key filters its stage only; an op all its stages.
  const std::string conv = printed_by([](std::FILE* f) { print_kernel_table(f, {"conv2d"}, "all"); });
  CHECK_THAT(conv, Catch::Contains("backward_input") && Catch::Contains("Conv2dBackwardWeightKernel"));
  const std::string stage = printed_by([](std::FILE* f) { print_kernel_table(f, {"conv2d.backward_input"}, "cpu"); });
  CHECK_THAT(stage, Catch::Contains("backward_input") && !Catch::Contains("backward_weight"));
  CHECK_THROWS_WITH(print_kernel_table(stdout, {"matmull"}, "all"),
                    Catch::Contains("unknown op 'matmull' (did you mean 'matmul'?); ops: adam_step, add,"));
  CHECK_THROWS_WITH(print_kernel_table(stdout, {"matmul"}, "tpu"), Catch::Contains("devices: cpu, cuda, all"));
}

TEST_CASE("MINIDL_LOG_DISPATCH=1 logs each served kernel once, naming the kernels that declined first",
          "[dispatch]") {
  KernelRegistry& registry = KernelRegistry::instance();
  SelectionReset reset;
  const int saved = registry.log_level();
  const Tensor strided = uniform({3, 4}, -1, 1, DType::float32).transpose(0, 1);
  const Tensor plain = uniform({3, 4}, -1, 1, DType::float32);
  registry.set_log_level(1);
  const std::string log = captured_stderr([&] {
    for (int step = 0; step < 3; ++step) {
      (void)strided.contiguous();  // copy: memcpy declines the strided source, rows_omp serves
      (void)plain.clone();         // copy: memcpy serves
    }
  });
  registry.set_log_level(saved);
  INFO(log);
  int after_decline = 0, plain_lines = 0, decline_lines = 0;
  for (const std::string& line : lines_of(log)) {
    if (line.find(" copy ") == std::string::npos) continue;
    after_decline += line.find("-> rows_omp (after memcpy declined)") != std::string::npos;
    plain_lines += line.find("-> memcpy") != std::string::npos;
    decline_lines += line.find("declined, trying") != std::string::npos;
  }
  CHECK(after_decline == 1);
  CHECK(plain_lines == 1);
  CHECK(decline_lines == 0);  // level 2 shows each decline; level 1 folds them into the served line
}

TEST_CASE("docs/adding-a-kernel.md shows its example kernels, cpu/matmul_ikj.cpp and cuda/matmul_v1_naive.cu, as "
          "they are in the tree",
          "[guide]") {
  const std::string root = MINIDL_SOURCE_DIR;
  const std::string guide = read_file(root + "/docs/adding-a-kernel.md");
  const std::string kernel = read_file(root + "/cpu/matmul_ikj.cpp");
  CHECK_THAT(guide, Catch::Contains("```cpp\n" + kernel + "```"));
  CHECK_THAT(read_file(root + "/cpu/kernel_files.h"), Catch::Contains("MINIDL_KERNEL_FILE(register_matmul_ikj_cpu)"));
  CHECK_THAT(guide, Catch::Contains("MINIDL_KERNEL_FILE(register_matmul_ikj_cpu)"));
  // The CUDA section's example (tests/docs_cuda_kernel_test.sh runs its commands).
  const std::string cuda_kernel = read_file(root + "/cuda/matmul_v1_naive.cu");
  CHECK_THAT(guide, Catch::Contains("```cpp\n" + cuda_kernel + "```"));
  CHECK_THAT(read_file(root + "/cuda/kernel_files.h"), Catch::Contains("MINIDL_KERNEL_FILE(register_matmul_v1_naive_cuda)"));
  CHECK_THAT(guide, Catch::Contains("MINIDL_KERNEL_FILE(register_matmul_v1_naive_cuda)"));
}
