// cuda/gru_cell.cu — the fused GRU step on the GPU ("gru_cell", "gru_cell.backward").
// Accumulation convention: outputs are overwritten (=).
//
// Math (ops/kernel_signatures.h, per element in ops/gru_cell_math.h, shared with the fast CPU kernel):
//   r = sigmoid(gi_r + gh_r),  z = sigmoid(gi_z + gh_z),  n = tanh(gi_n + r * gh_n),  h' = (1 - z) n + z h
//   backward: d_n = g (1 - z)(1 - n^2), d_z = g (h - n) z (1 - z), d_r = d_n gh_n r (1 - r), grad_h = g z
//   grad_gi = (d_r, d_z, d_n), grad_gh = (d_r, d_z, d_n r)
// Layouts: gi, gh [N, 3H], h [N, H], gates [N, 4H] = (r, z, n, gh_n), all contiguous.
//
// "elementwise": one thread per (n, j) element of h, grid-stride. Each thread reads its three gate
// columns from gi and gh (j, H + j, 2H + j of the row: neighbouring threads read neighbouring addresses,
// so every access is coalesced) and writes h' and the four saved values. The step is memory-bound: it
// replaces the ~12 elementwise launches (and their temporaries) of the composed step with one.
#include "cuda/device_utils.cuh"
#include "ops/gru_cell_math.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

using cuda::global_thread_count;
using cuda::global_thread_index;
using cuda::kBlock;

template <class T, class Index>
__global__ void gru_cell_kernel(const T* __restrict__ gi, const T* __restrict__ gh, const T* __restrict__ h,
                                T* __restrict__ h_new, T* __restrict__ gates, Index total, Index H) {
  for (Index i = static_cast<Index>(global_thread_index()); i < total; i += static_cast<Index>(global_thread_count())) {
    const Index n = i / H, j = i - n * H;
    const T* in = gi + n * 3 * H + j;
    const T* hid = gh + n * 3 * H + j;
    const gru_math::Gates<T> a = gru_math::forward(in[0], in[H], in[2 * H], hid[0], hid[H], hid[2 * H]);
    h_new[i] = gru_math::new_hidden(a, h[i]);
    T* saved = gates + n * 4 * H + j;
    saved[0] = a.r;
    saved[H] = a.z;
    saved[2 * H] = a.n;
    saved[3 * H] = a.gh_n;
  }
}

template <class T, class Index>
__global__ void gru_cell_backward_kernel(const T* __restrict__ g, const T* __restrict__ h,
                                         const T* __restrict__ gates, T* __restrict__ grad_gi,
                                         T* __restrict__ grad_gh, T* __restrict__ grad_h, Index total, Index H) {
  for (Index i = static_cast<Index>(global_thread_index()); i < total; i += static_cast<Index>(global_thread_count())) {
    const Index n = i / H, j = i - n * H;
    const T* saved = gates + n * 4 * H + j;
    const gru_math::Grads<T> d =
        gru_math::backward(g[i], h[i], gru_math::Gates<T>{saved[0], saved[H], saved[2 * H], saved[3 * H]});
    T* di = grad_gi + n * 3 * H + j;
    T* dh = grad_gh + n * 3 * H + j;
    di[0] = d.d_r;
    di[H] = d.d_z;
    di[2 * H] = d.d_n;
    dh[0] = d.d_r;
    dh[H] = d.d_z;
    dh[2 * H] = d.d_gh_n;
    grad_h[i] = d.d_h;
  }
}

bool gru_cell_cuda(const Tensor& gi, const Tensor& gh, const Tensor& h, Tensor& h_new, Tensor& gates) {
  const int64_t N = h.shape()[0], H = h.shape()[1], total = N * H;
  if (total == 0) return true;
  cudaStream_t s = cuda::launch_stream(h);
  const unsigned int grid = cuda::grid_for(total, kBlock);
  return MINIDL_FLOAT_TYPES(h.dtype(), {
    // 32-bit index math when the largest index (into gates, 4 * total) fits.
    cuda::with_index_type(4 * total, [&](auto index) {
      using Index = decltype(index);
      gru_cell_kernel<T, Index><<<grid, kBlock, 0, s>>>(gi.data<T>(), gh.data<T>(), h.data<T>(), h_new.data<T>(),
                                                        gates.data<T>(), static_cast<Index>(total),
                                                        static_cast<Index>(H));
    });
    MINIDL_LAUNCH_CHECK();
  });
}

bool gru_cell_backward_cuda(const Tensor& grad_h_new, const Tensor& h, const Tensor& gates, Tensor& grad_gi,
                            Tensor& grad_gh, Tensor& grad_h) {
  const int64_t N = h.shape()[0], H = h.shape()[1], total = N * H;
  if (total == 0) return true;
  cudaStream_t s = cuda::launch_stream(h);
  const unsigned int grid = cuda::grid_for(total, kBlock);
  return MINIDL_FLOAT_TYPES(h.dtype(), {
    cuda::with_index_type(4 * total, [&](auto index) {
      using Index = decltype(index);
      gru_cell_backward_kernel<T, Index><<<grid, kBlock, 0, s>>>(
          grad_h_new.data<T>(), h.data<T>(), gates.data<T>(), grad_gi.data<T>(), grad_gh.data<T>(), grad_h.data<T>(),
          static_cast<Index>(total), static_cast<Index>(H));
    });
    MINIDL_LAUNCH_CHECK();
  });
}

}  // namespace

void register_gru_cell_cuda() {
  const char* d = "one thread per hidden unit, coalesced gate columns; math shared with the CPU (ops/gru_cell_math.h)";
  register_kernel(keys::gru_cell, DeviceType::cuda, "elementwise", Priority::portable, d, gru_cell_cuda);
  register_kernel(keys::gru_cell_backward, DeviceType::cuda, "elementwise", Priority::portable, d,
                  gru_cell_backward_cuda);
}

}  // namespace minidl
