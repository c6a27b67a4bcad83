// examples/mnist/exchange.cpp — `mnist export` and `mnist import`.
//
//   mnist export --model CKPT --safetensors OUT [--sample FILE]
//       the model's weights under the names of scripts/torch_mnist_bench.py's nn.Sequential (mnist_cnn) or
//       scripts/torch_mnist_train.py's (mnist_cnn_bn); --sample also writes a fixed input and this model's
//       output for it, which scripts/torch_load_safetensors.py compares with PyTorch's
//   mnist import --safetensors IN --save CKPT [--model mnist_cnn|mnist_cnn_bn]
//       a checkpoint holding those weights (from PyTorch: safetensors.torch.save_file(model.state_dict(),
//       IN)), which `mnist eval`, `mnist predict` and `mnist train --init-from` read; the model is --model,
//       else the file's "model" metadata (an exported file has it), else mnist_cnn
#include "examples/mnist/exchange.h"

#include <cstdio>

#include "core/random.h"
#include "examples/flags.h"
#include "examples/mnist/common.h"
#include "examples/torch_weights.h"
#include "nn/checkpoint.h"
#include "nn/files.h"

using namespace minidl;

namespace mnist {

namespace {

struct ExchangeFlags {
  std::string checkpoint, safetensors, sample, save, model;
};

int export_weights(const ExchangeFlags& f) {
  check_outputs_are_not_inputs({{"--safetensors", f.safetensors}, {"--sample", f.sample}}, {{"--model", f.checkpoint}});
  const Checkpoint file = read_checkpoint(f.checkpoint);
  std::shared_ptr<Sequential> model = load_model_from(file, f.checkpoint);
  const std::string name = file.metadata.count("model") ? file.metadata.at("model") : kModelName;
  write_safetensors(f.safetensors, examples::torch_state_of(*model, {{"model", name}}));
  std::printf("mnist export: %s (%s, %zu tensors) -> %s\n", f.checkpoint.c_str(), name.c_str(),
              model->state_dict().size(), f.safetensors.c_str());
  if (!f.sample.empty()) {
    manual_seed(0);
    examples::write_sample(f.sample, *model, randn({4, 1, 28, 28}));
    std::printf("mnist export: a fixed input [4, 1, 28, 28] and the model's logits -> %s\n", f.sample.c_str());
  }
  return 0;
}

int import_weights(const ExchangeFlags& f) {
  check_outputs_are_not_inputs({{"--save", f.save}}, {{"--safetensors", f.safetensors}});
  prepare_checkpoint_path(f.save);
  const SafetensorsFile file = read_safetensors(f.safetensors);
  std::string name = f.model;
  if (name.empty()) name = file.metadata.count("model") ? file.metadata.at("model") : kModelName;
  std::shared_ptr<Sequential> model = make_model(name);  // throws for an unknown name, naming both
  examples::load_torch_state(*model, file, f.safetensors,
                             str_cat("the ", name, " model; --model ", name == kModelName ? kFastModelName : kModelName,
                                     " for the other"));
  save_checkpoint(f.save, *model, nullptr, {{"model", name}, {"imported_from", f.safetensors}});
  std::printf("mnist import: %s -> %s (%s, weights only: no optimizer state)\n", f.safetensors.c_str(),
              f.save.c_str(), name.c_str());
  return 0;
}

}  // namespace

ExchangeCommands add_exchange_commands(CLI::App& parent) {
  auto f = std::make_shared<ExchangeFlags>();
  ExchangeCommands c;
  c.export_app = parent.add_subcommand(
      "export", "write a saved model's weights as safetensors with PyTorch's names (safetensors.torch.load_file)");
  c.export_app->add_option("--model", f->checkpoint, "checkpoint saved by `mnist train --save`")->required();
  c.export_app->add_option("--safetensors", f->safetensors, "the safetensors file to write")
      ->required()->check(examples::non_empty());
  c.export_app->add_option("--sample", f->sample,
                           "also write a fixed input and the model's output for it (for "
                           "scripts/torch_load_safetensors.py)")
      ->check(examples::non_empty());
  c.import_app = parent.add_subcommand(
      "import", "make a checkpoint from safetensors weights with PyTorch's names (exported, or saved by PyTorch)");
  c.import_app->add_option("--safetensors", f->safetensors, "the safetensors file to read")->required();
  c.import_app->add_option("--save", f->save, "the checkpoint to write (weights only)")
      ->required()->check(examples::non_empty());
  c.import_app->add_option("--model", f->model,
                           "mnist_cnn or mnist_cnn_bn (default: the file's \"model\" metadata, else mnist_cnn)")
      ->check(CLI::IsMember({kModelName, kFastModelName}));
  CLI::App* export_app = c.export_app;
  c.run = [f, export_app] { return *export_app ? export_weights(*f) : import_weights(*f); };
  return c;
}

}  // namespace mnist
