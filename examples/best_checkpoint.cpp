// examples/best_checkpoint.cpp — the best epoch of a run and early stopping (examples/best_checkpoint.h).
#include "examples/best_checkpoint.h"

#include <cstdlib>

#include "core/error.h"
#include "examples/run_state.h"

namespace examples {

bool BestTracker::update(int64_t epoch, double accuracy, double loss) {
  const bool better = best_epoch_ == 0 || accuracy > best_accuracy_ || (accuracy == best_accuracy_ && loss < best_loss_);
  if (better) {
    best_epoch_ = epoch;
    best_accuracy_ = accuracy;
    best_loss_ = loss;
  }
  return better;
}

std::map<std::string, std::string> BestTracker::metadata() const {
  if (best_epoch_ == 0) return {};
  return {{"best_epoch", std::to_string(best_epoch_)},
          {"best_val_accuracy", exact_number(best_accuracy_)},
          {"best_val_loss", exact_number(best_loss_)}};
}

void BestTracker::restore(const std::map<std::string, std::string>& m) {
  auto epoch = m.find("best_epoch");
  if (epoch == m.end()) return;
  auto accuracy = m.find("best_val_accuracy"), loss = m.find("best_val_loss");
  MINIDL_CHECK(accuracy != m.end() && loss != m.end(), "--resume: the file has best_epoch but not best_val_accuracy "
               "and best_val_loss");
  best_epoch_ = std::strtoll(epoch->second.c_str(), nullptr, 10);
  best_accuracy_ = std::strtod(accuracy->second.c_str(), nullptr);
  best_loss_ = std::strtod(loss->second.c_str(), nullptr);
  MINIDL_CHECK(best_epoch_ > 0, "--resume: best_epoch is '", epoch->second, "'");
}

}  // namespace examples
