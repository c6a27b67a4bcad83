// cuda/matmul_dims.cuh — what the key "matmul" kernels of cuda/matmul_v1_naive.cu, matmul_v2_smem_tiled.cu
// and matmul_cublas.cu share: the sizes of one call and the dispatch on dtype and transpose flags.
//
//     out[i] = op(a[i]) op(b[i]),   op(a) = trans_a ? a^T : a  [M, K],   op(b) = trans_b ? b^T : b  [K, N]
//
// Included only by .cu files; what it defines is private to each (an unnamed namespace).
#pragma once
#include <cstdint>

#include "core/tensor.h"
#include "cuda/cuda_common.h"

namespace minidl {
namespace {

// Sizes of one call, read from the [B, ra, ca] x [B, rb, cb] -> [B, M, N] tensors.
struct MatmulDims {
  int64_t batch, M, N, K;
  int64_t lda, ldb;  // row lengths of the stored a and b (ca and cb)
};

MatmulDims matmul_dims(const Tensor& a, const Tensor& b, const Tensor& out, bool trans_a) {
  MatmulDims d;
  d.batch = out.size(0);
  d.M = out.size(1);
  d.N = out.size(2);
  d.K = trans_a ? a.size(1) : a.size(2);
  d.lda = a.size(2);
  d.ldb = b.size(2);
  return d;
}

// op(X)(r, c) of a row-major matrix with row length ld.
template <bool TRANS, class T>
__device__ __forceinline__ T op_at(const T* x, int64_t ld, int64_t r, int64_t c) {
  return TRANS ? x[c * ld + r] : x[r * ld + c];
}

// Calls LAUNCH<T, trans_a, trans_b> for the call's dtype and flags.
template <template <class, bool, bool> class Launch>
bool launch_typed(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b, int64_t max_grid_y) {
  const MatmulDims d = matmul_dims(a, b, out, trans_a);
  if (d.M > max_grid_y) return false;  // more row tiles than gridDim.y allows
  const cudaStream_t s = cuda::stream(out.device().index);
  if (out.dtype() == DType::float32) {
    if (!trans_a && !trans_b) Launch<float, false, false>::run(a, b, out, d, s);
    if (trans_a && !trans_b) Launch<float, true, false>::run(a, b, out, d, s);
    if (!trans_a && trans_b) Launch<float, false, true>::run(a, b, out, d, s);
    if (trans_a && trans_b) Launch<float, true, true>::run(a, b, out, d, s);
    return true;
  }
  if (out.dtype() == DType::float64) {
    if (!trans_a && !trans_b) Launch<double, false, false>::run(a, b, out, d, s);
    if (trans_a && !trans_b) Launch<double, true, false>::run(a, b, out, d, s);
    if (!trans_a && trans_b) Launch<double, false, true>::run(a, b, out, d, s);
    if (trans_a && trans_b) Launch<double, true, true>::run(a, b, out, d, s);
    return true;
  }
  return false;
}

}  // namespace
}  // namespace minidl
