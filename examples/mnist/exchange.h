// examples/mnist/exchange.h — `mnist export` and `mnist import`: a model's weights as a safetensors file
// with PyTorch's names, and back (examples/mnist/exchange.cpp; the format and names: examples/torch_weights.h).
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace mnist {

struct ExchangeCommands {
  CLI::App* export_app = nullptr;
  CLI::App* import_app = nullptr;
  std::function<int()> run;  // runs whichever of the two was given; the exit status
};
// Adds the `export` and `import` subcommands and their flags to `parent`.
ExchangeCommands add_exchange_commands(CLI::App& parent);

}  // namespace mnist
