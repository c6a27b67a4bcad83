// cuda/conv_im2col.cu — conv2d on the GPU as im2col + GEMM, with our own kernels only (no cuBLAS):
// kernel "im2col_gemm" of keys "conv2d", "conv2d.backward_input", "conv2d.backward_weight".
//
// The math (ops/kernel_signatures.h), x [N, C, H, W], w [O, C, KH, KW], y [N, O, OH, OW]:
//   y[n,o,p,q] = sum_{c,i,j} x[n, c, p*sh - ph + i, q*sw - pw + j] * w[o,c,i,j]      (zero outside x)
// Unrolling each receptive field into a column turns it into matrix products. For one sample n,
//   cols_n [C*KH*KW, OH*OW],  cols_n[(c*KH + i)*KW + j, p*OW + q] = x[n, c, p*sh - ph + i, q*sw - pw + j]
// and with w viewed as W [O, C*KH*KW], gy_n = grad_y[n] viewed as [O, OH*OW]:
//   forward          y_n = W cols_n
//   backward_input   dcols_n = W^T gy_n,  then col2im: grad_x[n,c,h,w] = sum of the dcols_n entries
//                    whose (c, i, j, p, q) read x[n,c,h,w]      (a gather per input element, no atomics)
//   backward_weight  grad_W = sum_n gy_n cols_n^T
// The GEMMs are cuda/gemm_tiled.cuh. Samples go in chunks so the columns buffer stays bounded
// (kColumnsBytes); a 1x1 kernel with stride 1 and no padding needs no columns: cols_n is x[n] itself.
// The weight gradient splits the batch into groups whose partial sums the GEMM computes in parallel
// (otherwise a small [O, C*KH*KW] output would occupy a handful of blocks), then adds them up.
// float32 only (the GEMM is float32). Accumulation convention: outputs are overwritten (=).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <initializer_list>

#include "core/dispatch.h"
#include "cuda/cuda_common.h"
#include "cuda/kernel_helpers.h"
#include "cuda/gemm_tiled.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// Upper bound on the columns buffer of one chunk of samples (at least one sample is always taken).
constexpr int64_t kColumnsBytes = int64_t{256} << 20;
constexpr int kBlock = 256;

struct ConvGeometry {
  int64_t N, C, H, W, O, KH, KW, OH, OW;
  int sh, sw, ph, pw;
  int64_t ckk() const { return C * KH * KW; }
  int64_t ohw() const { return OH * OW; }
  // 1x1, stride 1, no padding: the columns of a sample are the sample itself.
  bool columns_are_input() const { return KH == 1 && KW == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0; }
};

ConvGeometry geometry(const Tensor& x_like, const Tensor& w_like, const Tensor& y_like, const Conv2dParams& p) {
  ConvGeometry g;
  g.N = x_like.size(0);
  g.C = x_like.size(1);
  g.H = x_like.size(2);
  g.W = x_like.size(3);
  g.O = w_like.size(0);
  g.KH = w_like.size(2);
  g.KW = w_like.size(3);
  g.OH = y_like.size(2);
  g.OW = y_like.size(3);
  g.sh = p.stride_h;
  g.sw = p.stride_w;
  g.ph = p.pad_h;
  g.pw = p.pad_w;
  return g;
}

// The sizes of ConvGeometry in the index type I of a kernel: int32_t when every index of the call
// fits (integer division, several per element here, is much cheaper on 32 bits), else int64_t.
template <class I>
struct Sizes {
  I C, H, W, KH, KW, OH, OW, sh, sw, ph, pw;
  explicit Sizes(const ConvGeometry& g)
      : C(I(g.C)), H(I(g.H)), W(I(g.W)), KH(I(g.KH)), KW(I(g.KW)), OH(I(g.OH)), OW(I(g.OW)), sh(I(g.sh)),
        sw(I(g.sw)), ph(I(g.ph)), pw(I(g.pw)) {}
};

// Calls launch(I{}) with I = int32_t when indices up to `largest` fit in it comfortably.
template <class Launch>
void with_index_type(int64_t largest, Launch launch) {
  if (largest < INT32_MAX / 2)
    launch(int32_t{0});
  else
    launch(int64_t{0});
}

