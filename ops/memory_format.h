// ops/memory_format.h — to_memory_format: a 4-D tensor converted to NCHW or channels-last (NHWC) memory,
// recorded by autograd. The formats themselves, and how ops keep them, are in core/memory_format.h.
#pragma once
#include "core/memory_format.h"
#include "core/tensor.h"

namespace minidl {

// x in `format`: x itself when it is already in it, else a copy (the gradient passes through unchanged,
// in whatever format it arrives). Tensors that are not 4-D are in the contiguous format only: asking for
// channels_last returns them unchanged.
Tensor to_memory_format(const Tensor& x, MemoryFormat format);

}  // namespace minidl
