// exercises/01-strided-copy/check.cpp — the checker of exercise 1: element_offset on the chapter's
// views, then the copy kernel on every kind of view (transpose, permute, slice, select, expand, a strided
// destination) against the naive copy, through `contiguous()`, and the bench.
#include <cmath>
#include <sstream>

#include "exercises/01-strided-copy/strided_copy.h"
#include "exercises/common/exercise.h"
#include "ops/kernel_signatures.h"
#include "ops/ops.h"
#include "tests/test_util.h"

using namespace minidl;
using exercise::kStudent;

namespace {

// The index (i0, ..., ik) of row-major position `linear`, for messages.
std::string index_of(const Shape& shape, int64_t linear) {
  std::vector<int64_t> index(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    index[d] = shape[d] > 0 ? linear % shape[d] : 0;
    linear = shape[d] > 0 ? linear / shape[d] : 0;
  }
  std::ostringstream os;
  os << "(";
  for (size_t d = 0; d < index.size(); ++d) os << (d ? ", " : "") << index[d];
  os << ")";
  return os.str();
}

// Every position of a view of a real tensor: element_offset must give the offset the view really has.
std::string check_offsets(const Tensor& view) {
  const Shape& shape = view.shape();
  const Shape& strides = view.strides();
  for (int64_t i = 0; i < view.numel(); ++i) {
    // The expected offset, computed from the index written out in full.
    int64_t expected = 0, rest = i;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      expected += (rest % shape[d]) * strides[d];
      rest /= shape[d];
    }
    const int64_t got = element_offset(shape, strides, i);
    if (got != expected) {
      std::ostringstream os;
      os << "element_offset(shape " << shape_str(shape) << ", strides " << shape_str(strides) << ", " << i
         << ") returned " << got << ", expected " << expected << ".\nPosition " << i << " is the index "
         << index_of(shape, i) << " (the last dimension varies fastest), and its offset is the sum of index[d] * "
            "strides[d] = " << expected << ".";
      return os.str();
    }
  }
  return "";
}

// Runs the student's kernel on (src, dst) and compares dst with what the naive kernel writes.
// may_decline: the kernel may refuse this dtype (integers).
std::string check_copy(const Tensor& src, Tensor dst, bool may_decline = false) {
  Tensor expected = empty(dst.shape(), dst.options());
  exercise::call_kernel<CopyKernel>("copy", DeviceType::cpu, "naive", src, expected);
  fill_(dst, -777.0);  // a sentinel: elements the kernel forgets keep it
  const bool served = exercise::call_kernel<CopyKernel>("copy", DeviceType::cpu, kStudent, src, dst);
  if (!served) {
    if (may_decline) return "";
    return str_cat("your kernel declined (returned false) a ", dtype_name(src.dtype()),
                   " copy; it must serve float32 and float64");
  }
  const std::string diff = testing::compare(dst, expected, 0, 0);
  if (diff.empty()) return "";
  bool unwritten = false;
  for (double v : dst.to_vector<double>()) unwritten = unwritten || v == -777.0;
  const std::string hint =
      unwritten ? "Elements still -777 were never written: does the loop cover every position, and is the dst offset "
                  "computed from dst's own shape and strides?"
                : "Every element was written, some from or to the wrong place. data<T>() already points at element "
                  "(0, ..., 0) (the view's offset is applied): adding offset() again shifts every read by it.";
  return str_cat("src: shape ", shape_str(src.shape()), ", strides ", shape_str(src.strides()), ", offset ",
                 src.offset(), "; dst: strides ", shape_str(dst.strides()), ", offset ", dst.offset(), "\n", diff, hint);
}

Tensor numbered(const Shape& shape, DType dtype = DType::float32) {
  return arange(shape_numel(shape), TensorOptions(dtype)).view(shape);
}

}  // namespace

