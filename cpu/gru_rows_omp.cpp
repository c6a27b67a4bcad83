// cpu/gru_rows_omp.cpp — the fused GRU step for speed ("rows_omp").
//
// What changes against the reference (cpu/gru_naive.cpp): arithmetic in T (not double), through the
// shared per-element math of ops/gru_cell_math.h; each row's gate columns are walked with plain pointers
// (r, z, n blocks of H contiguous values) so the compiler can vectorise the loop over units; rows are
// split across OpenMP threads when the step is large enough to pay for waking them.
// Accumulation convention: outputs are overwritten (=).
#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/gru_cell_math.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr int64_t kParallelThreshold = 1 << 14;  // elements of h

template <class T>
void gru_cell_rows(const T* gi, const T* gh, const T* h, T* h_new, T* gates, int64_t N, int64_t H) {
#pragma omp parallel for schedule(static) if (N * H > kParallelThreshold)
  for (int64_t n = 0; n < N; ++n) {
    const T* i_row = gi + n * 3 * H;
    const T* h_row = gh + n * 3 * H;
    const T* prev = h + n * H;
    T* out = h_new + n * H;
    T* r = gates + n * 4 * H;
    T *z = r + H, *c = r + 2 * H, *saved_gh_n = r + 3 * H;
    for (int64_t j = 0; j < H; ++j) {
      const gru_math::Gates<T> a =
          gru_math::forward(i_row[j], i_row[H + j], i_row[2 * H + j], h_row[j], h_row[H + j], h_row[2 * H + j]);
      out[j] = gru_math::new_hidden(a, prev[j]);
      r[j] = a.r;
      z[j] = a.z;
      c[j] = a.n;
      saved_gh_n[j] = a.gh_n;
    }
  }
}

template <class T>
void gru_cell_backward_rows(const T* g, const T* h, const T* gates, T* grad_gi, T* grad_gh, T* grad_h, int64_t N,
                            int64_t H) {
#pragma omp parallel for schedule(static) if (N * H > kParallelThreshold)
  for (int64_t n = 0; n < N; ++n) {
    const T* gy = g + n * H;
    const T* prev = h + n * H;
    const T* r = gates + n * 4 * H;
    const T *z = r + H, *c = r + 2 * H, *gh_n = r + 3 * H;
    T* di = grad_gi + n * 3 * H;
    T* dh_gates = grad_gh + n * 3 * H;
    T* dh = grad_h + n * H;
    for (int64_t j = 0; j < H; ++j) {
      const gru_math::Grads<T> d = gru_math::backward(gy[j], prev[j], gru_math::Gates<T>{r[j], z[j], c[j], gh_n[j]});
      di[j] = d.d_r;
      di[H + j] = d.d_z;
      di[2 * H + j] = d.d_n;
      dh_gates[j] = d.d_r;
      dh_gates[H + j] = d.d_z;
      dh_gates[2 * H + j] = d.d_gh_n;
      dh[j] = d.d_h;
    }
  }
}

bool gru_cell_rows_omp(const Tensor& gi, const Tensor& gh, const Tensor& h, Tensor& h_new, Tensor& gates) {
  const int64_t N = h.shape()[0], H = h.shape()[1];
  return MINIDL_FLOAT_TYPES(h.dtype(), {
    gru_cell_rows<T>(gi.data<T>(), gh.data<T>(), h.data<T>(), h_new.data<T>(), gates.data<T>(), N, H);
  });
}

bool gru_cell_backward_fast(const Tensor& grad_h_new, const Tensor& h, const Tensor& gates, Tensor& grad_gi,
                            Tensor& grad_gh, Tensor& grad_h) {
  const int64_t N = h.shape()[0], H = h.shape()[1];
  return MINIDL_FLOAT_TYPES(h.dtype(), {
    gru_cell_backward_rows<T>(grad_h_new.data<T>(), h.data<T>(), gates.data<T>(), grad_gi.data<T>(),
                              grad_gh.data<T>(), grad_h.data<T>(), N, H);
  });
}

}  // namespace

void register_gru_rows_omp_cpu() {
  const char* d = "T arithmetic through ops/gru_cell_math.h, vectorisable unit loops, OpenMP over rows above 16k";
  register_kernel(keys::gru_cell, DeviceType::cpu, "rows_omp", Priority::portable, d, gru_cell_rows_omp);
  register_kernel(keys::gru_cell_backward, DeviceType::cpu, "rows_omp", Priority::portable, d,
                  gru_cell_backward_fast);
}

}  // namespace minidl
