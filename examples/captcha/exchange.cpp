// examples/captcha/exchange.cpp — `captcha export` and `captcha import`: the model's weights as a
// safetensors file with the names of scripts/torch_captcha_bench.py's CaptchaModel, and back (the
// format and the names: examples/torch_weights.h).
//
//   captcha export --model CKPT --safetensors OUT [--sample FILE]
//       the weights, and the model's configuration, charset and label length in __metadata__ (strings,
//       the checkpoint's own keys: examples/captcha/model_config.h); --sample also writes a fixed input
//       [2, 3, H, W] and the model's log-probabilities for it, for scripts/torch_load_safetensors.py
//   captcha import --safetensors IN --save CKPT [--rnn gru|lstm]
//       a checkpoint holding those weights, which `captcha eval`, `predict` and `train --init-from` read.
//       The configuration comes from the file's metadata; a file without it (saved by PyTorch:
//       safetensors.torch.save_file(model.state_dict(), IN)) means the default model of `captcha
//       train`, with --rnn's recurrent layer.
#include <cstdio>
#include <memory>

#include "core/random.h"
#include "examples/captcha/common.h"
#include "examples/captcha/model_config.h"
#include "examples/data/captcha_gen.h"
#include "examples/flags.h"
#include "examples/torch_weights.h"
#include "nn/checkpoint.h"
#include "nn/files.h"

using namespace minidl;

namespace captcha {

namespace {

struct ExchangeArgs {
  std::string checkpoint, safetensors, sample, save, rnn;
};

int run_export(const ExchangeArgs& a) {
  check_outputs_are_not_inputs({{"--safetensors", a.safetensors}, {"--sample", a.sample}}, {{"--model", a.checkpoint}});
  const Checkpoint file = read_checkpoint(a.checkpoint);
  SavedModel saved;
  std::shared_ptr<CaptchaModel> model = model_from_checkpoint(file, a.checkpoint, saved);
  write_safetensors(a.safetensors,
                    examples::torch_state_of(*model, model_metadata(saved.config, saved.charset, saved.length)));
  std::printf("captcha export: %s (%s, %zu tensors) -> %s\n", a.checkpoint.c_str(), rnn_kind_name(saved.config.rnn),
              model->state_dict().size(), a.safetensors.c_str());
  if (!a.sample.empty()) {
    manual_seed(0);
    examples::write_sample(a.sample, *model, rand({2, 3, saved.config.height, saved.config.width}));
    std::printf("captcha export: a fixed input [2, 3, %d, %d] and the model's log-probabilities -> %s\n",
                saved.config.height, saved.config.width, a.sample.c_str());
  }
  return 0;
}

int run_import(const ExchangeArgs& a) {
  check_outputs_are_not_inputs({{"--save", a.save}}, {{"--safetensors", a.safetensors}});
  prepare_checkpoint_path(a.save);
  const SafetensorsFile file = read_safetensors(a.safetensors);
  // The default model of `captcha train`, then what the file says, then --rnn.
  ModelConfig defaults;
  std::map<std::string, std::string> metadata = model_metadata(defaults, CaptchaOptions().charset, "4");
  for (const auto& [key, value] : file.metadata)
    if (metadata.count(key)) metadata[key] = value;
  if (!a.rnn.empty()) metadata["rnn"] = a.rnn;
  const SavedModel saved = saved_model_from_metadata(metadata, a.safetensors);
  CaptchaModel model(saved.config);
  examples::load_torch_state(model, file, a.safetensors,
                             str_cat("a captcha_crnn model with a ", rnn_kind_name(saved.config.rnn),
                                     a.rnn.empty() ? "; --rnn gru|lstm chooses the recurrent layer" : ""));
  std::map<std::string, std::string> saved_metadata = model_metadata(saved.config, saved.charset, saved.length);
  saved_metadata["imported_from"] = a.safetensors;
  save_checkpoint(a.save, model, nullptr, saved_metadata);
  std::printf("captcha import: %s -> %s (%s, charset of %zu, weights only: no optimizer state)\n",
              a.safetensors.c_str(), a.save.c_str(), rnn_kind_name(saved.config.rnn), saved.charset.size());
  return 0;
}

}  // namespace

Command add_export_command(CLI::App& parent) {
  auto a = std::make_shared<ExchangeArgs>();
  CLI::App* cmd = parent.add_subcommand(
      "export", "write a saved model's weights as safetensors with PyTorch's names (safetensors.torch.load_file)");
  cmd->add_option("--model", a->checkpoint, "checkpoint saved by `captcha train --save`")->required();
  cmd->add_option("--safetensors", a->safetensors, "the safetensors file to write")
      ->required()->check(examples::non_empty());
  cmd->add_option("--sample", a->sample,
                  "also write a fixed input and the model's output for it (for scripts/torch_load_safetensors.py)")
      ->check(examples::non_empty());
  return {cmd, [a] { return run_export(*a); }};
}

Command add_import_command(CLI::App& parent) {
  auto a = std::make_shared<ExchangeArgs>();
  CLI::App* cmd = parent.add_subcommand(
      "import", "make a checkpoint from safetensors weights with PyTorch's names (exported, or saved by PyTorch)");
  cmd->add_option("--safetensors", a->safetensors, "the safetensors file to read")->required();
  cmd->add_option("--save", a->save, "the checkpoint to write (weights only)")->required()->check(examples::non_empty());
  cmd->add_option("--rnn", a->rnn, "the recurrent layer, gru or lstm (default: the file's metadata, else gru)")
      ->check(CLI::IsMember({"gru", "lstm"}));
  return {cmd, [a] { return run_import(*a); }};
}

}  // namespace captcha
