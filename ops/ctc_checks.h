// ops/ctc_checks.h — the host-side checks of ctc_loss's labels and lengths, callable on their own.
//
// ctc_loss (ops/ops.h) checks every label and length on the host before it queues a kernel, so that a bad
// one is an error naming the sample rather than an out-of-bounds read on the device. A training step
// captured as a CUDA graph (nn/graphed_step.h) runs no front end when it is replayed, and inside the
// capture ctc_loss cannot read the labels back (ops/ctc.cpp): the caller checks each batch with this
// function before copying it into the graph's tensors (examples/captcha/train_step.h).
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace minidl {

// targets [N, S] int64 padded, input_lengths and target_lengths [N] int64, on any device (device tensors
// are read back: a sync). Throws an Error naming the sample when an input length is outside [0, T], a
// target length outside [0, S], or a used label outside [0, C) or equal to `blank`. Shapes and dtypes are
// checked too.
void check_ctc_targets(const Tensor& targets, const Tensor& input_lengths, const Tensor& target_lengths, int64_t T,
                       int64_t C, int64_t blank = 0);

}  // namespace minidl
