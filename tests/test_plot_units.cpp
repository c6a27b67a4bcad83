// tests/test_plot_units.cpp — what issue 27 asked of `minidl plot`: axes with units (accuracy in percent,
// images/s, learning rate, time in seconds or minutes), a time axis (--x time), per-step curves from
// --metrics-every records, a note when one run hides another, and real PNG output (its signature and
// size) or, in a build without cairo, a refusal that names the package.
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "tools/compare.h"
#include "tools/metrics_log.h"
#include "tools/plot.h"
#include "tools/svg.h"

using namespace minidl;

namespace {

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// An mnist-like log: per-epoch records (seconds_since_start `seconds_per_epoch` x epoch) and, with
// `every` > 0, per-step records every `every` of 10 steps per epoch.
std::string run_metrics(int epochs, double seconds_per_epoch, int every = 0, double loss_scale = 1) {
  std::string text;
  for (int e = 1; e <= epochs; ++e) {
    for (int s = every; every > 0 && s < 10; s += every) {
      const int step = (e - 1) * 10 + s;
      text += str_cat("{\"epoch\":", e - 1 + s / 10.0, ",\"step\":", step, ",\"every_steps\":", every,
                      ",\"train_loss\":", loss_scale / step, ",\"lr\":0.001,\"seconds_since_start\":",
                      seconds_per_epoch * (e - 1 + s / 10.0), "}\n");
    }
    text += str_cat("{\"epoch\":", e, ",\"step\":", e * 10, ",\"train_loss\":", loss_scale / (10 * e),
                    ",\"train_accuracy\":", 0.9 + 0.01 * e, ",\"test_loss\":", 1.2 / e, ",\"test_accuracy\":",
                    0.85 + 0.01 * e, ",\"seconds_since_start\":", seconds_per_epoch * e,
                    ",\"train_seconds\":", seconds_per_epoch, ",\"images_per_second\":", 6000 / seconds_per_epoch,
                    ",\"lr\":0.001}\n");
  }
  return text;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

uint32_t be32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

}  // namespace

TEST_CASE("plot units: accuracy in percent, images/s, learning rate, time in seconds or minutes", "[plot]") {
  CHECK(axis_unit("accuracy", 0.97).label == "accuracy (%)");
  CHECK(axis_unit("accuracy", 0.97).scale == 100);
  CHECK(axis_unit("val_char_accuracy", 1).label == "val_char_accuracy (%)");
  CHECK(axis_unit("images_per_second", 5000).label == "images/s");
  CHECK(axis_unit("lr", 1e-3).label == "learning rate");
  CHECK(axis_unit("loss", 2).label == "loss");
  CHECK(axis_unit("seconds_since_start", 300).label == "time (s)");
  CHECK(axis_unit("seconds_since_start", 3000).label == "time (min)");
  CHECK(axis_unit("seconds_since_start", 3000).scale == Approx(1.0 / 60));
  CHECK(x_key("time") == "seconds_since_start");
  CHECK(x_key("epoch") == "epoch");

  std::vector<PlotRun> runs = {{"cpu", parse_metrics_log(run_metrics(3, 40), "cpu.jsonl")}};
  PlotOptions o;
  o.y = {"loss", "accuracy", "images_per_second", "lr"};
  const std::string drawing = plot_svg(runs, o);
  CHECK(svg::problems(drawing) == "");
  // The y axis labels (text rotated by its transform) carry the units.
  for (const char* label : {"accuracy (%)", "images/s", "learning rate", "loss"})
    CHECK(occurrences(drawing, str_cat(")\" text-anchor=\"middle\">", label, "</text>")) == 1);
  CHECK(occurrences(drawing, ")\" text-anchor=\"middle\">accuracy</text>") == 0);
  // Accuracy 0.91 to 0.93 and 0.86 to 0.88 is drawn in percent: ticks 86 ... 93, never 0.9.
  CHECK(occurrences(drawing, "text-anchor=\"end\">90</text>") == 1);
  CHECK(occurrences(drawing, "text-anchor=\"end\">0.90</text>") == 0);
  CHECK_THAT(drawing, Catch::Contains("at epoch 3: 93"));  // a marker's tooltip, in percent

  // Against time: seconds under 10 minutes, minutes past them.
  o.x = "time";
  o.y = {"loss"};
  o.title = "loss against time";
  const std::string by_time = plot_svg(runs, o);
  CHECK(svg::problems(by_time) == "");
  CHECK(occurrences(by_time, "text-anchor=\"middle\">time (s)</text>") == 1);
  CHECK(occurrences(by_time, "text-anchor=\"middle\">120</text>") == 1);  // the last epoch ends at 120 s
  runs.push_back({"slow cpu", parse_metrics_log(run_metrics(3, 400), "slow.jsonl")});
  const std::string minutes = plot_svg(runs, o);
  CHECK(occurrences(minutes, "text-anchor=\"middle\">time (min)</text>") == 1);
  CHECK(occurrences(minutes, "text-anchor=\"middle\">20</text>") == 1);  // 1200 s
  o.x = "seconds_since_start";  // the key's own name is the same axis
  CHECK(plot_svg(runs, o) == minutes);

  // A log without the key: the error names the file and what it holds.
  runs.push_back({"old", parse_metrics_log("{\"epoch\":1,\"train_loss\":0.5}\n", "old.jsonl")});
  CHECK_THROWS_WITH(plot_svg(runs, o), Catch::Contains("old.jsonl: no 'seconds_since_start'") &&
                                           Catch::Contains("epoch, train_loss"));
}

TEST_CASE("plot: per-step records draw the training loss every N steps, held-out curves stay per epoch",
          "[plot]") {
  const std::vector<PlotRun> runs = {{"run", parse_metrics_log(run_metrics(2, 10, /*every=*/2), "run.jsonl")}};
  PlotOptions o;
  o.x = "step";
  o.y = {"loss"};
  const std::string drawing = plot_svg(runs, o);
  CHECK(svg::problems(drawing) == "");
  // train_loss: the 8 per-step records (steps 2, 4, 6, 8, 12, ...), not the 2 epoch means; test_loss: 2 epochs.
  CHECK(occurrences(drawing, "<title>run: train_loss at") == 8);
  CHECK(occurrences(drawing, "<title>run: test_loss at") == 2);
  // Against the epoch, the per-step records sit between the epochs (fractional epochs).
  o.x = "epoch";
  const std::string by_epoch = plot_svg(runs, o);
  CHECK_THAT(by_epoch, Catch::Contains("run: train_loss at epoch 0.2: "));
  // `minidl compare`'s table counts the epoch records only.
  const RunSummary summary = summarize_run(runs[0].log);
  CHECK(summary.epochs == 2);
  CHECK(summary.train_loss == Approx(1.0 / 20));
}

TEST_CASE("plot: a run with exactly another's points says so in the legend", "[plot]") {
  const std::string text = run_metrics(2, 10);
  std::vector<PlotRun> runs = {{"A", parse_metrics_log(text, "a.jsonl")}, {"B", parse_metrics_log(text, "b.jsonl")}};
  PlotOptions o;
  o.y = {"loss"};
  const std::string same = plot_svg(runs, o);
  CHECK(occurrences(same, ">B: train_loss (same as A: train_loss)</text>") == 1);
  CHECK(occurrences(same, ">B: test_loss (same as A: test_loss)</text>") == 1);
  runs[1].log = parse_metrics_log(run_metrics(2, 10, 0, /*loss_scale=*/2), "b.jsonl");
  const std::string different = plot_svg(runs, o);
  CHECK(occurrences(different, ">B: train_loss</text>") == 1);            // a different training loss
  CHECK(occurrences(different, ">B: test_loss (same as A: test_loss)</text>") == 1);  // the same test loss
}

TEST_CASE("plot: -o FILE.png writes a PNG of the chart's size, or is refused naming cairo's package", "[plot]") {
  char tmpl[] = "/tmp/minidl_test_plot_XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  {
    std::ofstream(dir + "/a.jsonl") << run_metrics(3, 40);
    std::ofstream(dir + "/b.jsonl") << run_metrics(3, 400);
  }
  PlotOptions o;
  o.x = "time";
  const std::string png = dir + "/t.png", upper = dir + "/T.PNG";
  if (png_supported()) {
    plot_files({dir + "/a.jsonl", dir + "/b.jsonl"}, {"GPU", "CPU"}, png, o, stderr);
    const std::string bytes = read_bytes(png);
    REQUIRE(bytes.size() > 1000);
    CHECK(bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);  // the PNG signature, not SVG text
    CHECK(bytes.compare(12, 4, "IHDR") == 0);
    // The image is the chart's size.
    const Canvas canvas = plot_canvas({{"GPU", parse_metrics_log(run_metrics(3, 40), "a.jsonl")},
                                       {"CPU", parse_metrics_log(run_metrics(3, 400), "b.jsonl")}},
                                      o);
    CHECK(be32(bytes, 16) == static_cast<uint32_t>(canvas.width + 0.5));
    CHECK(be32(bytes, 20) == static_cast<uint32_t>(canvas.height + 0.5));
    CHECK(canvas.width >= 980);
    CHECK(canvas.height > 600);  // two panels
    plot_files({dir + "/a.jsonl"}, {}, upper, o, stderr);  // the extension in any case
    CHECK(read_bytes(upper).compare(0, 4, "\x89PNG") == 0);
    CHECK_THROWS_WITH(plot_files({dir + "/a.jsonl"}, {}, dir + "/none/t.png", o, stderr),
                      Catch::Contains("cannot write '" + dir + "/none/t.png'"));
  } else {
    // A build without cairo's header, or a machine without the library (it is opened at run time).
    WARN("SKIPPED: no cairo here (in the build or on this machine): checking that PNG is refused");
    CHECK_THROWS_WITH(plot_files({dir + "/a.jsonl"}, {}, png, o, stderr),
                      Catch::Contains("cairo") && Catch::Contains("libcairo2") && Catch::Contains("write .svg"));
  }
  // Any other name is SVG.
  plot_files({dir + "/a.jsonl"}, {}, dir + "/t.svg", o, stderr);
  CHECK(read_bytes(dir + "/t.svg").compare(0, 4, "<svg") == 0);
  std::system(("rm -rf '" + dir + "'").c_str());
}
