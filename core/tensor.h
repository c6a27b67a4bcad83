// core/tensor.h — the Tensor: a strided view of a shared block of memory on one device.
//
//   element (i0, i1, ..., ik) lives at  storage.data + (offset + i0*strides[0] + ... + ik*strides[k]) * itemsize
//
// Views (reshape of a contiguous tensor, permute, transpose, slice, expand) share storage and only
// change shape/strides/offset; contiguous() makes a packed copy when needed. A Tensor is a cheap handle
// (a shared pointer to TensorImpl): copying a Tensor never copies data.
//
// Autograd state lives here too: requires_grad, the accumulated .grad of a leaf, and grad_fn, the node
// of the backward graph that produced a non-leaf tensor (core/autograd.h).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"

namespace minidl {

using Shape = std::vector<int64_t>;
class DeviceBackend;  // core/backend.h

int64_t shape_numel(const Shape& shape);
Shape contiguous_strides(const Shape& shape);

// A block of device memory, freed through its device's backend when the last tensor using it goes.
struct Storage {
  Storage(size_t nbytes, Device device);
  // CPU memory that is page-locked by `gpu_backend` (Tensor::pin_memory).
  struct PinnedHost {};
  Storage(size_t nbytes, PinnedHost, DeviceBackend& gpu_backend);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data = nullptr;
  size_t nbytes = 0;
  Device device;
  DeviceBackend* pinned_by = nullptr;  // the backend that page-locked this CPU memory, or null
};

struct Node;  // core/autograd.h
class Tensor;

// [doc:tensor_impl] quoted by docs/course/01-tensors.md
struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Shape strides;       // in elements
  int64_t offset = 0;  // in elements
  DType dtype = DType::float32;

  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;  // accumulated gradient of a leaf
  std::shared_ptr<Node> grad_fn;     // null for leaves
};
// [/doc:tensor_impl]

// Options for factories: dtype and device (default: float32 on default_device()).
struct TensorOptions {
  DType dtype = DType::float32;
  Device device = default_device();
  bool requires_grad = false;

