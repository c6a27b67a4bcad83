// cpu/conv_im2col.cpp — convolution as matrix products on OpenBLAS ("im2col_blas"), for the forward pass
// and both backward stages. Float32 and float64.
//
// im2col unrolls one image's receptive fields into the columns of a matrix: col [CK, P], CK = C*KH*KW
// (row r = (c*KH + i)*KW + j), P = OH*OW (column p*OW + q):
//   col[r, p*OW + q] = x[c, p*sh - ph + i, q*sw - pw + j]        (0 where that falls in the padding)
// With the weight seen as W [O, CK] and one image's dy as dy_n [O, P]:
//   forward           y_n    = W · col_n                               GEMM  M=O,  N=P,  K=CK
//   backward_input    dcol_n = W^T · dy_n,  dx_n = col2im(dcol_n)       GEMM  M=CK, N=P,  K=O
//                     (col2im adds every entry of dcol back onto the pixel its col entry was copied from)
//   backward_weight   dW     = sum_n dy_n · col_n^T                     GEMM  M=O,  N=CK, K=P, accumulated
//
// Threads. The batch is split into one contiguous chunk of images per OpenMP thread. Each thread unrolls
// into its own col buffer and calls a single-threaded GEMM on it: the copies (im2col, col2im) run in
// parallel, col is consumed from the core's cache right after it is written, and nobody waits on a
// shared BLAS pool (OpenBLAS' own threading is set to 1 for the region and restored after). With fewer
// images than threads (inference on one image) the images run in order and OpenBLAS threads each GEMM.
// Small images (P < kMinColumns) are grouped, G per GEMM, their columns side by side (col [CK, G*P]),
// because a GEMM with few columns runs far below peak; outputs then pass through a [O, G*P] staging
// buffer. A 1x1 convolution with stride 1 and no padding uses the image itself as col (no copy).
//
// Accumulation convention: y, dx and dW are overwritten (=). dx is zeroed per image before col2im adds
// (+=) into it; each thread sums its images' dW products privately (GEMM beta = 1 after its first image)
// and the per-thread sums are added at the end.
#include "core/dispatch.h"
#include "ops/kernel_signatures.h"

#ifdef MINIDL_WITH_OPENBLAS
#include <algorithm>
#include <climits>
#include <vector>

#include "cpu/blas.h"
#include "cpu/strided.h"

