// examples/mnist/bench.h — `mnist bench`: training-step timing on a synthetic batch (examples/mnist/bench.cpp).
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace mnist {

struct BenchCommand {
  CLI::App* app = nullptr;
  std::function<int()> run;  // the exit status
};
// Adds the `bench` subcommand and its flags to `parent`.
BenchCommand add_bench_command(CLI::App& parent);

}  // namespace mnist
