// exercises/07-im2col-conv/conv_im2col.cpp — EXERCISE 7, no scaffolding: convolution as a matrix product.
// Read first: docs/course/07-convolution.md. Check your work: `make exercise N=7`.
//
// Contract:
//   im2col_loops(x, g, col): from one image x [C, H, W], col [C*KH*KW, OH*OW] (row-major) with
//     col[(c*KH + i)*KW + j, p*OW + q] = x[c, p*sh - ph + i, q*sw - pw + j], and 0 where that row or column
//     of x is outside the image. The kernel around it (given) multiplies W [O, C*KH*KW] by col.
#include "exercises/07-im2col-conv/conv_im2col.h"

#include "core/dispatch.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

template <class T>
void im2col_loops(const T* x, const ConvGeometry& g, T* col) {
  (void)x;
  (void)g;
  (void)col;
}

// The kernel: per image, col = im2col(x_n), then y_n = W · col through the "matmul" key.
bool conv2d_student(const Tensor& x, const Tensor& w, Tensor& y, const Conv2dParams& p) {
  if (x.dtype() != DType::float32 && x.dtype() != DType::float64) return false;
  const ConvGeometry g{x.shape()[1], x.shape()[2], x.shape()[3],  // c, h, w
                       w.shape()[2], w.shape()[3],                 // kh, kw
                       p.stride_h,   p.stride_w,   p.pad_h, p.pad_w,
                       y.shape()[2], y.shape()[3]};                // oh, ow
  const int64_t n_images = x.shape()[0], o = w.shape()[0], ck = g.c * g.kh * g.kw, positions = g.oh * g.ow;
  Tensor col = empty({1, ck, positions}, x.options());
  const Tensor weights = w.view({1, o, ck});  // W [O, C*KH*KW]: the weight's memory, read as a matrix
  for (int64_t n = 0; n < n_images; ++n) {
    if (x.dtype() == DType::float32)
      im2col(x.data<float>() + n * g.c * g.h * g.w, g, col.data<float>());
    else
      im2col(x.data<double>() + n * g.c * g.h * g.w, g, col.data<double>());
    Tensor y_n = y.select(0, n).view({1, o, positions});  // image n's output, [O, OH*OW], in place in y
    dispatch(keys::matmul, x.device(), weights, col, y_n, false, false);
  }
  return true;
}

}  // namespace

void im2col(const float* x, const ConvGeometry& g, float* col) { im2col_loops(x, g, col); }
void im2col(const double* x, const ConvGeometry& g, double* col) { im2col_loops(x, g, col); }

// Priority -10: serves only when selected (the checker selects it).
void register_student_conv2d() {
  register_kernel(keys::conv2d, DeviceType::cpu, "student", Priority::reference - 10,
                  "exercise 7: im2col per image, then the matmul key", conv2d_student);
}

}  // namespace minidl
