// ops/op_checks.h — argument checks shared by the op front ends. Each throws an Error that names the
// op and the offending shapes, dtypes, devices or arguments.
//
// The size checks of the ops with windows (conv2d, pooling) work on shapes alone, so that `minidl bench`
// (tools/bench/) refuses a --shape before it allocates anything, with the op's own rule and words.
#pragma once
#include <vector>

#include "core/tensor.h"
#include "ops/kernel_signatures.h"

namespace minidl {

// t is defined and floating-point.
void check_floating(const char* op, const Tensor& t);
// t is defined and floating-point or bfloat16: the ops that take bfloat16 activations (conv2d, batch_norm,
// max_pool2d; ops/bfloat16_widening.h).
void check_floating_or_bfloat16(const char* op, const Tensor& t);
// All tensors are on one device and (if same_dtype) of one dtype.
void check_same_device(const char* op, const std::vector<Tensor>& tensors);
void check_same_dtype(const char* op, const std::vector<Tensor>& tensors);
// t has exactly `dims` dimensions ("what" describes the expected layout, e.g. "[N, C, H, W]").
void check_dim(const char* op, const Tensor& t, int dims, const char* what);
// A dim index in [-n, n) normalised to [0, n).
int normalize_dim(const char* op, int dim, int ndim);

// ---------------------------------------------------------------- sizes

// The most elements a tensor an op makes may have: its bytes (8 per float64 element) then still fit an
// int64, with room to add a few such sizes.
constexpr int64_t kMaxNumel = int64_t(1) << 58;

// Every size of `shape` is at least 1 ("<op>: <what> <shape> has a size 0 (...); every size must be at
// least 1"), and their product is at most kMaxNumel (computed without overflow). Returns the product.
int64_t check_sizes(const char* op, const Shape& shape, const char* what);

// conv2d's output [N, O, OH, OW] for x [N, C, H, W] and w [O, C, KH, KW], OH = (H + 2*pad_h - KH) / stride_h + 1
// (likewise OW). Refuses: a size of x or w that is 0, channels that differ, a stride below 1, a negative
// padding, a kernel larger than the padded input, an output of more than kMaxNumel elements.
Shape conv2d_output_shape(const Shape& x, const Shape& w, const Conv2dParams& p);

// max_pool2d's and avg_pool2d's output [N, C, OH, OW] for x [N, C, H, W] (op names the one asking).
// Refuses: a size of x that is 0, a window or stride below 1, a padding below 0 or above half the window
// (so every window holds a real element), a window larger than the padded input.
Shape pool2d_output_shape(const char* op, const Shape& x, const Pool2dParams& p);

}  // namespace minidl
