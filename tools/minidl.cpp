// tools/minidl.cpp — the `minidl` command: inspect the build and the dispatch table.
//   minidl kernels [--op OP]   every registered kernel: op, stage, device, name, default?, description
//   minidl info                devices, driver/runtime/library versions, build configuration, dist backends
//   minidl bench [--op matmul|conv2d|all] [--device cpu|cuda|all] [--repeat N]
//                              GFLOP/s of every registered matmul and conv2d kernel (tools/bench.cpp)
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>

#include "core/dispatch.h"
#include "core/info.h"
#include "dist/communicator.h"

using namespace minidl;

namespace minidl {
int run_bench(const std::string& op, const std::string& device, int repeat);  // tools/bench.cpp
}  // namespace minidl

static int list_kernels(const std::string& only_op) {
  KernelRegistry& registry = KernelRegistry::instance();
  std::printf("%-14s %-18s %-5s %-16s %-8s %s\n", "op", "stage", "dev", "kernel", "default", "description");
  std::map<std::pair<std::string, int>, std::string> defaults;
  for (const KernelInfo* k : registry.all()) {
    if (!only_op.empty() && k->op != only_op) continue;
    const auto id = std::make_pair(k->key, static_cast<int>(k->device));
    if (!defaults.count(id)) defaults[id] = registry.candidates(k->key, k->device).front()->name;
    const std::string stage = k->key.size() > k->op.size() ? k->key.substr(k->op.size() + 1) : "forward";
    std::printf("%-14s %-18s %-5s %-16s %-8s %s\n", k->op.c_str(), stage.c_str(), device_type_name(k->device),
                k->name.c_str(), defaults[id] == k->name ? "*" : "", k->description.c_str());
  }
  std::printf("\n* = default (highest priority; the first choice unless MINIDL_KERNELS or --kernel selects another)\n");
  return 0;
}

int main(int argc, char** argv) {
  CLI::App app{"minidl: a small deep-learning framework. Inspect the build and its kernels."};
  app.require_subcommand(1);
  std::vector<std::string> kernel_flags;
  app.add_option("--kernel", kernel_flags, "select a kernel, OP=NAME (repeatable)");

  std::string only_op;
  CLI::App* kernels = app.add_subcommand("kernels", "list every registered kernel of the dispatch table");
  kernels->add_option("--op", only_op, "only this op");
  CLI::App* info = app.add_subcommand("info", "devices, library versions and build configuration");
  std::string bench_op = "all", bench_device = "cpu";
  int bench_repeat = 10;
  CLI::App* bench = app.add_subcommand("bench", "time every matmul and conv2d kernel (GFLOP/s)");
  bench->add_option("--op", bench_op, "matmul, conv2d or all (default all)");
  bench->add_option("--device", bench_device, "cpu, cuda or all (default cpu)");
  bench->add_option("--repeat", bench_repeat, "timed calls per kernel; the median is reported (default 10)");

  CLI11_PARSE(app, argc, argv);
  try {
    select_kernels_from_flags(kernel_flags);
    if (*kernels) return list_kernels(only_op);
    if (*bench) return run_bench(bench_op, bench_device, bench_repeat);
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
