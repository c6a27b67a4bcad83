// ops/lstm_cell_math.h — the per-element math of the fused LSTM step, written once for the fast CPU
// kernel (cpu/lstm_rows_omp.cpp) and the CUDA kernel (cuda/lstm_cell.cu), so the two cannot drift. The naive
// CPU kernel (cpu/lstm_naive.cpp) spells the same formulas out on its own, in double: it is the oracle.
//
// Element j of row n: the four gate pre-activations are a_k = gi[k H + j] + gh[k H + j], k = i, f, g, o.
//   i = sigmoid(a_i),  f = sigmoid(a_f),  g = tanh(a_g),  o = sigmoid(a_o)
//   c' = f c + i g,  h' = o tanh(c')
// Backward, from dh = dL/dh', dc_out = dL/dc' and the saved (i, f, g, o, tanh c'):
//   dc = dc_out + dh o (1 - tanh(c')^2)               (everything that reaches c')
//   d_i = dc g i (1 - i),  d_f = dc c f (1 - f),  d_g = dc i (1 - g^2),  d_o = dh tanh(c') o (1 - o)
//   grad_c = dc f;  (d_i, d_f, d_g, d_o) is the gradient of gi and of gh alike
#pragma once
#include <cmath>

#include "core/philox.h"  // MINIDL_HOST_DEVICE
#include "ops/elementwise_functors.h"

namespace minidl {
namespace lstm_math {

template <class T>
struct Gates {
  T i, f, g, o, tanh_c;  // tanh_c: tanh of the new cell state
};

// One step from the pre-activations a_k = gi_k + gh_k and the cell state c: writes the activated gates
// and tanh(c') to `s` and returns c'.
template <class T>
MINIDL_HOST_DEVICE T forward(T a_i, T a_f, T a_g, T a_o, T c, Gates<T>& s) {
  s.i = fn::Sigmoid()(a_i);
  s.f = fn::Sigmoid()(a_f);
  s.g = std::tanh(a_g);
  s.o = fn::Sigmoid()(a_o);
  const T c_new = s.f * c + s.i * s.g;
  s.tanh_c = std::tanh(c_new);
  return c_new;
}

template <class T>
MINIDL_HOST_DEVICE T new_hidden(const Gates<T>& s) {
  return s.o * s.tanh_c;
}

template <class T>
struct Grads {
  T d_i, d_f, d_g, d_o, d_c;  // the four pre-activation gradients, and grad_c
};

template <class T>
MINIDL_HOST_DEVICE Grads<T> backward(T dh, T dc_out, T c, const Gates<T>& s) {
  Grads<T> d;
  const T dc = dc_out + dh * s.o * (T(1) - s.tanh_c * s.tanh_c);
  d.d_i = dc * s.g * s.i * (T(1) - s.i);
  d.d_f = dc * c * s.f * (T(1) - s.f);
  d.d_g = dc * s.i * (T(1) - s.g * s.g);
  d.d_o = dh * s.tanh_c * s.o * (T(1) - s.o);
  d.d_c = dc * s.f;
  return d;
}

}  // namespace lstm_math
}  // namespace minidl
