// examples/best_checkpoint.h — keeping the best model of a run by validation accuracy, and early stopping.
//
// After every epoch the program validates; the tracker says whether this epoch's model is the best so far
// (then `captcha train --save-best FILE` saves it) and how many epochs have passed since the best one
// (`--early-stop N` ends the run when N epochs in a row have not improved on it).
//
// "Better" is a strictly higher accuracy; at equal accuracy, a strictly lower validation loss. The
// first epoch is always the best so far. Ties at both are not an improvement: the earlier model is kept.
// The loss breaks ties because a small validation set gives the same accuracy for several epochs early on,
// and early stopping should not end a run whose validation loss is still falling.
//
// A resumable checkpoint carries the tracker's state in its metadata (best_epoch, best_val_accuracy,
// best_val_loss: metadata()), so a --resume'd run keeps the same best and the same count.
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace examples {

class BestTracker {
 public:
  // Records epoch `epoch`'s validation result; true when it is the best so far.
  bool update(int64_t epoch, double accuracy, double loss);
  // Epochs finished since the best one (0 right after an improvement, and before any epoch).
  int64_t epochs_without_improvement(int64_t epoch) const { return best_epoch_ > 0 ? epoch - best_epoch_ : 0; }
  // `patience` > 0 and that many epochs in a row without improvement at `epoch`.
  bool should_stop(int64_t epoch, int64_t patience) const {
    return patience > 0 && best_epoch_ > 0 && epochs_without_improvement(epoch) >= patience;
  }
  int64_t best_epoch() const { return best_epoch_; }  // 0: none yet
  double best_accuracy() const { return best_accuracy_; }
  double best_loss() const { return best_loss_; }

  // The state as checkpoint metadata (empty before the first epoch), and back. restore() ignores a
  // metadata without best_epoch (a file saved before the tracker existed: the best starts afresh).
  std::map<std::string, std::string> metadata() const;
  void restore(const std::map<std::string, std::string>& metadata);

 private:
  int64_t best_epoch_ = 0;
  double best_accuracy_ = 0, best_loss_ = 0;
};

}  // namespace examples