int main(int argc, char** argv) {
  exercise::Checker c(argc, argv, {1, "copy a tensor of any strides", "exercises/01-strided-copy/strided_copy.cpp"});
  register_student_copy();

  c.section("1a  element_offset: the offset of each position of a view");
  c.check("a contiguous [2, 3] (strides [3, 1])", [] { return check_offsets(numbered({2, 3})); });
  c.check("the transpose of a contiguous [2, 3]: shape [3, 2], strides [1, 3]",
          [] { return check_offsets(numbered({2, 3}).transpose(0, 1)); });
  c.check("a permute (2, 0, 1) of a contiguous [2, 3, 4]: shape [4, 2, 3], strides [1, 12, 4]",
          [] { return check_offsets(numbered({2, 3, 4}).permute({2, 0, 1})); });
  c.check("a slice with a step: columns 1, 4, 7 of a [4, 10]", [] { return check_offsets(numbered({4, 10}).slice(1, 1, 9, 3)); });
  c.check("an expand of a [3, 1] to [3, 4] (stride 0)", [] { return check_offsets(numbered({3, 1}).expand({3, 4})); });
  c.check("a scalar (no dimensions)", [] {
    const int64_t got = element_offset({}, {}, 0);
    return got == 0 ? "" : str_cat("element_offset(shape [], strides [], 0) returned ", got, ", expected 0");
  });

  c.section("1b  the copy kernel \"student\" against the naive copy");
  c.check("registered for key \"copy\" on the CPU", [] { return exercise::registered("copy", DeviceType::cpu, "register_student_copy()"); });
  c.check("contiguous [5, 7] float32", [] { return check_copy(numbered({5, 7}), empty({5, 7})); });
  c.check("a transposed view [7, 5] (strides [1, 7]) into a contiguous dst",
          [] { return check_copy(numbered({5, 7}).transpose(0, 1), empty({7, 5})); });
  c.check("a permuted [4, 2, 3] float64 view", [] {
    return check_copy(numbered({2, 3, 4}, DType::float64).permute({2, 0, 1}), empty({4, 2, 3}, DType::float64));
  });
  c.check("a slice with a step and an offset: [4, 10] columns 1, 4, 7",
          [] { return check_copy(numbered({4, 10}).slice(1, 1, 9, 3), empty({4, 3})); });
  c.check("one row of a [4, 6] (select: offset 12)", [] { return check_copy(numbered({4, 6}).select(0, 2), empty({6})); });
  c.check("an expanded [3, 1] -> [3, 4] (stride 0: each value read 4 times)",
          [] { return check_copy(numbered({3, 1}).expand({3, 4}), empty({3, 4})); });
  c.check("into a strided dst: a [3, 4] into the transpose of a [4, 3]", [] {
    Tensor base = empty({4, 3});
    return check_copy(numbered({3, 4}) + 1.0, base.transpose(0, 1));
  });
  c.check("an empty [0, 5]", [] { return check_copy(empty({0, 5}), empty({0, 5})); });
  c.check("a scalar (no dimensions)", [] { return check_copy(full({}, 3.5), empty({})); });
  c.check("int64 (may be declined)", [] {
    return check_copy(numbered({3, 4}, DType::int64).transpose(0, 1), empty({4, 3}, DType::int64), true);
  });

  c.section("1c  through the op: x.transpose(0, 1).contiguous() with --kernel copy=student");
  c.check("contiguous() of a transposed [64, 33] runs your kernel and gives the transpose", [] {
    const Tensor x = testing::uniform({64, 33}, -1, 1, DType::float32);
    Tensor got;
    {
      exercise::Selected s("copy", DeviceType::cpu, kStudent);
      got = x.transpose(0, 1).contiguous();
      if (last_kernel("copy", DeviceType::cpu) != kStudent)
        return str_cat("the copy was served by \"", last_kernel("copy", DeviceType::cpu), "\", not by your kernel");
    }
    // The expected values, read one by one through the index (no copy kernel involved).
    const std::vector<float> v = x.to_vector<float>();
    std::vector<double> t(v.size());
    for (int64_t i = 0; i < 33; ++i)
      for (int64_t j = 0; j < 64; ++j) t[i * 64 + j] = v[j * 33 + i];
    return testing::compare(got, from_vector(t, {33, 64}), 0, 0);
  });

  c.bench({"copy"}, {kStudent, "naive", "memcpy"}, {"copy:64x32x26x26,t", "copy:64x32x26x26", "copy:4096x4096,t"});
  return c.finish();
}
