// core/memory_format.cpp — channels-last strides, the format checks and views, and the list of kernels
// declared to serve channels-last tensors (core/memory_format.h).
#include "core/memory_format.h"

#include <map>
#include <mutex>
#include <set>
#include <tuple>

namespace minidl {

const char* memory_format_name(MemoryFormat format) {
  return format == MemoryFormat::channels_last ? "nhwc" : "nchw";
}

MemoryFormat parse_memory_format(const std::string& name) {
  if (name == "nchw" || name == "contiguous") return MemoryFormat::contiguous;
  if (name == "nhwc" || name == "channels_last") return MemoryFormat::channels_last;
  throw Error(str_cat("memory format '", name, "' is not nchw or nhwc"));
}

Shape channels_last_strides(const Shape& shape) {
  MINIDL_CHECK(shape.size() == 4, "channels_last_strides: expected a 4-D shape [N, C, H, W], got ", shape_str(shape));
  const int64_t c = shape[1], h = shape[2], w = shape[3];
  return {h * w * c, 1, w * c, c};
}

bool is_channels_last(const Tensor& t) {
  if (t.dim() != 4) return false;
  // Walk the dims from the innermost of NHWC (c, w, h, n), as Tensor::is_contiguous walks NCHW's.
  const int order[4] = {1, 3, 2, 0};
  int64_t expected = 1;
  for (int d : order) {
    if (t.shape()[d] == 1) continue;
    if (t.strides()[d] != expected) return false;
    expected *= t.shape()[d];
  }
  return true;
}

MemoryFormat suggest_memory_format(const Tensor& t) {
  if (!t.defined() || !is_channels_last(t)) return MemoryFormat::contiguous;
  if (!t.is_contiguous() || t.strides() == channels_last_strides(t.shape())) return MemoryFormat::channels_last;
  return MemoryFormat::contiguous;
}

Tensor empty_channels_last(const Shape& shape, TensorOptions options) {
  MINIDL_CHECK(shape.size() == 4, "empty_channels_last: expected a 4-D shape [N, C, H, W], got ", shape_str(shape));
  options.requires_grad = false;
  const Tensor nhwc = empty({shape[0], shape[2], shape[3], shape[1]}, options);
  return make_view(nhwc, shape, channels_last_strides(shape), 0);
}

Tensor empty_in_format(const Shape& shape, TensorOptions options, MemoryFormat format) {
  if (format == MemoryFormat::channels_last && shape.size() == 4) return empty_channels_last(shape, options);
  return empty(shape, options);
}

Tensor nhwc_view(const Tensor& t) {
  MINIDL_CHECK(t.dim() == 4, "nhwc_view: expected a 4-D tensor [N, C, H, W], got ", shape_str(t.shape()));
  const Shape& s = t.shape();
  const Shape& st = t.strides();
  return make_view(t, {s[0], s[2], s[3], s[1]}, {st[0], st[2], st[3], st[1]}, t.offset());
}

Tensor nchw_view(const Tensor& nhwc) {
  MINIDL_CHECK(nhwc.dim() == 4, "nchw_view: expected a 4-D tensor [N, H, W, C], got ", shape_str(nhwc.shape()));
  const Shape& s = nhwc.shape();
  const Shape& st = nhwc.strides();
  return make_view(nhwc, {s[0], s[3], s[1], s[2]}, {st[0], st[3], st[1], st[2]}, nhwc.offset());
}

Tensor copy_in_format(const Tensor& t, MemoryFormat format) {
  if (format == MemoryFormat::channels_last && t.dim() == 4) {
    if (suggest_memory_format(t) == MemoryFormat::channels_last) return t;
    // Already in NHWC order (one channel, or 1x1 planes): the same memory with the literal strides.
    if (is_channels_last(t)) return make_view(t, t.shape(), channels_last_strides(t.shape()), t.offset());
    Tensor out = empty_channels_last(t.shape(), t.options());
    copy_(out, t);
    return out;
  }
  if (t.is_contiguous()) {
    const Shape strides = contiguous_strides(t.shape());
    return t.strides() == strides ? t : make_view(t, t.shape(), strides, t.offset());
  }
  Tensor out = empty(t.shape(), t.options());
  copy_(out, t);
  return out;
}

namespace {

using Declared = std::tuple<std::string, int, std::string>;  // key, device type, kernel name

// The declarations, and for each kernel list the dispatch table has handed out (candidates() returns
// immutable lists, a new one after every selection or registration) its declared kernels: a dispatch
// filters by one map lookup, not by comparing names. A declaration clears the filtered lists.
struct DeclaredKernels {
  std::mutex mutex;
  std::set<Declared> declared;
  std::map<const std::vector<const KernelInfo*>*, std::vector<const KernelInfo*>> filtered;
};

DeclaredKernels& declared_kernels() {
  static DeclaredKernels d;
  return d;
}

}  // namespace

void declare_channels_last_kernel(const KernelKeyBase& key, DeviceType device, const std::string& name) {
  DeclaredKernels& d = declared_kernels();
  std::lock_guard<std::mutex> lock(d.mutex);
  d.declared.insert(Declared{key.name(), static_cast<int>(device), name});
  d.filtered.clear();
}

bool serves_channels_last(const std::string& key, DeviceType device, const std::string& name) {
  DeclaredKernels& d = declared_kernels();
  std::lock_guard<std::mutex> lock(d.mutex);
  return d.declared.count(Declared{key, static_cast<int>(device), name}) > 0;
}

std::vector<const KernelInfo*> channels_last_candidates(const KernelKeyBase& key, DeviceType device) {
  const std::vector<const KernelInfo*>& all = KernelRegistry::instance().candidates(key, device);
  DeclaredKernels& d = declared_kernels();
  std::lock_guard<std::mutex> lock(d.mutex);
  auto it = d.filtered.find(&all);
  if (it == d.filtered.end()) {
    std::vector<const KernelInfo*> out;
    for (const KernelInfo* k : all)
      if (d.declared.count(Declared{key.name(), static_cast<int>(device), k->name}) > 0) out.push_back(k);
    it = d.filtered.emplace(&all, std::move(out)).first;
  }
  return it->second;
}

}  // namespace minidl
