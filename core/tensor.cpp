#include "core/tensor.h"

#include <cstring>
#include <sstream>

#include "core/backend.h"
#include "core/dispatch.h"
#include "core/philox.h"
#include "core/random.h"
#include "core/tensor_kernels.h"

namespace minidl {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t running = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    strides[i] = running;
    running *= shape[i];
  }
  return strides;
}

Storage::Storage(size_t n, Device d) : nbytes(n), device(d) {
  check_device_usable(d);
  data = backend_for(d.type).allocate(n, d.index);
}

Storage::Storage(size_t n, PinnedHost, DeviceBackend& gpu_backend)
    : nbytes(n), device(Device::cpu()), pinned_by(&gpu_backend) {
  data = gpu_backend.allocate_pinned_host(n);
  MINIDL_CHECK(data != nullptr, "pin_memory: this backend has no page-locked host memory");
}

Storage::~Storage() {
  if (pinned_by != nullptr)
    pinned_by->deallocate_pinned_host(data);
  else
    backend_for(device.type).deallocate(data, nbytes, device.index);
}

int64_t Tensor::size(int d) const {
  const int n = dim();
  const int k = d < 0 ? d + n : d;
  MINIDL_CHECK(k >= 0 && k < n, "size: dim ", d, " out of range for a tensor of shape ", shape_str(shape()));
  return impl_->shape[k];
}

// [doc:is_contiguous] quoted by docs/course/01-tensors.md
bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int i = dim() - 1; i >= 0; --i) {
    if (impl_->shape[i] == 1) continue;  // the stride of a size-1 dim never matters
    if (impl_->strides[i] != expected) return false;
    expected *= impl_->shape[i];
  }
  return true;
}
// [/doc:is_contiguous]

void* Tensor::raw_data() const {
  return static_cast<char*>(impl_->storage->data) + impl_->offset * static_cast<int64_t>(dtype_size(dtype()));
}

// ------------------------------------------------------------------ factories

Tensor empty(const Shape& shape, TensorOptions options) {
  for (int64_t s : shape)
    MINIDL_CHECK(s >= 0, "empty: negative dimension in shape ", shape_str(shape));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(shape_numel(shape) * dtype_size(options.dtype), options.device);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = options.dtype;
  Tensor t(impl);
  if (options.requires_grad) t.requires_grad_(true);
  return t;
}

Tensor full(const Shape& shape, double value, TensorOptions options) {
  const bool rg = options.requires_grad;
  options.requires_grad = false;
  Tensor t = empty(shape, options);
  fill_(t, value);
  if (rg) t.requires_grad_(true);
  return t;
}

Tensor zeros(const Shape& shape, TensorOptions options) { return full(shape, 0.0, options); }
Tensor ones(const Shape& shape, TensorOptions options) { return full(shape, 1.0, options); }
Tensor empty_like(const Tensor& t) { return empty(t.shape(), t.options()); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.options()); }

namespace {
// Fills a host buffer of `dtype` from a double-valued generator, then moves it to the device.
template <class Gen>
Tensor host_generated(const Shape& shape, TensorOptions options, Gen gen) {
  const bool rg = options.requires_grad;
  TensorOptions host = options;
  host.device = Device::cpu();
  host.requires_grad = false;
  Tensor t = empty(shape, host);
  const int64_t n = t.numel();
  switch (options.dtype) {
    case DType::float32: { float* p = t.data<float>(); for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(gen(i)); break; }
    case DType::float64: { double* p = t.data<double>(); for (int64_t i = 0; i < n; ++i) p[i] = gen(i); break; }
    case DType::int32: { int32_t* p = t.data<int32_t>(); for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>(gen(i)); break; }
    case DType::int64: { int64_t* p = t.data<int64_t>(); for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int64_t>(gen(i)); break; }
    case DType::bfloat16: { bfloat16* p = t.data<bfloat16>(); for (int64_t i = 0; i < n; ++i) p[i] = double_to_bfloat16(gen(i)); break; }
  }
  Tensor out = t.to(options.device);
  if (rg) out.requires_grad_(true);
  return out;
}
}  // namespace

Tensor arange(int64_t n, TensorOptions options) {
  return host_generated({n}, options, [](int64_t i) { return static_cast<double>(i); });
}

