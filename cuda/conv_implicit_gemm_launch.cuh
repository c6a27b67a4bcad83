// cuda/conv_implicit_gemm_launch.cuh — the host side both implicit-GEMM convolution kernels share: the
// three conv2d entry points (checks, empty cases, the GEMM of each stage), the choice of tile, the launch,
// and the weight gradient's split-K. cuda/conv_implicit_gemm.cu (FP32 FFMA) and
// cuda/conv_implicit_gemm_tf32.cu (TF32 mma.sync) differ only in their kernel and tiles, which they pass in
// as a `Kernels` class:
//
//   struct Kernels {
//     static constexpr bool kTf32;                       // the loaders round to TF32 (the Stage flag)
//     using Rows128, Rows64, Rows32;                     // forward and backward_input tiles (BN = 128)
//     using Weight128x128, Weight64x64, Weight32x64, Weight32x32;   // backward_weight tiles, in that order
//     template <class Cfg, class Stage>
//     static void launch(dim3 grid, const GemmParams& p, cudaStream_t stream);  // the <<<...>>> call
//   };
//
// The stages as GEMMs, the tile loaders and the split sum are in cuda/conv_implicit_gemm.cuh.
#pragma once
#include <cstdint>

#include "cuda/conv_implicit_gemm.cuh"
#include "cuda/cuda_common.h"
#include "ops/kernel_signatures.h"

