// ops/gru_cell_math.h — the per-element math of the fused GRU step, written once for the fast CPU kernel
// (cpu/gru_rows_omp.cpp) and the CUDA kernel (cuda/gru_cell.cu), so the two cannot drift. The naive CPU
// kernel (cpu/gru_naive.cpp) spells the same formulas out on its own, in double: it is the oracle.
//
// Element j of row n: the three gate pre-activations come from columns j, H + j, 2H + j of gi and gh.
//   r = sigmoid(gi_r + gh_r),  z = sigmoid(gi_z + gh_z),  n = tanh(gi_n + r * gh_n),  h' = (1 - z) n + z h
// Backward, from g = dL/dh' and the saved (r, z, n, gh_n):
//   d_n = g (1 - z) (1 - n^2),  d_z = g (h - n) z (1 - z),  d_r = d_n gh_n r (1 - r),  grad_h = g z
//   grad_gi = (d_r, d_z, d_n),  grad_gh = (d_r, d_z, d_n r)
#pragma once
#include <cmath>

#include "core/philox.h"  // MINIDL_HOST_DEVICE
#include "ops/elementwise_functors.h"

namespace minidl {
namespace gru_math {

template <class T>
struct Gates {
  T r, z, n, gh_n;
};

template <class T>
MINIDL_HOST_DEVICE Gates<T> forward(T gi_r, T gi_z, T gi_n, T gh_r, T gh_z, T gh_n) {
  Gates<T> a;
  a.r = fn::Sigmoid()(gi_r + gh_r);
  a.z = fn::Sigmoid()(gi_z + gh_z);
  a.n = std::tanh(gi_n + a.r * gh_n);
  a.gh_n = gh_n;
  return a;
}

template <class T>
MINIDL_HOST_DEVICE T new_hidden(const Gates<T>& a, T h) {
  return (T(1) - a.z) * a.n + a.z * h;
}

template <class T>
struct Grads {
  T d_r, d_z, d_n, d_gh_n, d_h;
};

template <class T>
MINIDL_HOST_DEVICE Grads<T> backward(T g, T h, const Gates<T>& a) {
  Grads<T> d;
  d.d_n = g * (T(1) - a.z) * (T(1) - a.n * a.n);
  d.d_z = g * (h - a.n) * a.z * (T(1) - a.z);
  d.d_r = d.d_n * a.gh_n * a.r * (T(1) - a.r);
  d.d_gh_n = d.d_n * a.r;
  d.d_h = g * a.z;
  return d;
}

}  // namespace gru_math
}  // namespace minidl