// cols[b, (c*KH + i)*KW + j, p*OW + q] = x[b, c, p*sh - ph + i, q*sw - pw + j] (0 in the padding) for
// the `total` / (C*KH*KW*OH*OW) samples starting at x. Consecutive threads take consecutive q: the
// writes are coalesced.
template <class I>
__global__ void im2col_kernel(const float* __restrict__ x, float* __restrict__ cols, Sizes<I> g, int64_t total) {
  for (int64_t at = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; at < total;
       at += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    I t = static_cast<I>(at);
    const I q = t % g.OW;
    t /= g.OW;
    const I p = t % g.OH;
    t /= g.OH;
    const I j = t % g.KW;
    t /= g.KW;
    const I i = t % g.KH;
    t /= g.KH;  // t = b * C + c
    const I h = p * g.sh - g.ph + i, w = q * g.sw - g.pw + j;
    cols[at] = (h >= 0 && h < g.H && w >= 0 && w < g.W) ? x[(t * g.H + h) * g.W + w] : 0.0f;
  }
}

// grad_x[b, c, h, w] = sum over (i, j) and the output position (p, q) whose window reads (h, w) at
// offset (i, j) — h = p*sh - ph + i, w = q*sw - pw + j — of dcols[b, (c*KH + i)*KW + j, p*OW + q].
// One thread per input element gathers its terms, so nothing is written twice and no atomics are needed.
template <class I>
__global__ void col2im_kernel(const float* __restrict__ dcols, float* __restrict__ grad_x, Sizes<I> g,
                              int64_t total) {
  const I ohw = g.OH * g.OW;
  for (int64_t at = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; at < total;
       at += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    I t = static_cast<I>(at);
    const I w = t % g.W;
    t /= g.W;
    const I h = t % g.H;
    t /= g.H;  // t = b * C + c
    const float* col_base = dcols + t * g.KH * g.KW * ohw;
    float acc = 0.0f;
    for (I i = 0; i < g.KH; ++i) {
      const I hp = h + g.ph - i;  // = p * sh for the output row p that reads h at offset i
      if (hp < 0 || hp % g.sh != 0) continue;
      const I p = hp / g.sh;
      if (p >= g.OH) continue;
      for (I j = 0; j < g.KW; ++j) {
        const I wq = w + g.pw - j;
        if (wq < 0 || wq % g.sw != 0) continue;
        const I q = wq / g.sw;
        if (q >= g.OW) continue;
        acc += col_base[(i * g.KW + j) * ohw + p * g.OW + q];
      }
    }
    grad_x[at] = acc;
  }
}

// out[e] = sum_{k < parts} partial[k * n + e]
__global__ void sum_parts_kernel(const float* __restrict__ partial, float* __restrict__ out, int64_t n,
                                 int64_t parts) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float acc = 0.0f;
    for (int64_t k = 0; k < parts; ++k) acc += partial[k * n + e];
    out[e] = acc;
  }
}

void im2col(const float* x, float* cols, const ConvGeometry& g, int64_t count, cudaStream_t s) {
  const int64_t total = count * g.ckk() * g.ohw();
  if (total == 0) return;
  with_index_type(std::max(total, count * g.C * g.H * g.W), [&](auto zero) {
    using I = decltype(zero);
    im2col_kernel<I><<<cuda::grid_for(total, kBlock), kBlock, 0, s>>>(x, cols, Sizes<I>(g), total);
  });
  MINIDL_LAUNCH_CHECK();
}

void col2im(const float* dcols, float* grad_x, const ConvGeometry& g, int64_t count, cudaStream_t s) {
  const int64_t total = count * g.C * g.H * g.W;
  if (total == 0) return;
  with_index_type(std::max(total, count * g.ckk() * g.ohw()), [&](auto zero) {
    using I = decltype(zero);
    col2im_kernel<I><<<cuda::grid_for(total, kBlock), kBlock, 0, s>>>(dcols, grad_x, Sizes<I>(g), total);
  });
  MINIDL_LAUNCH_CHECK();
}

// Samples per chunk so that the columns of one chunk stay within kColumnsBytes.
int64_t chunk_samples(const ConvGeometry& g) {
  const int64_t per_sample = std::max<int64_t>(1, g.ckk() * g.ohw() * static_cast<int64_t>(sizeof(float)));
  return std::max<int64_t>(1, std::min<int64_t>({g.N, kColumnsBytes / per_sample, cuda::kGemmMaxOutputs}));
}