namespace minidl {

namespace {

constexpr int64_t kMinColumns = 256;  // below this many GEMM columns, group images

struct ConvShape {
  int64_t n, c, h, w, o, kh, kw, oh, ow;
  int64_t sh, sw, ph, pw;
  int64_t ck() const { return c * kh * kw; }
  int64_t p() const { return oh * ow; }
  int64_t image() const { return c * h * w; }
  bool col_is_image() const { return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0; }
};

ConvShape shape_of(const Tensor& x, const Tensor& w, const Tensor& y, const Conv2dParams& p) {
  return {x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3], w.shape()[0], w.shape()[2], w.shape()[3],
          y.shape()[2], y.shape()[3], p.stride_h,   p.stride_w,   p.pad_h,      p.pad_w};
}

// The output columns q in [q0, q1) whose input column q*stride - pad + j lies inside [0, size).
struct Inside {
  int64_t q0, q1;
};
Inside inside_range(int64_t size, int64_t pad, int64_t j, int64_t stride, int64_t out) {
  const int64_t before = pad - j;           // q*stride >= before
  const int64_t last = size - 1 + pad - j;  // q*stride <= last
  const int64_t q1 = last < 0 ? 0 : std::min(out, last / stride + 1);
  const int64_t q0 = before <= 0 ? 0 : std::min(q1, (before + stride - 1) / stride);
  return {q0, q1};
}

// col (row stride ld) <- the receptive fields of one image x [C, H, W].
template <class T>
void im2col(const T* x, const ConvShape& s, T* col, int64_t ld) {
  for (int64_t c = 0; c < s.c; ++c)
    for (int64_t i = 0; i < s.kh; ++i)
      for (int64_t j = 0; j < s.kw; ++j) {
        T* row = col + ((c * s.kh + i) * s.kw + j) * ld;
        const Inside in = inside_range(s.w, s.pw, j, s.sw, s.ow);
        for (int64_t p = 0; p < s.oh; ++p) {
          T* dst = row + p * s.ow;
          const int64_t h = p * s.sh - s.ph + i;
          if (h < 0 || h >= s.h) {
            std::fill(dst, dst + s.ow, T(0));
            continue;
          }
          const T* src = x + (c * s.h + h) * s.w;  // src[q*sw - pw + j] for q in [q0, q1)
          std::fill(dst, dst + in.q0, T(0));
          if (s.sw == 1)  // a contiguous run: a plain copy
            std::copy(src + in.q0 - s.pw + j, src + in.q1 - s.pw + j, dst + in.q0);
          else
            for (int64_t q = in.q0; q < in.q1; ++q) dst[q] = src[q * s.sw - s.pw + j];
          std::fill(dst + in.q1, dst + s.ow, T(0));
        }
      }
}

// dx [C, H, W] += every entry of col (row stride ld) at the pixel im2col took it from.
template <class T>
void col2im(const T* col, int64_t ld, const ConvShape& s, T* dx) {
  for (int64_t c = 0; c < s.c; ++c)
    for (int64_t i = 0; i < s.kh; ++i)
      for (int64_t j = 0; j < s.kw; ++j) {
        const T* row = col + ((c * s.kh + i) * s.kw + j) * ld;
        const Inside in = inside_range(s.w, s.pw, j, s.sw, s.ow);
        for (int64_t p = 0; p < s.oh; ++p) {
          const int64_t h = p * s.sh - s.ph + i;
          if (h < 0 || h >= s.h) continue;
          const T* src = row + p * s.ow;
          T* dst = dx + (c * s.h + h) * s.w;
          if (s.sw == 1) {  // contiguous: the compiler vectorises this form
            T* run = dst - s.pw + j;
            for (int64_t q = in.q0; q < in.q1; ++q) run[q] += src[q];
          } else {
            for (int64_t q = in.q0; q < in.q1; ++q) dst[q * s.sw - s.pw + j] += src[q];
          }
        }
      }
}

// stage [O, G*P] <- dy of images n0 .. n0+G-1 ([O, P] each), side by side.
template <class T>
void gather_images(const T* dy, const ConvShape& s, int64_t n0, int64_t g, T* stage) {
  const int64_t p = s.p(), cols = g * p;
  for (int64_t b = 0; b < g; ++b)
    for (int64_t o = 0; o < s.o; ++o)
      std::copy(dy + ((n0 + b) * s.o + o) * p, dy + ((n0 + b) * s.o + o + 1) * p, stage + o * cols + b * p);
}

// The reverse: y of images n0 .. n0+G-1 <- stage [O, G*P].
template <class T>
void scatter_images(const T* stage, const ConvShape& s, int64_t n0, int64_t g, T* y) {
  const int64_t p = s.p(), cols = g * p;
  for (int64_t b = 0; b < g; ++b)
    for (int64_t o = 0; o < s.o; ++o)
      std::copy(stage + o * cols + b * p, stage + o * cols + (b + 1) * p, y + ((n0 + b) * s.o + o) * p);
}

// Scratch memory for the col and staging buffers, kept on the calling thread between calls: a fresh
// multi-megabyte allocation per call would be page-faulted in again on every call. Each kernel call
// takes it whole (kernels do not call each other), so one buffer per thread is enough.
template <class T>
T* scratch(int64_t count) {
  thread_local std::vector<T> buffer;
  if (static_cast<int64_t>(buffer.size()) < count) buffer.resize(count);
  return buffer.data();
}

// How the batch is cut: `chunks` contiguous slices of images (one per thread), `group` images per GEMM.
struct Plan {
  int chunks = 1;
  int64_t group = 1;
};

Plan plan_for(const ConvShape& s) {
  Plan plan;
  plan.chunks = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(blas::max_threads(), s.n)));
  const int64_t per_chunk = (s.n + plan.chunks - 1) / plan.chunks;
  if (s.p() < kMinColumns) plan.group = std::max<int64_t>(1, std::min(per_chunk, (kMinColumns + s.p() - 1) / s.p()));
  return plan;
}