Tensor rand(const Shape& shape, TensorOptions options) {
  MINIDL_CHECK(is_floating(options.dtype), "rand: needs a floating dtype, got ", dtype_name(options.dtype));
  const uint64_t seed = current_seed(), offset = reserve_random_offset(shape_numel(shape));
  return host_generated(shape, options, [=](int64_t i) { return double(philox_uniform(seed, offset + i)); });
}

Tensor randn(const Shape& shape, TensorOptions options) {
  MINIDL_CHECK(is_floating(options.dtype), "randn: needs a floating dtype, got ", dtype_name(options.dtype));
  const uint64_t seed = current_seed(), offset = reserve_random_offset(shape_numel(shape));
  return host_generated(shape, options, [=](int64_t i) { return philox_normal(seed, offset + i); });
}

Tensor from_vector(const std::vector<double>& values, const Shape& shape, TensorOptions options) {
  MINIDL_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape), "from_vector: ", values.size(),
               " values for shape ", shape_str(shape));
  return host_generated(shape, options, [&](int64_t i) { return values[i]; });
}

namespace {
// A typed vector: copied byte for byte when T is options.dtype's type, converted otherwise.
template <class T>
Tensor from_typed_vector(const std::vector<T>& values, const Shape& shape, TensorOptions options) {
  MINIDL_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape), "from_vector: ", values.size(),
               " values for shape ", shape_str(shape));
  if (options.dtype != dtype_of<T>())
    return host_generated(shape, options, [&](int64_t i) { return static_cast<double>(values[i]); });
  Tensor out = from_data(values.data(), shape, options.device);
  if (options.requires_grad) out.requires_grad_(true);
  return out;
}
}  // namespace

Tensor from_vector(const std::vector<float>& values, const Shape& shape, TensorOptions options) {
  return from_typed_vector(values, shape, options);
}
Tensor from_vector(const std::vector<int32_t>& values, const Shape& shape, TensorOptions options) {
  return from_typed_vector(values, shape, options);
}
Tensor from_vector(const std::vector<int64_t>& values, const Shape& shape, TensorOptions options) {
  return from_typed_vector(values, shape, options);
}
Tensor from_vector(std::initializer_list<double> values, const Shape& shape, TensorOptions options) {
  return from_vector(std::vector<double>(values), shape, options);
}

template <class T>
Tensor from_data(const T* values, const Shape& shape, Device device) {
  Tensor host = empty(shape, TensorOptions(dtype_of<T>(), Device::cpu()));
  std::memcpy(host.raw_data(), values, host.numel() * sizeof(T));
  return host.to(device);
}
template Tensor from_data<float>(const float*, const Shape&, Device);
template Tensor from_data<double>(const double*, const Shape&, Device);
template Tensor from_data<int32_t>(const int32_t*, const Shape&, Device);
template Tensor from_data<int64_t>(const int64_t*, const Shape&, Device);

Tensor make_view(const Tensor& base, const Shape& shape, const Shape& strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.impl()->storage;
  impl->shape = shape;
  impl->strides = strides;
  impl->offset = offset;
  impl->dtype = base.dtype();
  return Tensor(impl);
}

// ------------------------------------------------------------------ copies

void fill_(const Tensor& dst, double value) {
  Tensor d = dst;
  dispatch(keys::fill, dst.device(), d, value);
}

namespace {
// Copies between devices of contiguous tensors through the backends.
void copy_contiguous_across(const Tensor& dst, const Tensor& src) {
  const size_t n = src.numel() * dtype_size(src.dtype());
  const Device sd = src.device(), dd = dst.device();
  if (sd.is_cpu()) {
    backend_for(dd.type).copy_from_host(dst.raw_data(), src.raw_data(), n, dd.index);
  } else if (dd.is_cpu()) {
    backend_for(sd.type).copy_to_host(dst.raw_data(), src.raw_data(), n, sd.index);
  } else {  // device to another device: stage through the host
    std::vector<char> staging(n);
    backend_for(sd.type).copy_to_host(staging.data(), src.raw_data(), n, sd.index);
    backend_for(dd.type).copy_from_host(dst.raw_data(), staging.data(), n, dd.index);
  }
}
}  // namespace

