// tests/test_compare.cpp — `minidl plot` and `minidl compare`: the --metrics reader (skipped lines named by
// file and line), axis ticks, the --y name mapping, well-formed SVG for runs of different lengths, the
// speed-up taken from images/s, and a real compare run on a small MNIST fixture written here (CPU only
// without a GPU, saying why; both sides with one). The SVG checker is tools/svg.h's, tested here too.
// tests/compare_test.sh drives the `minidl` command itself (exit statuses, Ctrl-C).
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "tools/compare.h"
#include "tools/metrics_log.h"
#include "tools/plot.h"
#include "tools/svg.h"

using namespace minidl;

namespace {

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/minidl_test_compare_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string file(const std::string& name) const { return path + "/" + name; }
  std::string path;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// What mnist train --metrics writes, for `epochs` epochs of `images` images taking `seconds[e]` each.
std::string mnist_metrics(int epochs, double images, const std::vector<double>& seconds, const std::string& device) {
  std::string text;
  for (int e = 1; e <= epochs; ++e) {
    const double s = seconds[e - 1];
    text += str_cat("{\"epoch\":", e, ",\"step\":", e * 10, ",\"images\":", images, ",\"train_loss\":", 1.0 / e,
                    ",\"train_accuracy\":", 0.9 + 0.01 * e, ",\"test_loss\":", 1.2 / e, ",\"test_accuracy\":",
                    0.85 + 0.01 * e, ",\"seconds\":", s + 0.5, ",\"train_seconds\":", s, ",\"images_per_second\":",
                    images / s, ",\"device\":\"", device, "\",\"batch_size\":64,\"lr\":0.001}\n");
  }
  return text;
}

// What captcha train --metrics writes (other keys: loss, val_loss, val_accuracy, val_char_accuracy).
std::string captcha_metrics(int epochs) {
  std::string text;
  for (int e = 1; e <= epochs; ++e)
    text += str_cat("{\"epoch\":", e, ",\"step\":", e * 500, ",\"images\":64000,\"loss\":", 2.0 / e,
                    ",\"val_loss\":", 2.5 / e, ",\"val_accuracy\":", 0.1 * e, ",\"val_char_accuracy\":", 0.2 * e,
                    ",\"seconds\":12,\"train_seconds\":11,\"images_per_second\":5818,\"lr\":0.001,"
                    "\"device\":\"cuda:0\",\"rnn\":\"gru\",\"gru\":\"sequence\"}\n");
  return text;
}

// A small stand-in for MNIST: the four IDX files, image i of label i % 10 lights a band of rows that
// depends on the label.
void write_mnist_fixture(const std::string& dir, int train, int test) {
  auto write_set = [&](const std::string& images_name, const std::string& labels_name, int n) {
    std::ofstream images(dir + "/" + images_name, std::ios::binary), labels(dir + "/" + labels_name, std::ios::binary);
    auto be32 = [](std::ofstream& f, uint32_t v) {
      for (int shift = 24; shift >= 0; shift -= 8) f.put(static_cast<char>((v >> shift) & 0xff));
    };
    be32(images, 0x803), be32(images, static_cast<uint32_t>(n)), be32(images, 28), be32(images, 28);
    be32(labels, 0x801), be32(labels, static_cast<uint32_t>(n));
    for (int i = 0; i < n; ++i) {
      const int label = i % 10;
      labels.put(static_cast<char>(label));
      for (int p = 0; p < 28 * 28; ++p) {
        const int row = p / 28;
        const bool lit = row >= 2 + 2 * label && row < 4 + 2 * label;
        images.put(static_cast<char>(lit ? 200 + (p * 13 + i) % 50 : (p * 7 + i * 3) % 40));
      }
    }
    REQUIRE(images.good());
    REQUIRE(labels.good());
  };
  write_set("train-images-idx3-ubyte", "train-labels-idx1-ubyte", train);
  write_set("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", test);
}

// Runs run_compare, returning its status and what it printed.
std::pair<int, std::string> compare_printing(const CompareOptions& o) {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  int status = -1;
  try {
    status = run_compare(o, f);
  } catch (...) {
    std::fclose(f);
    throw;
  }
  std::rewind(f);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  std::fclose(f);
  return {status, text};
}

}  // namespace

