// examples/captcha/eval.cpp — `captcha eval` and `captcha predict` with a model saved by `captcha train`.
//
//   captcha eval --model FILE [--data DIR | --count N] [--seed S] [--device D] [--batch N] [--threads N]
//                [--deterministic] [--show-mistakes N]
//       whole-captcha and per-character accuracy: on the labelled images of DIR, or on N fresh captchas
//       (default 10,000) of seed S (default: the training seed + 2; training used seed and seed + 1) drawn
//       with the charset, length and size recorded in the checkpoint; the first N misread ones (default 8),
//       saying so when there are more.
//   captcha predict --model FILE IMAGE...
//       the text read from each image (resized to the model's input size), how sure the model is of it
//       (p: the probability of the whole text) and its least sure character:
//         a.png: AB3XY  p=0.93  weakest: '3' 0.97
// Both refuse a model whose outputs are NaN or infinite (finite weights can still be absurd: a file saved
// by an older minidl after its run diverged), exit status 1: eval when its loss is, predict for each
// such image.
#include <cmath>
#include <cstdio>
#include <memory>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "core/autograd.h"
#include "core/determinism.h"
#include "core/numerics.h"
#include "core/dispatch.h"
#include "examples/captcha/common.h"
#include "examples/flags.h"
#include "examples/data/captcha_data.h"
#include "nn/checkpoint.h"
#include "nn/ctc_decode.h"
#include "nn/image.h"

using namespace minidl;
using examples::number_in;
using examples::FlagRange;

namespace captcha {

namespace {

struct EvalArgs {
  std::string model, data, device = "auto";
  int64_t count = 10000, batch = 0, show_mistakes = 8;
  uint64_t seed = 0;
  int threads = 0;
  bool deterministic = false;
  std::vector<std::string> kernels;
  CLI::Option* seed_flag = nullptr;
};

int run_eval(const EvalArgs& a) {
  select_kernels_from_flags(a.kernels);
  set_deterministic_algorithms(a.deterministic);
  const Device device = choose_device(a.device);
  const LoadedModel loaded = load_model(a.model, device);
  const ModelConfig& config = loaded.model->config;
  const int threads = thread_count(a.threads);

  std::shared_ptr<Dataset> data;
  if (!a.data.empty()) {
    CaptchaFolderOptions fo;
    fo.width = config.width;
    fo.height = config.height;
    fo.charset = loaded.charset;
    fo.threads = threads;
    const CaptchaDataset folder = load_captcha_folder(a.data, fo);
    print_folder_warnings(folder);
    data = std::make_shared<TensorDataset>(folder.images, encode_ctc_targets(folder.labels, loaded.charset).targets);
    std::printf("captcha: evaluating on %lld images of %s\n", static_cast<long long>(data->size()), a.data.c_str());
  } else {
    uint64_t seed = a.seed;
    if (!*a.seed_flag)
      seed = (loaded.metadata.count("seed") ? metadata_int(loaded.metadata, "seed", 0, INT64_MAX - 2, a.model) : 1) + 2;
    CaptchaOptions options;
    options.charset = loaded.charset;
    std::tie(options.min_length, options.max_length) = parse_length_range(loaded.length);
    options.width = config.width;
    options.height = config.height;
    data = std::make_shared<GeneratedCaptchaDataset>(options, seed, a.count, threads);
    std::printf("captcha: evaluating on %lld fresh captchas (seed %llu, length %s, charset \"%s\")\n",
                static_cast<long long>(a.count), static_cast<unsigned long long>(seed), loaded.length.c_str(),
                loaded.charset.c_str());
  }
  DataLoader loader(data, eval_loader_options(device, a.batch));
  const EvalResult r = evaluate(*loaded.model, loader, loaded.charset, device, "eval", a.show_mistakes);
  // Finite weights can still be absurd (1e30, saved by a run that diverged): then the outputs are not
  // numbers, and neither is the loss.
  MINIDL_CHECK(std::isfinite(r.loss), "'", a.model, "' gives a loss of ", number_str(r.loss),
               ": its outputs are NaN or infinite (weights of a run that diverged); train again");
  for (const auto& [truth, read] : r.mistakes)
    std::printf("  mistake: %s read as %s\n", truth.c_str(), read.empty() ? "(nothing)" : read.c_str());
  if (r.count - r.correct > static_cast<int64_t>(r.mistakes.size()))
    std::printf("  showing %zu of %lld mistakes (--show-mistakes N for more)\n", r.mistakes.size(),
                static_cast<long long>(r.count - r.correct));
  std::printf("loss: %.4f\nwhole-captcha accuracy: %s (%lld/%lld)\nper-character accuracy: %s\n", r.loss,
              percent(r.sequence_accuracy).c_str(), static_cast<long long>(r.correct),
              static_cast<long long>(r.count), percent(r.character_accuracy).c_str());
  return 0;
}

struct PredictArgs {
  std::string model, device = "auto";
  std::vector<std::string> images, kernels;
};

int run_predict(const PredictArgs& a) {
  select_kernels_from_flags(a.kernels);
  const Device device = choose_device(a.device);
  const LoadedModel loaded = load_model(a.model, device);
  const ModelConfig& config = loaded.model->config;
  NoGradGuard no_grad;
  int failures = 0;
  for (const std::string& path : a.images) {
    try {
      Tensor x = empty({1, 3, config.height, config.width}, TensorOptions(DType::float32, Device::cpu()));
      image_to_chw(load_image(path, 3), config.width, config.height, x.data<float>());
      const Tensor log_probs = (*loaded.model)(x.to(device));
      const NonFinite bad = first_non_finite(log_probs);
      MINIDL_CHECK(!bad.found(), path, ": the model's output is ", number_str(bad.value), ": '", a.model,
                   "' holds weights of a run that diverged; train again");
      // How sure: p, the probability of the text (the CTC sum over its alignments), and the weakest
      // character's probability (nn/ctc_decode.h ctc_greedy_confidence).
      const CtcConfidence sure = ctc_greedy_confidence(log_probs);
      const std::string text = ctc_classes_to_text(sure.classes, loaded.charset);
      const int64_t weak = sure.weakest();
      char weakest[64] = "";
      if (weak >= 0)
        std::snprintf(weakest, sizeof weakest, "  weakest: '%c' %.2f", text[weak], sure.character_probability[weak]);
      char p[32];  // two decimals, or the order of magnitude of a small probability ("4e-05")
      std::snprintf(p, sizeof p, sure.text_probability >= 0.01 ? "%.2f" : "%.0e", sure.text_probability);
      std::printf("%s: %s  p=%s%s\n", path.c_str(), text.empty() ? "(nothing)" : text.c_str(), p, weakest);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "captcha: %s\n", e.what());
      ++failures;
    }
  }
  return failures ? 1 : 0;
}

}  // namespace

