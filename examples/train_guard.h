// examples/train_guard.h — what both training programs do when the numbers go bad: stop at the first
// non-finite loss, say where (step, loss, learning rate) and what happened to the --save file, and never
// save a model holding NaN or infinity over the last good one.
//
// The loops read their losses from the device in batches (a read from a GPU waits for it), so a NaN is
// noticed up to a few dozen steps after it appeared; each loss keeps its step and learning rate, so the
// report names the first bad step all the same. Nothing is saved in between: saves happen at the end of
// an epoch, after every loss of the epoch and every parameter and buffer have been checked.
//
// The programs exit with status 3 on NonFiniteError (1 for other errors, 2 for bad flags).
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "core/numerics.h"
#include "core/tensor.h"
#include "nn/module.h"

namespace examples {

// The exit status of a run stopped by NonFiniteError.
constexpr int kExitNonFinite = 3;

class DivergenceGuard {
 public:
  // `save_path`: the run's --save file ("" when it saves nothing).
  explicit DivergenceGuard(std::string save_path) : save_path_(std::move(save_path)) {}

  // The file now holds `epoch` (called after each save).
  void saved(int64_t epoch) { last_saved_epoch_ = epoch; }

  // Throws NonFiniteError when the training loss of `step` (1-based, over the run) is NaN or infinite.
  void check_loss(double loss, int64_t step, double lr) const {
    if (std::isfinite(loss)) return;
    throw minidl::NonFiniteError(minidl::str_cat(
        "training diverged: the loss is ", minidl::number_str(loss), " at step ", step, " (learning rate ",
        minidl::number_str(lr), "). Stopped.",
        save_note(), " Try a smaller --lr, or run with MINIDL_CHECK_NUMERICS=1 to find the op that first "
        "produced a NaN or an infinity."));
  }

  // Throws NonFiniteError when a parameter or buffer of `model` is not finite (an update after the last
  // finite loss can still break the weights): checked before every evaluation and save.
  void check_model(const minidl::Module& model, int64_t epoch, int64_t step, double lr) const {
    for (const auto& [name, tensor] : model.state_dict()) {
      const minidl::NonFinite bad = minidl::first_non_finite(tensor);
      if (!bad.found()) continue;
      throw minidl::NonFiniteError(minidl::str_cat(
          "training diverged: after epoch ", epoch, " (step ", step, ", learning rate ", minidl::number_str(lr),
          ") the model's '", name, "' holds ", minidl::number_str(bad.value), " at ",
          minidl::index_str(tensor.shape(), bad.index), ". Stopped.", save_note(), " Try a smaller --lr."));
    }
  }

  // Throws NonFiniteError when an evaluation loss (`what`: "test", "validation") is not finite.
  void check_eval_loss(double loss, const char* what, int64_t epoch) const {
    if (std::isfinite(loss)) return;
    throw minidl::NonFiniteError(minidl::str_cat("training diverged: the ", what, " loss after epoch ", epoch, " is ",
                                                 minidl::number_str(loss), ". Stopped.", save_note(),
                                                 " Try a smaller --lr."));
  }

 private:
  // What the --save file holds now.
  std::string save_note() const {
    if (save_path_.empty()) return "";
    if (last_saved_epoch_ > 0)
      return minidl::str_cat(" ", save_path_, " keeps epoch ", last_saved_epoch_, ", the last good one.");
    return minidl::str_cat(" ", save_path_, " was not written by this run.");
  }

  std::string save_path_;
  int64_t last_saved_epoch_ = 0;
};

}  // namespace examples