// ---------------------------------------------------------------- the SVG helpers
TEST_CASE("svg: ticks step by 1, 2 or 5 times a power of ten and cover the range", "[plot]") {
  const svg::Ticks t = svg::nice_ticks(0.013, 0.087, 6);
  CHECK(t.step == Approx(0.02));
  CHECK(t.lo == Approx(0.0).margin(1e-12));
  CHECK(t.hi == Approx(0.1));
  REQUIRE(t.values.size() == 6);
  CHECK(t.label(t.values[1]) == "0.02");
  CHECK(t.label(t.values[0]) == "0.00");

  const svg::Ticks epochs = svg::nice_ticks(1, 3, 8, /*integers=*/true);
  CHECK(epochs.step == 1);
  CHECK(epochs.values == std::vector<double>{1, 2, 3});
  CHECK(epochs.label(2) == "2");

  const svg::Ticks one = svg::nice_ticks(1, 1, 8, true);  // a run of one epoch
  CHECK(one.values == std::vector<double>{0, 1, 2});

  const svg::Ticks steps = svg::nice_ticks(0, 2811, 8, true);
  CHECK(steps.step == 500);
  CHECK(steps.hi == 3000);
  CHECK(steps.values.size() <= 8);

  for (double lo : {-3.7, 0.0, 0.98, 1234.5})
    for (double span : {1e-4, 0.3, 7.0, 5e4}) {
      const svg::Ticks any = svg::nice_ticks(lo, lo + span, 6);
      INFO(lo << " + " << span);
      CHECK(any.values.size() <= 6);
      CHECK(any.lo <= lo + any.step * 1e-9);  // up to rounding: lo = k x step
      CHECK(any.hi >= lo + span - any.step * 1e-9);
      const double mantissa = any.step / std::pow(10.0, std::floor(std::log10(any.step) + 1e-9));
      CHECK((std::fabs(mantissa - 1) < 1e-9 || std::fabs(mantissa - 2) < 1e-9 || std::fabs(mantissa - 5) < 1e-9));
    }
}

TEST_CASE("svg: the well-formedness check finds what a browser would refuse", "[plot]") {
  CHECK(svg::problems(svg::open(10, 10) + "<text x=\"1\">a &amp; b</text>" + svg::close()) == "");
  CHECK(svg::problems("<svg><g></svg>") != "");
  CHECK(svg::problems("<svg><text>a & b</text></svg>") == "a bare '&' in text");
  CHECK(svg::problems("<svg><rect x=1/></svg>") != "");
  CHECK(svg::problems("<svg></svg><svg></svg>") != "");
  CHECK(svg::problems("junk<svg></svg>") != "");
  CHECK(svg::problems("<svg><text>1 < 2</text></svg>") != "");
  CHECK(svg::problems("") == "no <svg> root");
  CHECK(svg::escape("a<b & \"c\">") == "a&lt;b &amp; &quot;c&quot;&gt;");
}

// ---------------------------------------------------------------- the reader and the mapping
TEST_CASE("metrics log: numbers and strings kept, bad lines skipped by file:line, an empty file refused",
          "[plot]") {
  const MetricsLog log = parse_metrics_log(
      "{\"epoch\":1,\"train_loss\":0.5,\"device\":\"cpu\",\"flag\":true,\"nan\":null}\n"
      "\n"
      "not json at all\n"
      "[1,2]\n"
      "{\"device\":\"cpu\"}\n"
      "{\"epoch\":2,\"train_loss\":0.25}\n"
      "{\"epoch\":3,\"train_lo",  // a run killed in the middle of a write
      "run.jsonl");
  REQUIRE(log.records.size() == 2);
  CHECK(log.records[0].line == 1);
  CHECK(log.records[0].get("train_loss") == 0.5);
  CHECK(log.records[0].text("device") == "cpu");
  CHECK_FALSE(log.records[0].has("flag"));
  CHECK_FALSE(log.records[0].has("nan"));
  CHECK(log.records[1].line == 6);
  REQUIRE(log.warnings.size() == 4);
  CHECK(log.warnings[0] == "run.jsonl:3: not JSON (skipped)");
  CHECK(log.warnings[1] == "run.jsonl:4: not a JSON object (skipped)");
  CHECK(log.warnings[2] == "run.jsonl:5: no numbers (skipped)");
  CHECK(log.warnings[3] == "run.jsonl:7: not JSON (skipped)");
  CHECK(log.numeric_keys() == std::vector<std::string>{"epoch", "train_loss"});

  CHECK_THROWS_WITH(parse_metrics_log("", "empty.jsonl"), Catch::Contains("empty.jsonl: no metrics in it"));
  CHECK_THROWS_WITH(parse_metrics_log("garbage\n", "bad.jsonl"), Catch::Contains("bad.jsonl:1: not JSON"));
  CHECK_THROWS_WITH(read_metrics_log("/nonexistent/run.jsonl"), Catch::Contains("/nonexistent/run.jsonl"));
}

