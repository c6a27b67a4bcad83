// core/call_shape.cpp — the text of a tensor and of a tensor list in a call's shape (core/call_shape.h).
#include "core/call_shape.h"

#include "core/tensor.h"

namespace minidl {

void describe_arg(std::string& out, const Tensor& t) {
  if (!out.empty()) out += ',';
  if (!t.defined()) {
    out += '-';
    return;
  }
  if (t.dim() == 0) out += "0d";
  for (int i = 0; i < t.dim(); ++i) {
    if (i > 0) out += 'x';
    out += std::to_string(t.shape()[i]);
  }
  if (t.dtype() != DType::float32) out += std::string(":") + dtype_name(t.dtype());
  if (!t.is_contiguous()) out += ":strided";
}

std::string describe_axes(char letter, int h, int w) {
  std::string out(1, letter);
  out += std::to_string(h);
  if (w != h) out += "x" + std::to_string(w);
  return out;
}

void describe_arg(std::string& out, const std::vector<Tensor>& list) {
  int64_t elements = 0;
  for (const Tensor& t : list)
    if (t.defined()) elements += t.numel();
  if (!out.empty()) out += ',';
  out += "[" + std::to_string(list.size()) + ":" + std::to_string(elements) + "]";
}

}  // namespace minidl
