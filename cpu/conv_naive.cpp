// cpu/conv_naive.cpp — reference 2-D convolution (cross-correlation) and its two backward stages, as
// direct loops over every index of the formula. Float32 and float64.
//   x [N, C, H, W], w [O, C, KH, KW], y [N, O, OH, OW],  OH = (H + 2*ph - KH) / sh + 1 (likewise OW)
//   y[n,o,p,q]   = sum_{c,i,j} x[n, c, p*sh - ph + i, q*sw - pw + j] * w[o,c,i,j]      (zero outside x)
//   dx[n,c,h,v]  = sum over (o,i,j,p,q) with p*sh - ph + i = h, q*sw - pw + j = v of dy[n,o,p,q] * w[o,c,i,j]
//   dw[o,c,i,j]  = sum_{n,p,q} dy[n,o,p,q] * x[n, c, p*sh - ph + i, q*sw - pw + j]
// Accumulation convention: y and dw are overwritten (=), each element summed in double; dx is zeroed
// and then every (output, tap) pair scatters into it (+=).
// Also the fused forward "conv2d_bias_relu": y[n,o,p,q] = relu(conv(x, w)[n,o,p,q] + bias[o]), the same
// sum, then the bias and the ReLU on each element as it is written.
#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

struct Dims {
  int64_t n, c, h, w, o, kh, kw, oh, ow;
};

Dims dims_of(const Tensor& x, const Tensor& w, const Tensor& y) {
  return {x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3], w.shape()[0],
          w.shape()[2], w.shape()[3], y.shape()[2], y.shape()[3]};
}

// [doc:conv_naive] quoted by docs/course/07-convolution.md
template <class T>
void forward_loops(const T* x, const T* w, T* y, const Dims& d, const Conv2dParams& p) {
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t o = 0; o < d.o; ++o)
      for (int64_t oy = 0; oy < d.oh; ++oy)
        for (int64_t ox = 0; ox < d.ow; ++ox) {
          double acc = 0;
          for (int64_t c = 0; c < d.c; ++c)
            for (int64_t i = 0; i < d.kh; ++i)
              for (int64_t j = 0; j < d.kw; ++j) {
                const int64_t h = oy * p.stride_h - p.pad_h + i, v = ox * p.stride_w - p.pad_w + j;
                if (h < 0 || h >= d.h || v < 0 || v >= d.w) continue;
                acc += static_cast<double>(x[((n * d.c + c) * d.h + h) * d.w + v]) *
                       static_cast<double>(w[((o * d.c + c) * d.kh + i) * d.kw + j]);
              }
          y[((n * d.o + o) * d.oh + oy) * d.ow + ox] = static_cast<T>(acc);
        }
}
// [/doc:conv_naive]

template <class T>
void backward_input_loops(const T* dy, const T* w, T* dx, const Dims& d, const Conv2dParams& p) {
  for (int64_t e = 0; e < d.n * d.c * d.h * d.w; ++e) dx[e] = T(0);
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t o = 0; o < d.o; ++o)
      for (int64_t oy = 0; oy < d.oh; ++oy)
        for (int64_t ox = 0; ox < d.ow; ++ox) {
          const T g = dy[((n * d.o + o) * d.oh + oy) * d.ow + ox];
          for (int64_t c = 0; c < d.c; ++c)
            for (int64_t i = 0; i < d.kh; ++i)
              for (int64_t j = 0; j < d.kw; ++j) {
                const int64_t h = oy * p.stride_h - p.pad_h + i, v = ox * p.stride_w - p.pad_w + j;
                if (h < 0 || h >= d.h || v < 0 || v >= d.w) continue;
                dx[((n * d.c + c) * d.h + h) * d.w + v] += g * w[((o * d.c + c) * d.kh + i) * d.kw + j];
              }
        }
}

template <class T>
void backward_weight_loops(const T* x, const T* dy, T* dw, const Dims& d, const Conv2dParams& p) {
  for (int64_t o = 0; o < d.o; ++o)
    for (int64_t c = 0; c < d.c; ++c)
      for (int64_t i = 0; i < d.kh; ++i)
        for (int64_t j = 0; j < d.kw; ++j) {
          double acc = 0;
          for (int64_t n = 0; n < d.n; ++n)
            for (int64_t oy = 0; oy < d.oh; ++oy)
              for (int64_t ox = 0; ox < d.ow; ++ox) {
                const int64_t h = oy * p.stride_h - p.pad_h + i, v = ox * p.stride_w - p.pad_w + j;
                if (h < 0 || h >= d.h || v < 0 || v >= d.w) continue;
                acc += static_cast<double>(dy[((n * d.o + o) * d.oh + oy) * d.ow + ox]) *
                       static_cast<double>(x[((n * d.c + c) * d.h + h) * d.w + v]);
              }
          dw[((o * d.c + c) * d.kh + i) * d.kw + j] = static_cast<T>(acc);
        }
}

bool conv2d_naive(const Tensor& x, const Tensor& w, Tensor& y, const Conv2dParams& p) {
  const Dims d = dims_of(x, w, y);
  return MINIDL_FLOAT_TYPES(y.dtype(), { forward_loops(x.data<T>(), w.data<T>(), y.data<T>(), d, p); });
}

bool conv2d_bias_relu_naive(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y,
                            const Conv2dParams& p) {
  const Dims d = dims_of(x, w, y);
  return MINIDL_FLOAT_TYPES(y.dtype(), {
    T* out = y.data<T>();
    const T* b = bias.data<T>();
    forward_loops(x.data<T>(), w.data<T>(), out, d, p);
    const int64_t plane = d.oh * d.ow;
    for (int64_t e = 0; e < d.n * d.o * plane; ++e) {
      const T z = out[e] + b[(e / plane) % d.o];
      out[e] = z > T(0) ? z : T(0);
    }
  });
}

bool conv2d_backward_input_naive(const Tensor& grad_y, const Tensor& w, Tensor& grad_x, const Conv2dParams& p) {
  const Dims d = dims_of(grad_x, w, grad_y);
  return MINIDL_FLOAT_TYPES(grad_x.dtype(),
                            { backward_input_loops(grad_y.data<T>(), w.data<T>(), grad_x.data<T>(), d, p); });
}

bool conv2d_backward_weight_naive(const Tensor& x, const Tensor& grad_y, Tensor& grad_w, const Conv2dParams& p) {
  const Dims d = dims_of(x, grad_w, grad_y);
  return MINIDL_FLOAT_TYPES(grad_w.dtype(),
                            { backward_weight_loops(x.data<T>(), grad_y.data<T>(), grad_w.data<T>(), d, p); });
}

}  // namespace

void register_conv_naive_cpu() {
  const char* d = "reference: direct loops over the formula, double accumulator";
  register_kernel(keys::conv2d, DeviceType::cpu, "naive", Priority::reference, d, conv2d_naive);
  register_kernel(keys::conv2d_bias_relu, DeviceType::cpu, "naive", Priority::reference,
                  "reference: the forward loops, then bias and ReLU per element", conv2d_bias_relu_naive);
  register_kernel(keys::conv2d_backward_input, DeviceType::cpu, "naive", Priority::reference,
                  "reference: scatter every (output, tap) product into dx",
                  conv2d_backward_input_naive);
  register_kernel(keys::conv2d_backward_weight, DeviceType::cpu, "naive", Priority::reference, d,
                  conv2d_backward_weight_naive);
}

}  // namespace minidl