TEST_CASE("plot: --y loss and accuracy draw the train, test and val variants", "[plot]") {
  const MetricsLog mnist = parse_metrics_log(mnist_metrics(2, 600, {1, 1}, "cpu"), "mnist.jsonl");
  const MetricsLog captcha = parse_metrics_log(captcha_metrics(2), "captcha.jsonl");
  CHECK(keys_for("loss", mnist) == std::vector<std::string>{"train_loss", "test_loss"});
  CHECK(keys_for("accuracy", mnist) == std::vector<std::string>{"train_accuracy", "test_accuracy"});
  CHECK(keys_for("loss", captcha) == std::vector<std::string>{"loss", "val_loss"});
  CHECK(keys_for("accuracy", captcha) == std::vector<std::string>{"val_accuracy"});  // not val_char_accuracy
  CHECK(keys_for("val_char_accuracy", captcha) == std::vector<std::string>{"val_char_accuracy"});
  CHECK(keys_for("images_per_second", mnist) == std::vector<std::string>{"images_per_second"});
  CHECK(keys_for("bleu", mnist).empty());
  CHECK(run_label("runs/compare/gpu.jsonl") == "gpu");
  CHECK(run_label("metrics.json") == "metrics");
  CHECK(run_label("plain") == "plain");
}

TEST_CASE("plot: two runs of different lengths in one well-formed SVG, a legend entry per run and key",
          "[plot]") {
  std::vector<PlotRun> runs = {
      {"short run", parse_metrics_log(mnist_metrics(2, 600, {1, 1}, "cpu"), "a.jsonl")},
      {"long <run> & co", parse_metrics_log(mnist_metrics(5, 600, {1, 1, 1, 1, 1}, "cpu"), "b.jsonl")}};
  PlotOptions o;
  const std::string drawing = plot_svg(runs, o);
  INFO(drawing.substr(0, 2000));
  CHECK(svg::problems(drawing) == "");
  // One marker (with its <title>) per point: (2 + 5 epochs) x 2 keys x 2 panels.
  CHECK(count(drawing, "<title>") == 28);
  // The legend names each series; the label is escaped.
  CHECK(count(drawing, ">short run: train_loss</text>") == 1);
  CHECK(count(drawing, ">long &lt;run&gt; &amp; co: test_accuracy</text>") == 1);
  // The x axis covers the longer run: epochs 1 to 5.
  CHECK(count(drawing, "text-anchor=\"middle\">5</text>") == 2);  // an x tick label in each panel
  CHECK_THAT(drawing, Catch::Contains("loss, accuracy against epoch"));

  // Against the step, and one panel per --y name.
  o.x = "step";
  o.y = {"images_per_second"};
  const std::string by_step = plot_svg(runs, o);
  CHECK(svg::problems(by_step) == "");
  CHECK(count(by_step, "<title>") == 7);
  CHECK(count(by_step, "text-anchor=\"middle\">50</text>") == 1);  // step 50 = epoch 5 of the long run
}

