// tools/minidl.cpp — the `minidl` command: inspect the build and the dispatch table, time kernels, compare
// a training run on the GPU and the CPU, and plot training curves.
//   minidl kernels [--op OP]... [--device cpu|cuda]   every registered kernel: op, stage, device, name,
//                                                      priority, default, signature, description
//   minidl info                                        devices, driver/runtime/library versions, build,
//                                                      settings from the environment, dist backends
//   minidl bench [--op OP]... [--kernel NAME]... [--device cpu|cuda] [--shape KEY:SPEC]... [--repeat N]
//                [--json FILE] [--csv FILE] [--svg FILE]   every kernel of every key, timed and checked
//                [--baseline OLD.json [--regression-threshold PCT] [--against NEW.json]]
//                                                      (tools/bench/, docs/results/benchmarks.md)
//   minidl bench --op OP --shape-sweep LO:HI:xF|+S [--sweep-spec SPEC] [--csv FILE] [--svg FILE]
//   minidl compare [--example mnist|captcha] [--data DIR] [--epochs N] [--cpu-limit N] [--seed N]
//                  [--out DIR] [-- FLAGS...]           the same training on the GPU and the CPU, side by side
//                                                      (tools/compare.h, docs/compare.md)
//   minidl plot METRICS.jsonl... -o FILE.svg|FILE.png [--x epoch|step|time] [--y loss,accuracy] [--label NAME]...
//                                                      training curves of --metrics files (tools/plot.h)
#include <CLI/CLI.hpp>
#include <cstdio>

#include "core/backend.h"
#include "core/dispatch.h"
#include "core/info.h"
#include "core/strings.h"
#include "dist/communicator.h"
#include "examples/flags.h"
#include "tools/bench/baseline.h"
#include "tools/bench/bench.h"
#include "tools/bench/case.h"
#include "tools/bench/sweep.h"
#include "tools/compare.h"
#include "tools/kernel_table.h"
#include "tools/plot.h"
#include "tools/settings.h"
#include "nn/files.h"
#include "nn/metrics.h"

using namespace minidl;

// The --shape syntax of every key, for `minidl bench --help`.
static std::string shape_syntax_help() {
  std::string help = "Shapes (--shape KEY:SPEC; KEY an op or a key; repeat for several):\n";
  for (const bench::CaseFamily& family : bench::case_families()) {
    const std::string keys = join(family.keys, " ", [](const bench::CaseKey& k) { return k.key; });
    help += "  " + keys + "\n      " + family.syntax + "   " + family.syntax_help + " (e.g. " + family.example + ")\n";
    const std::string defaults = join(family.defaults, ", ", [](const bench::DefaultShape& d) {
      return (d.spec.size() > 32 ? d.label : d.spec) + (d.device.empty() ? "" : " (" + d.device + ")");
    });
    help += "      default: " + defaults + "\n";
  }
  help += "Sizes are whole numbers from 1 to 2147483647, each option is given at most once, and a case must fit the "
          "device's free memory (docs/results/benchmarks.md).\n";
  help += "e.g. --shape matmul:4096x4096x4096 --shape conv2d:128x64x32x32,128x64x3x3,s1p1\n";
  help += "\nSweeps (--op OP --shape-sweep LO:HI:xF or LO:HI:+S): each size n goes where the letter n is in "
          "--sweep-spec (default: matmul nxnxn, conv2d 8xnx16x16,nxnx3x3,s1p1); --csv and --svg get one line per "
          "kernel.\n  e.g. --op matmul --shape-sweep 64:1024:x2 --csv sweep.csv --svg sweep.svg\n";
  help += "\nBaselines (--baseline OLD.json, a file of --json): the same cases again, each kernel's median against "
          "the old one, faster / slower / same within the noise of both runs; exit 3 when one is slower beyond "
          "--regression-threshold (10%) and the noise. Exit 2: some kernel WRONG (on a timed shape, or on its "
          "key's ragged shape).\n";
  return help;
}

