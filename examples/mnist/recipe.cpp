// examples/mnist/recipe.cpp — `mnist train --recipe fast` (examples/mnist/common.h apply_recipe): the
// settings of a short run tuned for time to 99%, filled in where their flags were not given on the command
// line, with one line saying which. examples/mnist/main.cpp calls it after parsing, before `train`.
#include <algorithm>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "examples/mnist/common.h"

using namespace minidl;

namespace mnist {
namespace {

// --recipe fast: the settings of a short run tuned for time to 99% test accuracy on a GPU (the figures:
// docs/results/README.md, "The fast MNIST recipe"): the batch-norm CNN, two epochs, and on a GPU
// minidl's implicit-GEMM convolutions instead of cuDNN's (the same step time for this small model, and
// cuDNN's libraries need not be loaded at start-up). The schedule (one-cycle) and the data (resident on the GPU) are the
// defaults; flags given on the command line win over the recipe.
struct Recipe {
  int epochs;
  int64_t batch;
  double lr;
  const char* model;
  const char* gpu_conv_kernel;  // selected for conv2d on a GPU unless a --kernel conv2d=... is given
};
constexpr Recipe kFastRecipe = {2, 256, 8e-3, mnist::kFastModelName, "implicit_gemm"};

}  // namespace

void apply_recipe(TrainFlags& f, const CLI::App& train_cmd) {
  if (f.recipe != "fast") return;
  std::string applied;
  if (train_cmd.count("--epochs") == 0) {
    f.epochs = kFastRecipe.epochs;
    applied += str_cat(" --epochs ", f.epochs);
  }
  if (train_cmd.count("--batch") == 0) {
    f.batch = kFastRecipe.batch;
    applied += str_cat(" --batch ", f.batch);
  }
  if (train_cmd.count("--lr") == 0) {
    f.lr = kFastRecipe.lr;
    applied += str_cat(" --lr ", f.lr);
  }
  if (train_cmd.count("--model") == 0) {
    f.model = kFastRecipe.model;
    applied += str_cat(" --model ", f.model);
  }
  const bool conv_selected = std::any_of(f.kernels.begin(), f.kernels.end(),
                                         [](const std::string& k) { return k.rfind("conv2d", 0) == 0; });
  if (!conv_selected) {
    f.recipe_gpu_conv = kFastRecipe.gpu_conv_kernel;
    applied += str_cat(" (on a GPU: --kernel conv2d=", f.recipe_gpu_conv, ")");
  }
  std::printf("mnist: --recipe fast:%s\n", applied.empty() ? " nothing (every setting given as a flag)" : applied.c_str());
}

}  // namespace mnist
