// examples/captcha/recipe.cpp — `captcha train --recipe cpu` (examples/captcha/train.h apply_recipe): the
// settings of a short run that learns on a CPU, filled in where their flags were not given on the command
// line, with one line saying which. The default model and 12 epochs of 64,000 captchas are a GPU run;
// this recipe is the CPU run of docs/results/captcha.md ("Measured on the CPU": 4 digits, a slim model,
// 600 steps of 32), where its time and accuracy are recorded.
#include <cstdio>
#include <string>

#include "core/error.h"
#include "examples/captcha/train.h"

using namespace minidl;

namespace captcha {
namespace {

// --recipe cpu: one 3x3 convolution per block with 16, 32, 64, 64, 64 channels, a 2-layer bidirectional
// GRU of 64 units (248,091 parameters with 11 classes), batches of 32, Adam at 5e-3 with the cosine decay,
// 3 epochs of 6,400 generated captchas (600 steps), dropout 0.25 (the GPU default is 0.1), validation on
// 1,000; the task: 4 digits (generated data only; a --data folder keeps its own characters).
struct Recipe {
  const char* charset;
  const char* channels;
  int convs_per_block;
  int64_t hidden, batch, epochs, epoch_size, val_count;
  double lr, dropout;
};
constexpr Recipe kCpuRecipe = {"0123456789", "16,32,64,64,64", 1, 64, 32, 3, 6400, 1000, 5e-3, 0.25};

}  // namespace

void apply_recipe(TrainArgs& a, const CLI::App& cmd) {
  if (a.recipe != "cpu") return;
  std::string applied;
  const auto unset = [&](const char* flag) { return cmd.count(flag) == 0; };
  if (unset("--charset") && a.data.empty()) {
    a.charset = kCpuRecipe.charset;
    applied += str_cat(" --charset ", a.charset);
  }
  if (unset("--channels")) {
    a.channels = kCpuRecipe.channels;
    applied += str_cat(" --channels ", a.channels);
  }
  if (unset("--convs-per-block")) {
    a.convs_per_block = kCpuRecipe.convs_per_block;
    applied += str_cat(" --convs-per-block ", a.convs_per_block);
  }
  if (unset("--hidden")) {
    a.hidden = kCpuRecipe.hidden;
    applied += str_cat(" --hidden ", a.hidden);
  }
  if (unset("--batch")) {
    a.batch = kCpuRecipe.batch;
    applied += str_cat(" --batch ", a.batch);
  }
  if (unset("--lr")) {
    a.lr = kCpuRecipe.lr;
    applied += str_cat(" --lr ", a.lr);
  }
  if (unset("--dropout")) {
    a.dropout = kCpuRecipe.dropout;
    applied += str_cat(" --dropout ", a.dropout);
  }
  if (unset("--epochs") && unset("--steps")) {
    a.epochs = kCpuRecipe.epochs;
    applied += str_cat(" --epochs ", a.epochs);
  }
  if (unset("--epoch-size") && a.data.empty()) {
    a.epoch_size = kCpuRecipe.epoch_size;
    applied += str_cat(" --epoch-size ", a.epoch_size);
  }
  if (unset("--val-count")) {
    a.val_count = kCpuRecipe.val_count;
    applied += str_cat(" --val-count ", a.val_count);
  }
  std::printf("captcha: --recipe cpu:%s\n", applied.empty() ? " nothing (every setting given as a flag)" : applied.c_str());
}

}  // namespace captcha