TEST_CASE("plot: what cannot be drawn is an error naming the file and what it holds", "[plot]") {
  std::vector<PlotRun> runs = {
      {"old", parse_metrics_log("{\"epoch\":1,\"train_loss\":0.5}\n{\"epoch\":2,\"train_loss\":0.4}\n", "old.jsonl")}};
  PlotOptions o;
  o.x = "step";
  CHECK_THROWS_WITH(plot_svg(runs, o), Catch::Contains("old.jsonl: no 'step' in its records") &&
                                           Catch::Contains("epoch, train_loss"));
  o.x = "epoch";
  o.y = {"accuracy"};
  CHECK_THROWS_WITH(plot_svg(runs, o), Catch::Contains("--y accuracy: no run has 'accuracy'") &&
                                           Catch::Contains("old.jsonl has epoch, train_loss"));
  o.y = {"loss"};
  CHECK(svg::problems(plot_svg(runs, o)) == "");
}

TEST_CASE("plot: plot_files reads files, reports skipped lines and writes the SVG", "[plot]") {
  TempDir dir;
  {
    std::ofstream(dir.file("a.jsonl")) << mnist_metrics(3, 600, {1, 1, 1}, "cpu") << "{broken\n";
    std::ofstream(dir.file("b.jsonl")) << captcha_metrics(1);
  }
  std::FILE* messages = std::tmpfile();
  plot_files({dir.file("a.jsonl"), dir.file("b.jsonl")}, {"mnist"}, dir.file("out.svg"), PlotOptions(), messages);
  std::rewind(messages);
  char line[512] = {};
  REQUIRE(std::fgets(line, sizeof(line), messages) != nullptr);
  std::fclose(messages);
  CHECK_THAT(std::string(line), Catch::Contains("a.jsonl:4: not JSON (skipped)"));
  const std::string drawing = read_text(dir.file("out.svg"));
  CHECK(svg::problems(drawing) == "");
  CHECK(count(drawing, ">mnist: test_loss</text>") == 1);
  CHECK(count(drawing, ">b: val_accuracy</text>") == 1);  // the second file: its name
  // Two files of the same name are told apart by their folders.
  std::filesystem::create_directories(dir.file("gpu"));
  std::filesystem::create_directories(dir.file("cpu"));
  std::ofstream(dir.file("gpu/run.jsonl")) << mnist_metrics(2, 600, {1, 1}, "cuda:0");
  std::ofstream(dir.file("cpu/run.jsonl")) << mnist_metrics(1, 600, {1}, "cpu");
  plot_files({dir.file("gpu/run.jsonl"), dir.file("cpu/run.jsonl")}, {}, dir.file("same.svg"), PlotOptions(), stderr);
  const std::string same = read_text(dir.file("same.svg"));
  CHECK(count(same, ">gpu/run: train_loss</text>") == 1);
  CHECK(count(same, ">cpu/run: train_loss</text>") == 1);
  CHECK_THROWS_WITH(plot_files({dir.file("a.jsonl")}, {"x", "y"}, dir.file("o.svg"), PlotOptions(), stderr),
                    Catch::Contains("2 --label for 1 file"));
  CHECK_THROWS_WITH(plot_files({dir.path}, {}, dir.file("o.svg"), PlotOptions(), stderr),
                    "metrics log: '" + dir.path + "' is a directory, not a file");
}