namespace minidl {
namespace cuda {
namespace implicit_gemm {

// One block per Cfg::BM x Cfg::BN tile of C (grid x: columns, y: rows) and per K range (z: the splits).
template <class Kernels, class Cfg, class Stage>
void launch(const GemmParams& p, int splits, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((p.N + Cfg::BN - 1) / Cfg::BN), static_cast<unsigned>((p.M + Cfg::BM - 1) / Cfg::BM),
                  static_cast<unsigned>(splits));
  Kernels::template launch<Cfg, Stage>(grid, p, stream);
  MINIDL_LAUNCH_CHECK();
}

inline void fill_zero(Tensor& t, cudaStream_t stream) {
  MINIDL_CUDA_CHECK(cudaMemsetAsync(t.raw_data(), 0, static_cast<size_t>(t.numel()) * sizeof(float), stream));
}

// ---------------------------------------------------------------- forward
template <class Kernels>
bool forward(const Tensor& x, const Tensor& w, Tensor& y, const Conv2dParams& cp) {
  using Rows128 = typename Kernels::Rows128;
  using Rows64 = typename Kernels::Rows64;
  using Rows32 = typename Kernels::Rows32;
  constexpr bool kTf32 = Kernels::kTf32;
  if (!float32_contiguous_cuda({&x, &w, &y})) return false;
  const int device = y.device().index;
  cuda::set_device(device);
  if (y.numel() == 0) return true;
  ConvShape s;
  if (!conv_shape(x, w, y, cp, s)) return false;
  const cudaStream_t stream = cuda::stream(device);
  const GemmParams p = forward_gemm(s, x.data<float>(), w.data<float>(), y.data<float>());
  if (p.K == 0) {  // no input channels: an empty sum
    fill_zero(y, stream);
    return true;
  }
  switch (pixel_stage_rows(p, cuda::properties(device).multiProcessorCount)) {
    case 128: launch<Kernels, Rows128, ForwardStage<Rows128, kTf32>>(p, 1, stream); break;
    case 64: launch<Kernels, Rows64, ForwardStage<Rows64, kTf32>>(p, 1, stream); break;
    default: launch<Kernels, Rows32, ForwardStage<Rows32, kTf32>>(p, 1, stream); break;
  }
  return true;
}

// ---------------------------------------------------------------- backward_input
template <class Kernels, bool kUnitStride>
void launch_backward_input(const GemmParams& p, int bm, cudaStream_t stream) {
  using Rows128 = typename Kernels::Rows128;
  using Rows64 = typename Kernels::Rows64;
  using Rows32 = typename Kernels::Rows32;
  constexpr bool kTf32 = Kernels::kTf32;
  switch (bm) {
    case 128: launch<Kernels, Rows128, BackwardInputStage<Rows128, kTf32, kUnitStride>>(p, 1, stream); break;
    case 64: launch<Kernels, Rows64, BackwardInputStage<Rows64, kTf32, kUnitStride>>(p, 1, stream); break;
    default: launch<Kernels, Rows32, BackwardInputStage<Rows32, kTf32, kUnitStride>>(p, 1, stream); break;
  }
}

template <class Kernels>
bool backward_input(const Tensor& grad_y, const Tensor& w, Tensor& grad_x, const Conv2dParams& cp) {
  if (!float32_contiguous_cuda({&grad_y, &w, &grad_x})) return false;
  const int device = grad_x.device().index;
  cuda::set_device(device);
  if (grad_x.numel() == 0) return true;
  ConvShape s;
  if (!conv_shape(grad_x, w, grad_y, cp, s)) return false;
  const cudaStream_t stream = cuda::stream(device);
  if (w.numel() == 0 || grad_y.numel() == 0) {  // no output channels or no output pixels: nothing reads x
    fill_zero(grad_x, stream);
    return true;
  }
  // A is w with c first: a plain row-major [C, O*KH*KW] matrix, like forward's A.
  Tensor w_by_c = empty({w.numel()}, TensorOptions(DType::float32, Device::cuda(device)));
  relayout_weight_by_channel(w.data<float>(), w_by_c.data<float>(), s, stream);
  const GemmParams p = backward_input_gemm(s, grad_y.data<float>(), w_by_c.data<float>(), grad_x.data<float>());
  const int bm = pixel_stage_rows(p, cuda::properties(device).multiProcessorCount);
  if (s.sh == 1 && s.sw == 1)
    launch_backward_input<Kernels, true>(p, bm, stream);
  else
    launch_backward_input<Kernels, false>(p, bm, stream);
  return true;  // w_by_c is freed on the host now, safely: every kernel of the device runs on its one stream
}

// ---------------------------------------------------------------- backward_weight
// Splits K for about 1,024 threads per multiprocessor (set_splits), runs the GEMM into grad_w or into
// per-split partial sums, and adds those up in a fixed order.
template <class Kernels, class Cfg>
void backward_weight_tiled(GemmParams p, Tensor& grad_w, int device, cudaStream_t stream) {
  const int64_t tiles = int64_t{(p.M + Cfg::BM - 1) / Cfg::BM} * ((p.N + Cfg::BN - 1) / Cfg::BN);
  const int splits = set_splits(p, tiles, Cfg::BK, Cfg::kThreads, cuda::properties(device).multiProcessorCount);
  Tensor partial;
  if (splits > 1) {
    partial = empty({int64_t{splits} * p.M * p.N}, TensorOptions(DType::float32, Device::cuda(device)));
    p.out = partial.data<float>();
    p.out_vec = vector_width(p.out, p.plane);
  }
  launch<Kernels, Cfg, BackwardWeightStage<Cfg, Kernels::kTf32>>(p, splits, stream);
  if (splits > 1) sum_splits(partial.data<float>(), grad_w.data<float>(), p.M * p.N, splits, stream);
}

template <class Kernels>
bool backward_weight(const Tensor& x, const Tensor& grad_y, Tensor& grad_w, const Conv2dParams& cp) {
  if (!float32_contiguous_cuda({&x, &grad_y, &grad_w})) return false;
  const int device = grad_w.device().index;
  cuda::set_device(device);
  if (grad_w.numel() == 0) return true;
  ConvShape s;
  if (!conv_shape(x, grad_w, grad_y, cp, s)) return false;
  const cudaStream_t stream = cuda::stream(device);
  GemmParams p = backward_weight_gemm(s, x.data<float>(), grad_y.data<float>(), grad_w.data<float>());
  if (p.K == 0) {  // no output pixels (an empty batch): an empty sum
    fill_zero(grad_w, stream);
    return true;
  }
  switch (weight_tile(p, {{128, 128}, {64, 64}, {32, 64}, {32, 32}})) {
    case 0: backward_weight_tiled<Kernels, typename Kernels::Weight128x128>(p, grad_w, device, stream); break;
    case 1: backward_weight_tiled<Kernels, typename Kernels::Weight64x64>(p, grad_w, device, stream); break;
    case 2: backward_weight_tiled<Kernels, typename Kernels::Weight32x64>(p, grad_w, device, stream); break;
    default: backward_weight_tiled<Kernels, typename Kernels::Weight32x32>(p, grad_w, device, stream); break;
  }
  return true;
}

}  // namespace implicit_gemm
}  // namespace cuda
}  // namespace minidl
