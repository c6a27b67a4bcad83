// core/capture.h — what ops need to know while a CUDA graph is being captured (nn/graphed_step.h).
//
// A captured kernel is replayed with the arguments it was captured with. Random ops take their counter
// offsets from the host's stream (core/random.h) when they are called, so every replay of a captured
// dropout would draw the same mask. The fix is a shift read on the device: while a capture runs on a
// device, capture_offset_shift(device) is an int64 [1] tensor there, random ops pass it to their kernels
// (DropoutMaskKernel's offset_shift), and the kernels add its value, read when they run, to their offset.
// Before each replay, the graph's owner writes into it how far the host's stream has moved since the
// capture, and moves the stream on by what one step draws: replay k draws exactly the numbers the k-th
// eager step would have drawn.
#pragma once
#include "core/tensor.h"

namespace minidl {

// The shift of the capture running on `device`, or an undefined tensor when none is.
Tensor capture_offset_shift(Device device);
// Set by the capturing code for the duration of a capture; an undefined tensor clears it.
void set_capture_offset_shift(Device device, const Tensor& shift);
// Whether a capture is running on `device`: an op that would read device data on the host (to check it)
// or copy from host memory cannot do so now (ops/ctc.cpp).
inline bool capture_running(Device device) { return capture_offset_shift(device).defined(); }

}  // namespace minidl