// Calls body(first, end, chunk) for each chunk of images [first, end), in parallel when there are
// several chunks, with OpenBLAS single-threaded meanwhile (see the header).
template <class Body>
void for_each_chunk(int64_t images, int chunks, Body body) {
  if (chunks == 1) {
    body(int64_t(0), images, 0);
    return;
  }
  blas::SingleThreadedBlas single_threaded;
#pragma omp parallel for schedule(static) num_threads(chunks)
  for (int t = 0; t < chunks; ++t) body(images * t / chunks, images * (t + 1) / chunks, t);
}

template <class T>
void forward(const T* x, const T* w, T* y, const ConvShape& s) {
  const Plan plan = plan_for(s);
  const int64_t ck = s.ck(), p = s.p();
  const int64_t col_size = ck * plan.group * p, stage_size = plan.group > 1 ? s.o * plan.group * p : 0;
  T* buffers = scratch<T>(plan.chunks * (col_size + stage_size));
  for_each_chunk(s.n, plan.chunks, [&](int64_t first, int64_t end, int t) {
    T* col = buffers + t * (col_size + stage_size);
    T* stage = col + col_size;
    for (int64_t n0 = first; n0 < end; n0 += plan.group) {
      const int64_t g = std::min(plan.group, end - n0), cols = g * p;
      const T* b = col;
      if (g == 1 && s.col_is_image())
        b = x + n0 * s.image();
      else
        for (int64_t i = 0; i < g; ++i) im2col(x + (n0 + i) * s.image(), s, col + i * p, cols);
      T* out = g == 1 ? y + n0 * s.o * p : stage;
      blas::gemm(false, false, s.o, cols, ck, w, ck, b, cols, T(0), out, cols);
      if (g > 1) scatter_images(stage, s, n0, g, y);
    }
  });
}

template <class T>
void backward_input(const T* dy, const T* w, T* dx, const ConvShape& s) {
  const Plan plan = plan_for(s);
  const int64_t ck = s.ck(), p = s.p();
  const int64_t col_size = ck * plan.group * p, stage_size = plan.group > 1 ? s.o * plan.group * p : 0;
  T* buffers = scratch<T>(plan.chunks * (col_size + stage_size));
  for_each_chunk(s.n, plan.chunks, [&](int64_t first, int64_t end, int t) {
    T* dcol = buffers + t * (col_size + stage_size);
    T* stage = dcol + col_size;
    for (int64_t n0 = first; n0 < end; n0 += plan.group) {
      const int64_t g = std::min(plan.group, end - n0), cols = g * p;
      const T* dy_cols = dy + n0 * s.o * p;
      if (g > 1) {
        gather_images(dy, s, n0, g, stage);
        dy_cols = stage;
      }
      if (g == 1 && s.col_is_image()) {  // dcol is dx itself
        blas::gemm(true, false, ck, cols, s.o, w, ck, dy_cols, cols, T(0), dx + n0 * s.image(), cols);
        continue;
      }
      blas::gemm(true, false, ck, cols, s.o, w, ck, dy_cols, cols, T(0), dcol, cols);
      for (int64_t i = 0; i < g; ++i) {
        T* dx_n = dx + (n0 + i) * s.image();
        std::fill(dx_n, dx_n + s.image(), T(0));
        col2im(dcol + i * p, cols, s, dx_n);
      }
    }
  });
}