// ---------------------------------------------------------------- the table
TEST_CASE("compare: the speed-up is per image, from images/s, and a limited CPU run is marked", "[compare]") {
  // The GPU: 3 epochs of 60,000 images in 1.0 + 0.5 + 0.5 s (a slow first epoch). The CPU, limited:
  // 3 epochs of 6,000 images in 2 s each. Per epoch the CPU looks only 2-4x slower; per image it is 30x.
  Comparison c;
  c.example = "mnist";
  c.has_gpu = true;
  c.gpu_name = "GPU cuda:0 (Test GPU)";
  c.cpu_name = "CPU, 2 threads";
  c.gpu = summarize_run(parse_metrics_log(mnist_metrics(3, 60000, {1.0, 0.5, 0.5}, "cuda:0"), "gpu.jsonl"));
  c.cpu = summarize_run(parse_metrics_log(mnist_metrics(3, 6000, {2, 2, 2}, "cpu"), "cpu.jsonl"));
  c.cpu_limit = 6000;
  c.gpu_command = "mnist train --device cuda";
  c.cpu_command = "mnist train --device cpu --limit 6000";
  CHECK(c.gpu.device == "cuda:0");
  CHECK(c.gpu.epochs == 3);
  CHECK(c.gpu.images_per_second == Approx(90000));
  CHECK(c.gpu.images_per_second_after_first == Approx(120000));
  CHECK(c.cpu.images_per_second == Approx(3000));
  CHECK(c.cpu.heldout == "test");
  CHECK(c.cpu.heldout_accuracy == Approx(0.88));
  CHECK(c.cpu_limited());

  const std::string table = comparison_table(c);
  INFO(table);
  CHECK_THAT(table, Catch::Contains("| | GPU cuda:0 (Test GPU) | CPU, 2 threads |"));
  CHECK_THAT(table, Catch::Contains("| training images per epoch | 60,000 | 6,000 (--cpu-limit) |"));
  CHECK_THAT(table, Catch::Contains("| **images/s, training** | **90,000** | **3,000** |"));
  CHECK_THAT(table, Catch::Contains("| images/s, epochs after the first | 120,000 | 3,000 |"));
  CHECK_THAT(table, Catch::Contains("| final test accuracy | 88.00% | 88.00% * |"));
  CHECK_THAT(table, Catch::Contains("**Speed-up per image: 30.0x**"));
  CHECK_THAT(table, Catch::Contains("40.0x over the epochs after the first"));
  CHECK_THAT(table, Catch::Contains("the GPU run's 180,000 training images would take about 60 s on the CPU"));
  CHECK_THAT(table, Catch::Contains("limited to 6,000 training images per epoch (--cpu-limit 6000)") &&
                        Catch::Contains("not comparable"));
  CHECK_THAT(table, Catch::Contains("    mnist train --device cpu --limit 6000"));

  // A limit at least as large as the data limits nothing, and the table says so.
  c.cpu = summarize_run(parse_metrics_log(mnist_metrics(3, 60000, {20, 20, 20}, "cpu"), "cpu.jsonl"));
  c.cpu_limit = 100000;
  CHECK_FALSE(c.cpu_limited());
  const std::string unlimited = comparison_table(c);
  CHECK_THAT(unlimited, Catch::Contains("--cpu-limit 100000 did not limit the CPU run"));
  CHECK_THAT(unlimited, Catch::Contains("| final test accuracy | 88.00% | 88.00% |"));
  CHECK_THAT(unlimited, Catch::Contains("**Speed-up per image: 30.0x**"));
}

TEST_CASE("compare: without a GPU the table has the CPU column and the reason", "[compare]") {
  Comparison c;
  c.example = "captcha";
  c.no_gpu_reason = "this build has no CUDA support";
  c.cpu_name = "CPU, 2 threads";
  std::string text = captcha_metrics(2);
  c.cpu = summarize_run(parse_metrics_log(text, "cpu.jsonl"));
  c.cpu_command = "captcha train --device cpu";
  CHECK(c.cpu.heldout == "validation");
  CHECK(c.cpu.train_loss == Approx(1.0));
  const std::string table = comparison_table(c);
  INFO(table);
  CHECK_THAT(table, Catch::Contains("| | CPU, 2 threads |\n|---|---:|\n"));
  CHECK_THAT(table, Catch::Contains("| final validation accuracy | 20.00% |"));
  CHECK_THAT(table, Catch::Contains("No GPU run: this build has no CUDA support."));
  CHECK_THAT(table, !Catch::Contains("Speed-up"));
  CHECK_THAT(table, !Catch::Contains("final training accuracy"));  // captcha does not write it
}

