// ops/op_checks.h — argument checks shared by the op front ends. Each throws an Error that names the
// op and the offending shapes, dtypes or devices.
#pragma once
#include <vector>

#include "core/tensor.h"

namespace minidl {

// t is defined and floating-point.
void check_floating(const char* op, const Tensor& t);
// All tensors are on one device and (if same_dtype) of one dtype.
void check_same_device(const char* op, const std::vector<Tensor>& tensors);
void check_same_dtype(const char* op, const std::vector<Tensor>& tensors);
// t has exactly `dims` dimensions ("what" describes the expected layout, e.g. "[N, C, H, W]").
void check_dim(const char* op, const Tensor& t, int dims, const char* what);
// A dim index in [-n, n) normalised to [0, n).
int normalize_dim(const char* op, int dim, int ndim);

}  // namespace minidl