bool all_float32(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (t->dtype() != DType::float32) return false;
  return true;
}

// ---------------------------------------------------------------- forward: y_n = W cols_n
bool conv2d_im2col_gemm(const Tensor& x, const Tensor& w, Tensor& y, const Conv2dParams& p) {
  if (!all_float32({&x, &w, &y})) return false;
  const int device = y.device().index;
  cuda::set_device(device);
  if (y.numel() == 0) return true;
  const ConvGeometry g = geometry(x, w, y, p);
  const cudaStream_t s = cuda::stream(device);
  const int64_t chunk = chunk_samples(g);
  Tensor cols;
  if (!g.columns_are_input()) cols = empty({chunk * g.ckk() * g.ohw()}, TensorOptions(DType::float32, Device::cuda(device)));
  for (int64_t n0 = 0; n0 < g.N; n0 += chunk) {
    const int64_t count = std::min(chunk, g.N - n0);
    const float* b_ptr = x.data<float>() + n0 * g.C * g.H * g.W;
    if (!g.columns_are_input()) {
      im2col(b_ptr, cols.data<float>(), g, count, s);
      b_ptr = cols.data<float>();
    }
    cuda::GemmBatch gemm;
    gemm.M = g.O;
    gemm.N = g.ohw();
    gemm.K = g.ckk();
    gemm.A = w.data<float>();  // W [O, CKK], the same for every sample
    gemm.lda = g.ckk();
    gemm.stride_a = 0;
    gemm.B = b_ptr;  // cols_n [CKK, OHW]
    gemm.ldb = g.ohw();
    gemm.stride_b = g.ckk() * g.ohw();
    gemm.C = y.data<float>() + n0 * g.O * g.ohw();  // y_n [O, OHW]
    gemm.ldc = g.ohw();
    gemm.stride_c = g.O * g.ohw();
    gemm.batch = count;
    if (!cuda::gemm_register_blocked(gemm, device)) return false;  // only possible on the first chunk
  }
  return true;
}

// ---------------------------------------------------------------- backward_input: dcols_n = W^T gy_n, col2im
bool conv2d_backward_input_im2col_gemm(const Tensor& grad_y, const Tensor& w, Tensor& grad_x, const Conv2dParams& p) {
  if (!all_float32({&grad_y, &w, &grad_x})) return false;
  const int device = grad_x.device().index;
  cuda::set_device(device);
  if (grad_x.numel() == 0) return true;
  const ConvGeometry g = geometry(grad_x, w, grad_y, p);
  const cudaStream_t s = cuda::stream(device);
  const int64_t chunk = chunk_samples(g);
  Tensor dcols;
  if (!g.columns_are_input())
    dcols = empty({chunk * g.ckk() * g.ohw()}, TensorOptions(DType::float32, Device::cuda(device)));
  for (int64_t n0 = 0; n0 < g.N; n0 += chunk) {
    const int64_t count = std::min(chunk, g.N - n0);
    float* gx = grad_x.data<float>() + n0 * g.C * g.H * g.W;
    cuda::GemmBatch gemm;
    gemm.M = g.ckk();
    gemm.N = g.ohw();
    gemm.K = g.O;
    gemm.A = w.data<float>();  // stored [O, CKK], used transposed
    gemm.lda = g.ckk();
    gemm.stride_a = 0;
    gemm.trans_a = true;
    gemm.B = grad_y.data<float>() + n0 * g.O * g.ohw();  // gy_n [O, OHW]
    gemm.ldb = g.ohw();
    gemm.stride_b = g.O * g.ohw();
    gemm.C = g.columns_are_input() ? gx : dcols.data<float>();  // dcols_n [CKK, OHW]
    gemm.ldc = g.ohw();
    gemm.stride_c = g.ckk() * g.ohw();
    gemm.batch = count;
    if (!cuda::gemm_register_blocked(gemm, device)) return false;
    if (!g.columns_are_input()) col2im(dcols.data<float>(), gx, g, count, s);
  }
  return true;
}