Command add_eval_command(CLI::App& parent) {
  auto a = std::make_shared<EvalArgs>();
  CLI::App* cmd = parent.add_subcommand("eval", "whole-captcha and per-character accuracy of a saved model");
  cmd->add_option("--model", a->model, "checkpoint saved by `captcha train --save`")->required();
  CLI::Option* data = cmd->add_option("--data", a->data, "evaluate on the labelled images of DIR");
  CLI::Option* count = cmd->add_option("--count", a->count, "fresh captchas to evaluate on")->capture_default_str()
                           ->check(number_in(FlagRange::whole<int64_t>(1)));
  data->excludes(count);
  a->seed_flag = cmd->add_option("--seed", a->seed, "seed of the fresh captchas (default: the training seed + 2)")
                     ->check(number_in(FlagRange::whole<uint64_t>(0)));
  cmd->add_option("--device", a->device, "auto, cpu or cuda[:N]")->capture_default_str();
  cmd->add_option("--batch", a->batch, "batch size (0: 500 on a GPU, 100 on the CPU)")
      ->capture_default_str()
      ->check(number_in(FlagRange::whole<int64_t>(0)));
  cmd->add_option("--threads", a->threads, "threads rendering or decoding images (0: all hardware threads)")
      ->capture_default_str()
      ->check(number_in(FlagRange::whole<int>(0, kMaxThreads)));
  cmd->add_option("--show-mistakes", a->show_mistakes, "list at most N misread captchas")
      ->capture_default_str()
      ->check(number_in(FlagRange::whole<int64_t>(0)));
  cmd->add_option("--kernel", a->kernels, "select a kernel, OP=NAME (repeatable)");
  cmd->add_flag("--deterministic", a->deterministic, "on a GPU, only deterministic algorithms");
  return {cmd, [a] { return run_eval(*a); }};
}

Command add_predict_command(CLI::App& parent) {
  auto a = std::make_shared<PredictArgs>();
  CLI::App* cmd = parent.add_subcommand("predict", "print the text read from each image file");
  cmd->add_option("--model", a->model, "checkpoint saved by `captcha train --save`")->required();
  cmd->add_option("IMAGE", a->images, "image files (PNG, JPEG or BMP)")->required();
  cmd->add_option("--device", a->device, "auto, cpu or cuda[:N]")->capture_default_str();
  cmd->add_option("--kernel", a->kernels, "select a kernel, OP=NAME (repeatable)");
  return {cmd, [a] { return run_predict(*a); }};
}

}  // namespace captcha