int main(int argc, char** argv) {
  CLI::App app{"minidl: a small deep-learning framework. Inspect the build and its kernels, compare devices, "
               "plot training curves."};
  app.require_subcommand(1);
  std::vector<std::string> kernel_flags;
  app.add_option("--kernel", kernel_flags, "select a kernel, OP=NAME (repeatable)");

  std::vector<std::string> list_ops;
  std::string list_device = "all";
  CLI::App* kernels = app.add_subcommand("kernels", "list the registered kernels of the dispatch table");
  kernels->add_option("--op", list_ops, "only this op or key (repeatable)");
  kernels->add_option("--device", list_device, "cpu, cuda or all (default all)");

  CLI::App* info = app.add_subcommand("info", "devices, library versions and build configuration");

  bench::BenchOptions b;
  CLI::App* bench = app.add_subcommand("bench", "time and check every kernel of every key (or of --op)");
  bench->add_option("--op", b.ops, "only this op or key (repeatable; default: every key)");
  bench->add_option("--kernel", b.kernels, "only kernels of this name (repeatable; naive above "
                                           "5e8 FLOP runs only when named)");
  b.device = "";  // run_bench: cpu, or the baseline's device
  bench->add_option("--device", b.device, "cpu, cuda or cuda:N (default cpu, or --baseline's device)");
  bench->add_option("--shape", b.shapes, "KEY:SPEC, replacing the key's default shapes (repeatable; syntax below)");
  bench->add_option("--repeat", b.repeat, "timed calls per kernel and shape, at most (default 20)")
      ->check(examples::number_in(examples::FlagRange::whole<int>(1, 1000000)));
  bench->add_option("--budget", b.budget_seconds,
                    "seconds of timed calls per kernel and shape before fewer are made (default 0.25)")
      ->check(examples::number_in(examples::FlagRange::above(0).with_note("seconds")));
  bench->add_option("--json", b.json_path, "also write JSON Lines to FILE (a machine record, then one per kernel)");
  bench->add_option("--svg", b.svg_path, "also draw GFLOP/s bars and a roofline to FILE (with --shape-sweep: "
                                         "GFLOP/s against the size, a line per kernel)");
  bench->add_option("--csv", b.csv_path, "also write one CSV line per kernel and shape to FILE");
  bench->add_option("--shape-sweep", b.sweep, "LO:HI:xF or LO:HI:+S: time the --op's kernels at each size n "
                                              "(64:1024:x2 is 64, 128, ..., 1024)");
  bench->add_option("--sweep-spec", b.sweep_spec, "the --shape SPEC of a sweep, n where the size goes "
                                                  "(default: matmul nxnxn, conv2d 8xnx16x16,nxnx3x3,s1p1)");
  bench->add_option("--baseline", b.baseline_path, "an earlier --json FILE: run its cases again (unless --op, "
                                                   "--shape or --kernel are given) and compare each kernel's time");
  bench->add_option("--against", b.against_path, "with --baseline: compare this --json FILE with it instead of "
                                                 "running anything (two saved runs)");
  double regression_percent = 10;
  bench->add_option("--regression-threshold", regression_percent,
                    "with --baseline, percent slower (beyond the noise) that exits 3 (default 10)")
      ->check(examples::number_in(examples::FlagRange::real(0, 1e6).with_note("percent")));
  std::string bench_precision;
  examples::add_precision_flag(bench, bench_precision);
  bench->footer(shape_syntax_help());

  CompareOptions c;
  CLI::App* compare = app.add_subcommand(
      "compare", "train the same model with the same seed on the GPU and on the CPU; print a side-by-side table");
  compare->add_option("--example", c.example, "the program: mnist or captcha")
      ->capture_default_str()
      ->check(CLI::IsMember({"mnist", "captcha"}));
  compare->add_option("--data", c.data, "--data for both runs (default: each program finds its own)");
  compare->add_option("--epochs", c.epochs, "epochs of both runs (default: the program's, mnist 3, captcha 20)")
      ->check(examples::number_in(examples::FlagRange::whole<int>(1)));
  compare->add_option("--cpu-limit", c.cpu_limit,
                      "train the CPU on N images per epoch (mnist --limit, captcha --epoch-size: the speed-up per "
                      "image stays fair, the CPU's accuracy is then not comparable; 0: no limit)")
      ->check(examples::number_in(examples::FlagRange::whole<int64_t>(0)));
  compare->add_option("--seed", c.seed, "--seed of both runs")
      ->capture_default_str()
      ->check(examples::number_in(examples::FlagRange::whole<uint64_t>(0)));
  compare->add_option("--out", c.out, "folder for table.md, curves.svg, the runs' metrics and logs")
      ->capture_default_str();
  compare->add_option("flags", c.extra, "after --: more flags for both runs (-- --batch 128 --lr 1e-3)");

  std::vector<std::string> plot_files_given, plot_labels;
  std::string plot_out;
  PlotOptions plot;
  CLI::App* plot_cmd = app.add_subcommand("plot", "draw the loss and accuracy curves of --metrics files as SVG or PNG");
  plot_cmd->add_option("METRICS", plot_files_given, "--metrics files of mnist train or captcha train (JSON Lines)")
      ->required();
  plot_cmd->add_option("-o,--out", plot_out, "the file to write: FILE.png draws PNG (needs cairo), any other SVG")
      ->required();
  plot_cmd->add_option("--x", plot.x, "x axis: epoch, optimizer step, or time since the run started (time, "
                                      "also spelled seconds_since_start)")
      ->capture_default_str()
      ->check(CLI::IsMember({"epoch", "step", "time", "seconds_since_start"}));
  plot_cmd->add_option("--y", plot.y, "one panel per name; loss and accuracy draw their train_, test_ and val_ "
                                      "variants, other names their own key (images_per_second, lr)")
      ->delimiter(',')
      ->capture_default_str();
  plot_cmd->add_option("--label", plot_labels, "the legend's name of each file, in order (default: the file name)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    // A flag error exits 2, as in mnist and captcha (CLI11's own codes, 105 to 115, mean nothing to a shell).
    std::fprintf(stderr, "minidl: %s\nRun `minidl --help` or `minidl <command> --help` for usage.\n",
                 examples::parse_error_message(e).c_str());
    return 2;
  }
  // Flag values CLI11 cannot check alone are usage errors too: exit 2, before any work.
  try {
    // Every MINIDL_* variable (core/settings.h); `info` shows a bad one as INVALID instead.
    if (!*info) check_environment();
    if (*bench) {
      for (const std::string& shape : b.shapes) bench::check_shape_flag(shape);
      b.regression_threshold = regression_percent / 100;
      if (!b.sweep.empty()) bench::plan_sweep(b);
      MINIDL_CHECK(b.sweep_spec.empty() || !b.sweep.empty(), "bench: --sweep-spec needs --shape-sweep");
      MINIDL_CHECK(!bench->count("--regression-threshold") || !b.baseline_path.empty(),
                   "bench: --regression-threshold needs --baseline");
      if (!b.baseline_path.empty()) bench::read_baseline(b.baseline_path);
      if (!b.against_path.empty()) {
        MINIDL_CHECK(!b.baseline_path.empty(), "bench: --against needs --baseline (the run it is compared with)");
        MINIDL_CHECK(b.sweep.empty() && b.json_path.empty() && b.csv_path.empty() && b.svg_path.empty() &&
                         b.ops.empty() && b.shapes.empty() && b.kernels.empty(),
                     "bench: --against compares two saved runs and runs nothing: no --op, --shape, --kernel, "
                     "--shape-sweep, --json, --csv or --svg with it");
        bench::read_baseline(b.against_path, "--against");
      }
      // The outputs must not be one file nor the baseline, and --json must not land on a file that is not
      // a metrics log (a checkpoint given by mistake).
      check_outputs_are_not_inputs({{"--json", b.json_path}, {"--svg", b.svg_path}, {"--csv", b.csv_path}},
                                   {{"--baseline", b.baseline_path}});
      if (!b.json_path.empty()) check_metrics_log(b.json_path, "--json");
    }
    if (*compare) {
      check_compare_options(c);
      check_outputs_are_not_inputs({{"--out", c.out}}, {{"--data", c.data}});
    }
    if (*plot_cmd) {
      std::vector<NamedPath> inputs;
      for (const std::string& f : plot_files_given) inputs.push_back({"METRICS", f});
      check_outputs_are_not_inputs({{"-o", plot_out}}, inputs);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minidl: %s\n", e.what());
    return 2;
  }
  try {
    select_kernels_from_flags(kernel_flags);
    if (*kernels) {
      print_kernel_table(stdout, list_ops, list_device);
      return 0;
    }
    if (*bench) {
      for (const std::string& name : b.kernels)
        MINIDL_CHECK(name.find('=') == std::string::npos, "bench: --kernel takes a kernel name (naive, openblas); "
                                                          "to select OP=NAME put --kernel before `bench`");
      examples::apply_precision_flag(bench_precision);
      return bench::run_bench(b, stdout);
    }
    if (*compare) return run_compare(c, stdout);
    if (*plot_cmd) {
      plot_files(plot_files_given, plot_labels, plot_out, plot, stderr);
      std::printf("plot: wrote %s\n", plot_out.c_str());
      return 0;
    }
    if (*info) {
      std::fputs(system_info_report().c_str(), stdout);
      std::fputs(("\n" + settings_report()).c_str(), stdout);
      std::fputs(("\n" + dist::info_report()).c_str(), stdout);
      return 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minidl: %s\n", e.what());
    return 1;
  }
  return 0;
}
