// core/tensor_kernels.h — the signatures of the two kernel keys the Tensor itself needs: copy (and cast)
// for to(), contiguous() and copy_(), and fill for zeros(), ones() and full(). Every other signature is in
// ops/kernel_signatures.h, which includes this file: the list of keys stays one list for kernel writers,
// while core/tensor.cpp depends only on core (docs/architecture.md, "Layers").
#pragma once
#include "core/kernel_key.h"
#include "core/tensor.h"

namespace minidl {

// Key "copy": dst = src. Same shape and dtype, same device; both any strides (dst is written through
// its strides and never overlaps src). Key "cast": the same, but dst may have another dtype (any of the
// four); values convert as C++ static_cast does.
using CopyKernel = bool(const Tensor& src, Tensor& dst);
namespace keys {
inline const KernelKey<CopyKernel> cast{"cast"};
inline const KernelKey<CopyKernel> copy{"copy"};
}  // namespace keys

// Key "fill": every element of dst (any strides, any dtype) = value.
using FillKernel = bool(Tensor& dst, double value);
namespace keys {
inline const KernelKey<FillKernel> fill{"fill"};
}  // namespace keys

}  // namespace minidl