  TensorOptions() = default;
  TensorOptions(DType t) : dtype(t) {}    // NOLINT: implicit on purpose, zeros({2}, DType::int64)
  TensorOptions(Device d) : device(d) {}  // NOLINT: zeros({2}, Device::cuda())
  TensorOptions(DType t, Device d) : dtype(t), device(d) {}
  TensorOptions with_requires_grad(bool r = true) const {
    TensorOptions o = *this;
    o.requires_grad = r;
    return o;
  }
};

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor (e.g. a missing gradient)
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  // ---- metadata
  const Shape& shape() const { return impl_->shape; }
  const Shape& strides() const { return impl_->strides; }
  int64_t offset() const { return impl_->offset; }
  int dim() const { return static_cast<int>(impl_->shape.size()); }
  int64_t size(int d) const;  // negative d counts from the end
  int64_t numel() const { return shape_numel(impl_->shape); }
  DType dtype() const { return impl_->dtype; }
  Device device() const { return impl_->storage->device; }
  TensorOptions options() const { return TensorOptions(dtype(), device()); }
  bool is_contiguous() const;
  // True when this tensor and `other` share memory.
  bool shares_storage_with(const Tensor& other) const { return impl_->storage == other.impl_->storage; }

  // ---- raw data (pointer to element (0,...,0)); data<T>() checks the dtype
  void* raw_data() const;
  template <class T>
  T* data() const {
    MINIDL_CHECK(dtype() == dtype_of<T>(), "tensor: data<", dtype_name(dtype_of<T>()), ">() on a ",
                 dtype_name(dtype()), " tensor");
    return static_cast<T*>(raw_data());
  }

  // ---- views and copies (autograd-aware; defined in ops/shape_ops.cpp)
  Tensor reshape(const Shape& shape) const;  // one dim may be -1; a view when possible
  Tensor view(const Shape& shape) const;     // must be contiguous
  Tensor flatten(int start_dim = 0, int end_dim = -1) const;
  Tensor permute(const std::vector<int>& dims) const;
  Tensor transpose(int d0, int d1) const;
  Tensor slice(int dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int dim, int64_t index) const;  // slice + drop the dim
  Tensor expand(const Shape& shape) const;      // broadcast view (stride 0 on expanded dims)
  Tensor unsqueeze(int dim) const;
  Tensor squeeze(int dim) const;
  Tensor contiguous() const;  // this tensor if already contiguous
  Tensor clone() const;

  // ---- conversions (core/tensor.cpp). NOT recorded by autograd: the result is a new leaf without
  // requires_grad (move data and parameters before building a graph; nn::Module::to keeps the flags).
  Tensor to(Device device) const;  // this tensor if already there
  Tensor to(DType dtype) const;
  // A contiguous copy of this CPU tensor in page-locked memory (this tensor if it already is pinned), from
  // which copies to a GPU run without making the host wait for the GPU's queue. Such a copy reads the
  // memory later, in the GPU's order: change a pinned tensor only after the GPU has run the copies that
  // read it (synchronize); releasing it right away is safe. Throws when no usable CUDA device exists.
  Tensor pin_memory() const;
  bool is_pinned() const;

  // ---- values (copies to the host; synchronises with the device)
  template <class T>
  T item() const;
  template <class T>
  std::vector<T> to_vector() const;
  std::string str() const;  // short printable form: shape, dtype, device and leading values

  // ---- autograd (core/autograd.cpp)
  bool requires_grad() const { return impl_->requires_grad; }
  Tensor& requires_grad_(bool value = true);
  bool is_leaf() const { return impl_->grad_fn == nullptr; }
  Tensor grad() const { return Tensor(impl_->grad); }
  void set_grad(const Tensor& g) const { impl_->grad = g.impl_; }
  void zero_grad() const { impl_->grad.reset(); }
  Tensor detach() const;  // same data, no history
  // Backpropagates from this tensor: a scalar needs no gradient; otherwise pass d(loss)/d(this).
  void backward(const Tensor& grad_output = Tensor()) const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// ---- factories
Tensor empty(const Shape& shape, TensorOptions options = {});
Tensor zeros(const Shape& shape, TensorOptions options = {});
Tensor ones(const Shape& shape, TensorOptions options = {});
Tensor full(const Shape& shape, double value, TensorOptions options = {});
Tensor arange(int64_t n, TensorOptions options = {});  // 0, 1, ..., n-1
Tensor rand(const Shape& shape, TensorOptions options = {});   // uniform [0, 1), from the global seed
Tensor randn(const Shape& shape, TensorOptions options = {});  // standard normal, from the global seed
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
// A tensor holding a copy of `values`, converted to options.dtype (float32 unless given):
//   from_vector(std::vector<float>{...}, {2, 3})            float32
//   from_vector(labels, {n}, DType::int64)                  labels a std::vector<int64_t> or <int32_t>
//   from_vector({1, 2, 3}, {3})                             a braced list of numbers
// Values whose type is options.dtype are copied exactly (an int64 above 2^53 too); others convert.
Tensor from_vector(const std::vector<double>& values, const Shape& shape, TensorOptions options = {});
Tensor from_vector(const std::vector<float>& values, const Shape& shape, TensorOptions options = {});
Tensor from_vector(const std::vector<int32_t>& values, const Shape& shape, TensorOptions options = {});
Tensor from_vector(const std::vector<int64_t>& values, const Shape& shape, TensorOptions options = {});
Tensor from_vector(std::initializer_list<double> values, const Shape& shape, TensorOptions options = {});
template <class T>
Tensor from_data(const T* values, const Shape& shape, Device device = default_device());

// A view of `base`'s storage with another shape/strides/offset and no autograd history.
Tensor make_view(const Tensor& base, const Shape& shape, const Shape& strides, int64_t offset);

// Copies src into dst (same shape and dtype; any devices, any strides). No autograd.
void copy_(const Tensor& dst, const Tensor& src);
// Sets every element of dst to value. No autograd.
void fill_(const Tensor& dst, double value);

}  // namespace minidl
