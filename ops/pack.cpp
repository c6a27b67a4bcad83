// ops/pack.cpp — pack_: several tensors copied into ranges of one flat buffer by one kernel call.
//
//   flat[offsets[k] + i] = srcs[k][i]      for k = 0 .. n-1, i = 0 .. numel(srcs[k]) - 1
//
// Why an op for this: copy_ per tensor is one dispatch and one launch (or cudaMemcpyAsync) per tensor.
// DataParallel (dist/data_parallel.cpp) gathers a bucket's gradients into its flat buffer every step;
// MNIST's CNN has 8 of them, and on a GPU its whole step is about 0.6 ms of small launches, so 8 copies
// are a measurable part of it. "pack" does them in one launch (cuda/copy.cu, "multi_tensor").
#include <algorithm>
#include <utility>

#include "core/dispatch.h"
#include "ops/kernel_signatures.h"
#include "ops/op_checks.h"
#include "ops/ops.h"

namespace minidl {

void pack_(const Tensor& flat, const std::vector<Tensor>& srcs, const std::vector<int64_t>& offsets) {
  MINIDL_CHECK(flat.defined() && flat.dim() == 1 && flat.is_contiguous(),
               "pack_: flat must be a 1-D contiguous tensor, got ",
               flat.defined() ? shape_str(flat.shape()) : std::string("an undefined tensor"));
  MINIDL_CHECK(srcs.size() == offsets.size(), "pack_: ", srcs.size(), " tensors but ", offsets.size(), " offsets");
  if (srcs.empty()) return;
  std::vector<Tensor> parts;
  std::vector<std::pair<int64_t, int64_t>> ranges;  // [begin, end) in flat, to check for overlaps
  parts.reserve(srcs.size());
  for (size_t k = 0; k < srcs.size(); ++k) {
    const Tensor& s = srcs[k];
    MINIDL_CHECK(s.defined(), "pack_: tensor ", k, " is undefined");
    MINIDL_CHECK(s.device() == flat.device(), "pack_: tensor ", k, " is on ", s.device().str(), ", flat on ",
                 flat.device().str());
    MINIDL_CHECK(s.dtype() == flat.dtype(), "pack_: tensor ", k, " is ", dtype_name(s.dtype()), ", flat is ",
                 dtype_name(flat.dtype()));
    MINIDL_CHECK(offsets[k] >= 0 && offsets[k] + s.numel() <= flat.numel(), "pack_: tensor ", k, " of ",
                 s.numel(), " elements at offset ", offsets[k], " does not fit in flat of ", flat.numel());
    parts.push_back(s.detach().contiguous());
    ranges.emplace_back(offsets[k], offsets[k] + s.numel());
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t k = 1; k < ranges.size(); ++k)
    MINIDL_CHECK(ranges[k].first >= ranges[k - 1].second, "pack_: the ranges [", ranges[k - 1].first, ", ",
                 ranges[k - 1].second, ") and [", ranges[k].first, ", ", ranges[k].second, ") overlap");
  Tensor out = flat;
  dispatch(keys::pack, flat.device(), parts, offsets, out);
}

}  // namespace minidl
