// exercises/07-im2col-conv/check.cpp — the checker of exercise 7: im2col on small images entry by entry
// (each column and row named by its (p, q) and (c, i, j)), then the convolution "student" against the naive
// kernel (strides, padding, rectangular kernels, batches, float64), the float64 gradient check through the
// op conv2d, and the bench next to naive and im2col_blas.
#include <sstream>
#include <vector>

#include "exercises/07-im2col-conv/conv_im2col.h"
#include "exercises/common/exercise.h"
#include "ops/kernel_signatures.h"
#include "ops/ops.h"
#include "tests/test_util.h"

using namespace minidl;
using exercise::kStudent;

namespace {

ConvGeometry geometry(int64_t c, int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t s, int64_t pad) {
  return {c, h, w, kh, kw, s, s, pad, pad, (h + 2 * pad - kh) / s + 1, (w + 2 * pad - kw) / s + 1};
}

// The student's im2col of an image holding 1, 2, 3, ... against the formula, entry by entry.
std::string check_im2col(const ConvGeometry& g) {
  std::vector<double> x(g.c * g.h * g.w);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i + 1);
  const int64_t rows = g.c * g.kh * g.kw, cols = g.oh * g.ow;
  std::vector<double> col(rows * cols, -777.0);
  im2col(x.data(), g, col.data());
  for (int64_t c = 0; c < g.c; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j)
        for (int64_t p = 0; p < g.oh; ++p)
          for (int64_t q = 0; q < g.ow; ++q) {
            const int64_t r = (c * g.kh + i) * g.kw + j, k = p * g.ow + q;
            const int64_t h = p * g.sh - g.ph + i, w = q * g.sw - g.pw + j;
            const bool inside = h >= 0 && h < g.h && w >= 0 && w < g.w;
            const double expected = inside ? x[(c * g.h + h) * g.w + w] : 0.0;
            const double got = col[r * cols + k];
            if (got != expected) {
              std::ostringstream os;
              os << "image [C=" << g.c << ", H=" << g.h << ", W=" << g.w << "] holding 1, 2, 3, ... row by row; kernel "
                 << g.kh << "x" << g.kw << ", stride " << g.sh << ", padding " << g.ph << " -> col [" << rows << ", "
                 << cols << "]\n"
                 << "col[" << r << ", " << k << "] is " << got << ", expected " << expected << ":\n"
                 << "  row " << r << " is (c, i, j) = (" << c << ", " << i << ", " << j << "), column " << k
                 << " is the output position (p, q) = (" << p << ", " << q << "),\n"
                 << "  so the source pixel is x[" << c << ", " << p << "*" << g.sh << " - " << g.ph << " + " << i << ", "
                 << q << "*" << g.sw << " - " << g.pw << " + " << j << "] = x[" << c << ", " << h << ", " << w << "]"
                 << (inside ? "" : ", outside the image: padding, 0") << (got == -777.0 ? "\n  (-777: never written)" : "");
              return os.str();
            }
          }
  return "";
}

// The student's conv2d kernel against the naive one.
std::string check_conv(const Shape& xs, const Shape& ws, int stride, int pad, DType dtype = DType::float32) {
  Conv2dParams p;
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  const Tensor x = testing::uniform(xs, -1, 1, dtype), w = testing::uniform(ws, -1, 1, dtype);
  const Shape ys{xs[0], ws[0], (xs[2] + 2 * pad - ws[2]) / stride + 1, (xs[3] + 2 * pad - ws[3]) / stride + 1};
  Tensor expected = empty(ys, dtype), got = full(ys, -777.0, dtype);
  exercise::call_kernel<Conv2dKernel>("conv2d", DeviceType::cpu, "naive", x, w, expected, p);
  if (!exercise::call_kernel<Conv2dKernel>("conv2d", DeviceType::cpu, kStudent, x, w, got, p))
    return "your kernel declined the call";
  const std::string diff = testing::compare(got, expected, 1e-4, 1e-5 * static_cast<double>(ws[1] * ws[2] * ws[3]));
  return diff.empty() ? "" : str_cat("x ", shape_str(xs), ", w ", shape_str(ws), ", stride ", stride, ", padding ", pad,
                                     " -> y ", shape_str(ys), "\n", diff);
}

}  // namespace