// ---------------------------------------------------------------- backward_weight: grad_W = sum_n gy_n cols_n^T
bool conv2d_backward_weight_im2col_gemm(const Tensor& x, const Tensor& grad_y, Tensor& grad_w, const Conv2dParams& p) {
  if (!all_float32({&x, &grad_y, &grad_w})) return false;
  const int device = grad_w.device().index;
  cuda::set_device(device);
  if (grad_w.numel() == 0) return true;
  const ConvGeometry g = geometry(x, grad_w, grad_y, p);
  const cudaStream_t s = cuda::stream(device);
  const int64_t wsize = g.O * g.ckk();
  if (g.N == 0) {  // an empty sum
    MINIDL_CUDA_CHECK(cudaMemsetAsync(grad_w.data<float>(), 0, wsize * sizeof(float), s));
    return true;
  }
  // Split the batch into groups of `group` samples, one partial grad_W each, so that about eight
  // 64x64-tile blocks (of 64 threads) per multiprocessor run even when grad_W itself is only a few tiles.
  const int64_t tiles = ((g.O + 63) / 64) * ((g.ckk() + 63) / 64);
  const int64_t want_parts = std::max<int64_t>(1, 8 * cuda::properties(device).multiProcessorCount / tiles);
  int64_t group = (g.N + std::min(want_parts, g.N) - 1) / std::min(want_parts, g.N);
  int64_t chunk = chunk_samples(g);
  if (chunk < group)
    group = chunk;  // a group must fit in one chunk
  else
    chunk = chunk / group * group;  // chunks hold whole groups, so every chunk starts a new group
  const int64_t parts = (g.N + group - 1) / group;

  Tensor cols, partial;
  if (!g.columns_are_input()) cols = empty({chunk * g.ckk() * g.ohw()}, TensorOptions(DType::float32, Device::cuda(device)));
  if (parts > 1) partial = empty({parts * wsize}, TensorOptions(DType::float32, Device::cuda(device)));
  float* out = parts > 1 ? partial.data<float>() : grad_w.data<float>();
  for (int64_t n0 = 0; n0 < g.N; n0 += chunk) {
    const int64_t count = std::min(chunk, g.N - n0);
    const float* b_ptr = x.data<float>() + n0 * g.C * g.H * g.W;
    if (!g.columns_are_input()) {
      im2col(b_ptr, cols.data<float>(), g, count, s);
      b_ptr = cols.data<float>();
    }
    cuda::GemmBatch gemm;
    gemm.M = g.O;
    gemm.N = g.ckk();
    gemm.K = g.ohw();
    gemm.A = grad_y.data<float>() + n0 * g.O * g.ohw();  // gy_n [O, OHW]
    gemm.lda = g.ohw();
    gemm.stride_a = g.O * g.ohw();
    gemm.B = b_ptr;  // cols_n stored [CKK, OHW], used transposed
    gemm.ldb = g.ohw();
    gemm.stride_b = g.ckk() * g.ohw();
    gemm.trans_b = true;
    gemm.C = out + (n0 / group) * wsize;  // partial sums of this chunk's groups
    gemm.ldc = g.ckk();
    gemm.stride_c = wsize;
    gemm.batch = count;
    gemm.group = group;
    if (!cuda::gemm_register_blocked(gemm, device)) return false;
  }
  if (parts > 1) {
    sum_parts_kernel<<<cuda::grid_for(wsize, kBlock), kBlock, 0, s>>>(partial.data<float>(), grad_w.data<float>(),
                                                                      wsize, parts);
    MINIDL_LAUNCH_CHECK();
  }
  return true;
}

}  // namespace

void register_conv_im2col_cuda() {
  register_kernel(keys::conv2d, DeviceType::cuda, "im2col_gemm", Priority::portable,
                  "im2col + our register-blocked GEMM (no cuBLAS), samples in chunks (f32)",
                  conv2d_im2col_gemm);
  register_kernel(keys::conv2d_backward_input, DeviceType::cuda, "im2col_gemm", Priority::portable,
                  "W^T grad_y with our GEMM, then a gathering col2im (f32)",
                  conv2d_backward_input_im2col_gemm);
  register_kernel(keys::conv2d_backward_weight, DeviceType::cuda, "im2col_gemm", Priority::portable,
                  "sum_n grad_y_n cols_n^T with our GEMM, batch split in groups (f32)",
                  conv2d_backward_weight_im2col_gemm);
}

}  // namespace minidl
