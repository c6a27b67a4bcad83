// tools/minidl.cpp — the `minidl` command: inspect the build and the dispatch table, and time kernels.
//   minidl kernels [--op OP]... [--device cpu|cuda]   every registered kernel: op, stage, device, name,
//                                                      priority, default, signature, description
//   minidl info                                        devices, driver/runtime/library versions, build,
//                                                      dist backends
//   minidl bench [--op OP]... [--kernel NAME]... [--device cpu|cuda] [--shape KEY:SPEC]... [--repeat N]
//                [--json FILE] [--svg FILE]            every kernel of every key, timed and checked
//                                                      (tools/bench/, docs/benchmarks.md)
#include <CLI/CLI.hpp>
#include <cstdio>

#include "core/dispatch.h"
#include "core/info.h"
#include "dist/communicator.h"
#include "tools/bench/bench.h"
#include "tools/bench/case.h"
#include "tools/kernel_table.h"

using namespace minidl;

// The --shape syntax of every key, for `minidl bench --help`.
static std::string shape_syntax_help() {
  std::string help = "Shapes (--shape KEY:SPEC; KEY an op or a key; repeat for several):\n";
  for (const bench::CaseFamily& family : bench::case_families()) {
    std::string keys;
    for (const bench::CaseKey& k : family.keys) keys += (keys.empty() ? "" : " ") + k.key;
    help += "  " + keys + "\n      " + family.syntax + "   " + family.syntax_help + " (e.g. " + family.example + ")\n";
    std::string defaults;
    for (const bench::DefaultShape& d : family.defaults)
      defaults += (defaults.empty() ? "" : ", ") + (d.spec.size() > 32 ? d.label : d.spec) +
                  (d.device.empty() ? "" : " (" + d.device + ")");
    help += "      default: " + defaults + "\n";
  }
  help += "e.g. --shape matmul:4096x4096x4096 --shape conv2d:128x64x32x32,128x64x3x3,s1p1\n";
  return help;
}

int main(int argc, char** argv) {
  CLI::App app{"minidl: a small deep-learning framework. Inspect the build and its kernels."};
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
  bench->add_option("--device", b.device, "cpu, cuda or cuda:N (default cpu)");
  bench->add_option("--shape", b.shapes, "KEY:SPEC, replacing the key's default shapes (repeatable; syntax below)");
  bench->add_option("--repeat", b.repeat, "timed calls per kernel and shape, at most (default 20)");
  bench->add_option("--budget", b.budget_seconds,
                    "seconds of timed calls per kernel and shape before fewer are made (default 0.25)");
  bench->add_option("--json", b.json_path, "also write JSON Lines to FILE (a machine record, then one per kernel)");
  bench->add_option("--svg", b.svg_path, "also draw GFLOP/s bars and a roofline to FILE");
  bench->footer(shape_syntax_help());

  CLI11_PARSE(app, argc, argv);
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
      return bench::run_bench(b, stdout);
    }
    if (*info) {
      std::fputs(system_info_report().c_str(), stdout);
      std::fputs(("\n" + dist::info_report()).c_str(), stdout);
      return 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minidl: %s\n", e.what());
    return 1;
  }
  return 0;
}