int main(int argc, char** argv) {
  exercise::Checker c(argc, argv, {7, "convolution as im2col + GEMM", "exercises/07-im2col-conv/conv_im2col.cpp"});
  register_student_conv2d();

  c.section("7a  im2col, entry by entry");
  c.check("1 channel 3x3, kernel 2x2, stride 1, no padding -> col [4, 4]", [] { return check_im2col(geometry(1, 3, 3, 2, 2, 1, 0)); });
  c.check("1 channel 3x3, kernel 3x3, padding 1 -> col [9, 9] (zeros at the border)",
          [] { return check_im2col(geometry(1, 3, 3, 3, 3, 1, 1)); });
  c.check("2 channels 5x4, kernel 3x2, stride 2, padding 1", [] { return check_im2col(geometry(2, 5, 4, 3, 2, 2, 1)); });
  c.check("3 channels 7x7, kernel 1x1 (col is the image itself)", [] { return check_im2col(geometry(3, 7, 7, 1, 1, 1, 0)); });

  c.section("7b  the kernel \"student\" against the naive convolution");
  c.check("registered for key \"conv2d\" on the CPU",
          [] { return exercise::registered("conv2d", DeviceType::cpu, "register_student_conv2d()"); });
  c.check("x [1, 1, 5, 5], w [1, 1, 3, 3]", [] { return check_conv({1, 1, 5, 5}, {1, 1, 3, 3}, 1, 0); });
  c.check("x [2, 3, 8, 8], w [4, 3, 3, 3], padding 1", [] { return check_conv({2, 3, 8, 8}, {4, 3, 3, 3}, 1, 1); });
  c.check("x [2, 2, 9, 7], w [3, 2, 3, 2], stride 2, padding 1", [] { return check_conv({2, 2, 9, 7}, {3, 2, 3, 2}, 2, 1); });
  c.check("MNIST's first layer: x [4, 1, 28, 28], w [32, 1, 3, 3]", [] { return check_conv({4, 1, 28, 28}, {32, 1, 3, 3}, 1, 0); });
  c.check("float64: x [2, 3, 6, 6], w [2, 3, 3, 3], padding 2",
          [] { return check_conv({2, 3, 6, 6}, {2, 3, 3, 3}, 1, 2, DType::float64); });

  c.section("7c  the gradient check through conv2d (your forward, the default backward kernels)");
  c.check("gradcheck x [2, 2, 5, 5], w [3, 2, 3, 3], bias, stride 1, padding 1", [] {
    exercise::Selected s("conv2d", DeviceType::cpu, kStudent);
    const std::string report = testing::gradcheck(
        [](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], in[2], 1, 1); },
        {testing::uniform({2, 2, 5, 5}, -1, 1).requires_grad_(), testing::uniform({3, 2, 3, 3}, -1, 1).requires_grad_(),
         testing::uniform({3}, -1, 1).requires_grad_()});
    if (last_kernel("conv2d", DeviceType::cpu) != kStudent)
      return str_cat("the forward was served by \"", last_kernel("conv2d", DeviceType::cpu), "\", not by your kernel");
    return report.empty() ? "" : report + "(the numeric slopes come from your forward; the analytic gradients from "
                                          "minidl's backward kernels: a mismatch means the forward is off)";
  });

  c.bench({"conv2d"}, {kStudent, "naive", "im2col_blas"},
          {"conv2d:8x1x28x28,32x1x3x3", "conv2d:64x1x28x28,32x1x3x3", "conv2d:64x32x26x26,64x32x3x3"});
  return c.finish();
}