template <class T>
void backward_weight(const T* x, const T* dy, T* dw, const ConvShape& s) {
  const Plan plan = plan_for(s);
  const int64_t ck = s.ck(), p = s.p(), dw_size = s.o * ck;
  const int64_t col_size = ck * plan.group * p, stage_size = plan.group > 1 ? s.o * plan.group * p : 0;
  // Chunk 0 sums straight into dw; the others into their own partial dW, added at the end.
  T* buffers = scratch<T>(plan.chunks * (col_size + stage_size) + (plan.chunks - 1) * dw_size);
  T* partials = buffers + plan.chunks * (col_size + stage_size);
  for_each_chunk(s.n, plan.chunks, [&](int64_t first, int64_t end, int t) {
    T* col = buffers + t * (col_size + stage_size);
    T* stage = col + col_size;
    T* sum = t == 0 ? dw : partials + (t - 1) * dw_size;
    T beta = 0;
    for (int64_t n0 = first; n0 < end; n0 += plan.group) {
      const int64_t g = std::min(plan.group, end - n0), cols = g * p;
      const T* b = col;
      if (g == 1 && s.col_is_image())
        b = x + n0 * s.image();
      else
        for (int64_t i = 0; i < g; ++i) im2col(x + (n0 + i) * s.image(), s, col + i * p, cols);
      const T* dy_cols = dy + n0 * s.o * p;
      if (g > 1) {
        gather_images(dy, s, n0, g, stage);
        dy_cols = stage;
      }
      blas::gemm(false, true, s.o, ck, cols, dy_cols, cols, b, cols, beta, sum, ck);
      beta = 1;
    }
    if (beta == 0) std::fill(sum, sum + dw_size, T(0));  // a chunk without images
  });
  for (int t = 1; t < plan.chunks; ++t) {
    const T* part = partials + (t - 1) * dw_size;
    for (int64_t e = 0; e < dw_size; ++e) dw[e] += part[e];
  }
}

// BLAS takes int sizes; empty batches and channels are left to the reference kernel.
bool supported(const ConvShape& s, const Plan& plan) {
  const int64_t biggest = std::max({s.o, s.ck(), plan.group * s.p()});
  return s.n > 0 && s.c > 0 && s.o > 0 && biggest <= INT_MAX;
}

bool conv2d_im2col(const Tensor& x, const Tensor& w, Tensor& y, const Conv2dParams& p) {
  const ConvShape s = shape_of(x, w, y, p);
  if (!supported(s, plan_for(s))) return false;
  return MINIDL_FLOAT_TYPES(y.dtype(), { forward(x.data<T>(), w.data<T>(), y.data<T>(), s); });
}

bool conv2d_backward_input_im2col(const Tensor& grad_y, const Tensor& w, Tensor& grad_x, const Conv2dParams& p) {
  const ConvShape s = shape_of(grad_x, w, grad_y, p);
  if (!supported(s, plan_for(s))) return false;
  return MINIDL_FLOAT_TYPES(grad_x.dtype(), { backward_input(grad_y.data<T>(), w.data<T>(), grad_x.data<T>(), s); });
}

bool conv2d_backward_weight_im2col(const Tensor& x, const Tensor& grad_y, Tensor& grad_w, const Conv2dParams& p) {
  const ConvShape s = shape_of(x, grad_w, grad_y, p);
  if (!supported(s, plan_for(s))) return false;
  return MINIDL_FLOAT_TYPES(grad_w.dtype(), { backward_weight(x.data<T>(), grad_y.data<T>(), grad_w.data<T>(), s); });
}

}  // namespace

void register_conv_im2col_cpu() {
  register_kernel(keys::conv2d, DeviceType::cpu, "im2col_blas", Priority::tuned,
                  "im2col per image + OpenBLAS GEMM W·col, images split across threads", conv2d_im2col);
  register_kernel(keys::conv2d_backward_input, DeviceType::cpu, "im2col_blas", Priority::tuned,
                  "OpenBLAS GEMM W^T·dy per image, then col2im, images across threads",
                  conv2d_backward_input_im2col);
  register_kernel(keys::conv2d_backward_weight, DeviceType::cpu, "im2col_blas", Priority::tuned,
                  "im2col + OpenBLAS GEMM dy·col^T summed per thread, then across",
                  conv2d_backward_weight_im2col);
}

}  // namespace minidl

#else

namespace minidl {
void register_conv_im2col_cpu() {}  // built without OpenBLAS
}  // namespace minidl

#endif