void copy_(const Tensor& dst, const Tensor& src) {
  MINIDL_CHECK(dst.shape() == src.shape(), "copy: destination shape ", shape_str(dst.shape()),
               " differs from source shape ", shape_str(src.shape()));
  Tensor d = dst;
  if (src.device() == dst.device()) {
    if (src.dtype() == dst.dtype())
      dispatch(keys::copy, dst.device(), src, d);
    else
      dispatch(keys::cast, dst.device(), src, d);
    return;
  }
  MINIDL_CHECK(src.dtype() == dst.dtype(), "copy: cannot change dtype (", dtype_name(src.dtype()), " -> ",
               dtype_name(dst.dtype()), ") and device (", src.device().str(), " -> ", dst.device().str(),
               ") in one copy");
  Tensor packed_src = src.is_contiguous() ? src : src.contiguous();
  if (dst.is_contiguous()) {
    copy_contiguous_across(dst, packed_src);
  } else {
    Tensor staging = empty(dst.shape(), dst.options());
    copy_contiguous_across(staging, packed_src);
    dispatch(keys::copy, dst.device(), staging, d);
  }
}

Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
  Tensor out = empty(shape(), TensorOptions(dtype(), device));
  copy_(out, *this);
  return out;
}

bool Tensor::is_pinned() const { return impl_->storage && impl_->storage->pinned_by != nullptr; }

Tensor Tensor::pin_memory() const {
  MINIDL_CHECK(device().is_cpu(), "pin_memory: the tensor is on ", device().str(), "; only CPU tensors are pinned");
  if (is_pinned()) return *this;
  const std::string no_gpu = why_no_gpu();
  MINIDL_CHECK(no_gpu.empty(), "pin_memory: page-locked memory serves copies to a GPU, and there is none (", no_gpu,
               ")");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(numel() * dtype_size(dtype()), Storage::PinnedHost{},
                                            backend_for(DeviceType::cuda));
  impl->shape = shape();
  impl->strides = contiguous_strides(shape());
  impl->dtype = dtype();
  Tensor out(impl);
  if (out.numel() == 0) return out;
  // One copy either way: a plain memcpy of contiguous memory, else copy_'s strided walk (no history).
  if (is_contiguous())
    std::memcpy(out.raw_data(), raw_data(), out.numel() * dtype_size(out.dtype()));
  else
    copy_(out, detach());
  return out;
}

Tensor Tensor::to(DType t) const {
  if (t == dtype()) return *this;
  Tensor out = empty(shape(), TensorOptions(t, device()));
  copy_(out, *this);
  return out;
}

// ------------------------------------------------------------------ values

namespace {
template <class T, class S>
void convert_into(std::vector<T>& out, const S* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(src[i]);
}
template <class T>
void convert_into(std::vector<T>& out, const bfloat16* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(bfloat16_to_float(src[i]));
}
}  // namespace

template <class T>
std::vector<T> Tensor::to_vector() const {
  Tensor host = to(Device::cpu()).contiguous();
  const int64_t n = host.numel();
  std::vector<T> out(n);
  switch (dtype()) {
    case DType::float32: convert_into(out, host.data<float>(), n); break;
    case DType::float64: convert_into(out, host.data<double>(), n); break;
    case DType::int32: convert_into(out, host.data<int32_t>(), n); break;
    case DType::int64: convert_into(out, host.data<int64_t>(), n); break;
    case DType::bfloat16: convert_into(out, host.data<bfloat16>(), n); break;
  }
  return out;
}

template <class T>
T Tensor::item() const {
  MINIDL_CHECK(numel() == 1, "item: tensor of shape ", shape_str(shape()), " has ", numel(),
               " elements, not one");
  return to_vector<T>()[0];
}

template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template int32_t Tensor::item<int32_t>() const;
template int64_t Tensor::item<int64_t>() const;

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  std::ostringstream os;
  os << "tensor(" << shape_str(shape()) << ", " << dtype_name(dtype()) << ", " << device().str() << ") [";
  const std::vector<double> v = to_vector<double>();
  const size_t shown = v.size() < 8 ? v.size() : 8;
  for (size_t i = 0; i < shown; ++i) os << (i ? ", " : "") << v[i];
  if (v.size() > shown) os << ", ...";
  os << "]";
  return os.str();
}

}  // namespace minidl