// ---------------------------------------------------------------- a real run
TEST_CASE("compare: bad options fail before anything runs", "[compare]") {
  TempDir dir;
  CompareOptions o;
  o.out = dir.file("out");
  o.extra = {"--device", "cpu"};
  CHECK_THROWS_WITH(compare_printing(o), Catch::Contains("--device is set by compare itself"));
  o.extra = {"--limit=5"};
  o.cpu_limit = 10;
  CHECK_THROWS_WITH(compare_printing(o), Catch::Contains("--limit is set by compare itself") &&
                                             Catch::Contains("use --cpu-limit alone"));
  o.extra = {"mnist"};
  CHECK_THROWS_WITH(compare_printing(o), Catch::Contains("unexpected 'mnist'"));
  o.extra = {};
  o.example = "captcha";
  o.data = dir.path;
  CHECK_THROWS_WITH(compare_printing(o), Catch::Contains("only generated captchas have"));
  o.example = "mnist";
  o.program_dir = dir.path;  // no programs there
  CHECK_THROWS_WITH(compare_printing(o), Catch::Contains("mnist' is missing") && Catch::Contains("make"));
  CHECK(access(o.out.c_str(), F_OK) != 0);  // nothing was made
}

TEST_CASE("compare: a real mnist run on a fixture with --cpu-limit: the table, both files, a failing run",
          "[compare]") {
  TempDir dir;
  // The data in a folder of its own: an output inside the --data folder is refused (nn/files.h).
  const std::string data = dir.file("data");
  std::filesystem::create_directory(data);
  write_mnist_fixture(data, 300, 50);
  CompareOptions o;
  o.data = data;
  o.epochs = 1;
  o.cpu_limit = 128;
  o.out = dir.file("out");
  o.extra = {"--batch", "32"};  // 4 steps on the CPU: the fewest the one-cycle schedule takes
  const auto [status, printed] = compare_printing(o);
  INFO(printed);
  REQUIRE(status == 0);
  const std::string why = why_no_gpu();
  if (why.empty()) {
    CHECK_THAT(printed, Catch::Contains("is usable: it trains first"));
    CHECK_THAT(printed, Catch::Contains("[gpu] mnist: device cuda:0 (--device cuda)"));
    CHECK(printed.find("[gpu] ") < printed.find("[cpu] "));
  } else {
    CHECK_THAT(printed, Catch::Contains("compare: no GPU run (" + why + "): running the CPU side only"));
    CHECK_THAT(printed, !Catch::Contains("[gpu] "));
  }
  CHECK_THAT(printed, Catch::Contains("[cpu] mnist: device cpu (--device cpu)"));
  CHECK_THAT(printed, Catch::Contains("[cpu] mnist: data from " + data + ": 128 training images (--limit)"));
  CHECK_THAT(printed, Catch::Contains("[cpu] final test accuracy"));

  const std::string table = read_text(o.out + "/table.md");
  CHECK_THAT(printed, Catch::Contains(table));
  CHECK_THAT(table, Catch::Contains("| training images per epoch |"));
  CHECK_THAT(table, Catch::Contains(" 128 (--cpu-limit) |"));
  CHECK_THAT(table, Catch::Contains("--device cpu --seed 1 --metrics " + o.out + "/cpu.jsonl --data " + data +
                                    " --epochs 1 --limit 128 --batch 32"));
  CHECK_THAT(table, Catch::Contains(why.empty() ? "Speed-up per image" : "No GPU run: " + why));

  const MetricsLog cpu = read_metrics_log(o.out + "/cpu.jsonl");
  REQUIRE(cpu.records.size() == 1);
  CHECK(cpu.records[0].get("images") == 128);
  CHECK(cpu.records[0].get("step") == 4);
  CHECK(cpu.records[0].text("device") == "cpu");
  CHECK_THAT(read_text(o.out + "/cpu.log"), Catch::Contains("final test accuracy"));
  CHECK(svg::problems(read_text(o.out + "/curves.svg")) == "");
  CHECK_THAT(read_text(o.out + "/curves.svg"), Catch::Contains("CPU (--cpu-limit 128): test_loss"));
  if (why.empty()) CHECK(read_metrics_log(o.out + "/gpu.jsonl").records[0].get("images") == 300);

  // A run that fails: compare stops, names the log, and writes no table.
  o.data = dir.file("no_such_folder");
  const auto [failed, failure] = compare_printing(o);
  INFO(failure);
  CHECK(failed == 1);
  CHECK_THAT(failure, Catch::Contains(" run failed (exit status 1); its output is in " + o.out));
  CHECK(access((o.out + "/table.md").c_str(), F_OK) != 0);
}
