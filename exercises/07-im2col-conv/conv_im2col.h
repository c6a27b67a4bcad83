// exercises/07-im2col-conv/conv_im2col.h — what exercise 7's file (conv_im2col.cpp) defines, for the
// checker (check.cpp). Chapter: docs/course/07-convolution.md.
#pragma once
#include <cstdint>

namespace minidl {

// The sizes of one convolution (ops/kernel_signatures.h, Conv2dKernel): an image of C channels, H x W; a
// kernel KH x KW; strides sh, sw; zero padding ph, pw; the output OH x OW.
struct ConvGeometry {
  int64_t c, h, w;
  int64_t kh, kw;
  int64_t sh, sw, ph, pw;
  int64_t oh, ow;
};

// col [C*KH*KW, OH*OW] <- the receptive fields of one image x [C, H, W] (the formula in conv_im2col.cpp).
void im2col(const float* x, const ConvGeometry& g, float* col);
void im2col(const double* x, const ConvGeometry& g, double* col);

// Registers the exercise's convolution as "student" for key "conv2d" on the CPU.
void register_student_conv2d();

}  // namespace minidl
