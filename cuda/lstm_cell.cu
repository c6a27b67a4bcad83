// cuda/lstm_cell.cu — the fused LSTM step on the GPU ("lstm_cell", "lstm_cell.backward").
// Accumulation convention: outputs are overwritten (=).
//
// Math (ops/kernel_signatures.h, per element in ops/lstm_cell_math.h, shared with the fast CPU kernel):
//   i = sigmoid(a_i), f = sigmoid(a_f), g = tanh(a_g), o = sigmoid(a_o)  with a_k = gi_k + gh_k
//   c' = f c + i g,  h' = o tanh(c')
//   backward: dc = dc' + dh' o (1 - tanh(c')^2); d_i = dc g i (1 - i), d_f = dc c f (1 - f),
//   d_g = dc i (1 - g^2), d_o = dh' tanh(c') o (1 - o); grad_gates = (d_i, d_f, d_g, d_o), grad_c = dc f
// Layouts: gi, gh, grad_gates [N, 4H], c, h', c', grad_c [N, H], gates [N, 5H] = (i, f, g, o, tanh c'),
// all contiguous.
//
// "elementwise": one thread per (n, j) element of c, grid-stride, as cuda/gru_cell.cu. Each thread reads
// its four gate columns of gi and gh (j, H + j, 2H + j, 3H + j of the row: neighbouring threads read
// neighbouring addresses, so every access is coalesced) and writes h', c' and the five saved values. The
// step is memory-bound: it replaces the ~13 elementwise launches (and their temporaries) of the
// composed step with one.
#include "cuda/device_utils.cuh"
#include "ops/kernel_signatures.h"
#include "ops/lstm_cell_math.h"

namespace minidl {

namespace {

using cuda::global_thread_count;
using cuda::global_thread_index;
using cuda::kBlock;

template <class T, class Index>
__global__ void lstm_cell_kernel(const T* __restrict__ gi, const T* __restrict__ gh, const T* __restrict__ c,
                                 T* __restrict__ h_new, T* __restrict__ c_new, T* __restrict__ gates, Index total,
                                 Index H) {
  for (Index e = static_cast<Index>(global_thread_index()); e < total; e += static_cast<Index>(global_thread_count())) {
    const Index n = e / H, j = e - n * H;
    const T* a = gi + n * 4 * H + j;
    const T* b = gh + n * 4 * H + j;
    lstm_math::Gates<T> s;
    c_new[e] = lstm_math::forward(a[0] + b[0], a[H] + b[H], a[2 * H] + b[2 * H], a[3 * H] + b[3 * H], c[e], s);
    h_new[e] = lstm_math::new_hidden(s);
    T* saved = gates + n * 5 * H + j;
    saved[0] = s.i;
    saved[H] = s.f;
    saved[2 * H] = s.g;
    saved[3 * H] = s.o;
    saved[4 * H] = s.tanh_c;
  }
}

template <class T, class Index>
__global__ void lstm_cell_backward_kernel(const T* __restrict__ dh, const T* __restrict__ dc_out,
                                          const T* __restrict__ c, const T* __restrict__ gates,
                                          T* __restrict__ grad_gates, T* __restrict__ grad_c, Index total, Index H) {
  for (Index e = static_cast<Index>(global_thread_index()); e < total; e += static_cast<Index>(global_thread_count())) {
    const Index n = e / H, j = e - n * H;
    const T* saved = gates + n * 5 * H + j;
    const lstm_math::Gates<T> s{saved[0], saved[H], saved[2 * H], saved[3 * H], saved[4 * H]};
    const lstm_math::Grads<T> d = lstm_math::backward(dh[e], dc_out[e], c[e], s);
    T* row = grad_gates + n * 4 * H + j;
    row[0] = d.d_i;
    row[H] = d.d_f;
    row[2 * H] = d.d_g;
    row[3 * H] = d.d_o;
    grad_c[e] = d.d_c;
  }
}

bool lstm_cell_cuda(const Tensor& gi, const Tensor& gh, const Tensor& c, Tensor& h_new, Tensor& c_new,
                    Tensor& gates) {
  const int64_t N = c.shape()[0], H = c.shape()[1], total = N * H;
  if (total == 0) return true;
  cudaStream_t s = cuda::launch_stream(c);
  const unsigned int grid = cuda::grid_for(total, kBlock);
  return MINIDL_FLOAT_TYPES(c.dtype(), {
    // 32-bit index math when the largest index (into gates, 5 * total) fits.
    cuda::with_index_type(5 * total, [&](auto index) {
      using Index = decltype(index);
      lstm_cell_kernel<T, Index><<<grid, kBlock, 0, s>>>(gi.data<T>(), gh.data<T>(), c.data<T>(), h_new.data<T>(),
                                                         c_new.data<T>(), gates.data<T>(), static_cast<Index>(total),
                                                         static_cast<Index>(H));
    });
    MINIDL_LAUNCH_CHECK();
  });
}

bool lstm_cell_backward_cuda(const Tensor& grad_h_new, const Tensor& grad_c_new, const Tensor& c,
                             const Tensor& gates, Tensor& grad_gates, Tensor& grad_c) {
  const int64_t N = c.shape()[0], H = c.shape()[1], total = N * H;
  if (total == 0) return true;
  cudaStream_t s = cuda::launch_stream(c);
  const unsigned int grid = cuda::grid_for(total, kBlock);
  return MINIDL_FLOAT_TYPES(c.dtype(), {
    cuda::with_index_type(5 * total, [&](auto index) {
      using Index = decltype(index);
      lstm_cell_backward_kernel<T, Index><<<grid, kBlock, 0, s>>>(
          grad_h_new.data<T>(), grad_c_new.data<T>(), c.data<T>(), gates.data<T>(), grad_gates.data<T>(),
          grad_c.data<T>(), static_cast<Index>(total), static_cast<Index>(H));
    });
    MINIDL_LAUNCH_CHECK();
  });
}

}  // namespace

void register_lstm_cell_cuda() {
  const char* d = "one thread per hidden unit, coalesced gate columns; math shared with the CPU (ops/lstm_cell_math.h)";
  register_kernel(keys::lstm_cell, DeviceType::cuda, "elementwise", Priority::portable, d, lstm_cell_cuda);
  register_kernel(keys::lstm_cell_backward, DeviceType::cuda, "elementwise", Priority::portable, d,
                  lstm_cell_backward_cuda);
}

}  // namespace minidl
