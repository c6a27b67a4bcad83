// examples/captcha/plateau_hint.h — the hint `captcha train` prints once when validation has read no
// captcha right for several epochs. A CTC model's usual first phase is the blank plateau: every time step
// outputs the blank, the loss sinks a little and stalls, and whole-captcha accuracy stays at 0% until the
// model starts to place characters (docs/captcha.md, "The blank plateau"). A run that stays there is
// usually helped by a lower learning rate or a warm-up, labels that match the images, or more data.
#pragma once
#include <cstdint>
#include <string>

namespace captcha {

class PlateauHint {
 public:
  static constexpr int64_t kEpochs = 3;  // epochs in a row at 0% before the hint

  // After an epoch's validation: the hint, the first time whole-captcha accuracy has been 0 for kEpochs
  // epochs in a row (in this invocation); otherwise "".
  std::string after_epoch(double sequence_accuracy) {
    zero_epochs_ = sequence_accuracy == 0 ? zero_epochs_ + 1 : 0;
    if (given_ || zero_epochs_ < kEpochs) return "";
    given_ = true;
    return "hint: validation has read no captcha right for " + std::to_string(zero_epochs_) +
           " epochs: the CTC blank plateau (the model outputs only the blank). Try a lower --lr (3e-4: the "
           "first steps are then gentler), check that the labels match the images (file names, --charset, "
           "--length), or train on more data (--epoch-size, more labelled images); docs/captcha.md, "
           "\"The blank plateau\"";
  }

 private:
  int64_t zero_epochs_ = 0;
  bool given_ = false;
};

}  // namespace captcha
