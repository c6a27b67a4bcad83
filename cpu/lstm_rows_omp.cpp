// cpu/lstm_rows_omp.cpp — the fused LSTM step for speed ("rows_omp").
//
// What changes against the reference (cpu/lstm_naive.cpp): arithmetic in T (not double), through the
// shared per-element math of ops/lstm_cell_math.h; each row's gate columns are walked with plain
// pointers (i, f, g, o blocks of H contiguous values) so the compiler can vectorise the loop over units;
// rows are split across OpenMP threads when the step is large enough to pay for waking them.
// Accumulation convention: outputs are overwritten (=).
#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"
#include "ops/lstm_cell_math.h"

namespace minidl {

namespace {

constexpr int64_t kParallelThreshold = 1 << 14;  // elements of c

template <class T>
void lstm_cell_rows(const T* gi, const T* gh, const T* c, T* h_new, T* c_new, T* gates, int64_t N, int64_t H) {
#pragma omp parallel for schedule(static) if (N * H > kParallelThreshold)
  for (int64_t n = 0; n < N; ++n) {
    const T* a = gi + n * 4 * H;
    const T* b = gh + n * 4 * H;
    T* saved = gates + n * 5 * H;
    for (int64_t j = 0; j < H; ++j) {
      lstm_math::Gates<T> s;
      c_new[n * H + j] = lstm_math::forward(a[j] + b[j], a[H + j] + b[H + j], a[2 * H + j] + b[2 * H + j],
                                            a[3 * H + j] + b[3 * H + j], c[n * H + j], s);
      h_new[n * H + j] = lstm_math::new_hidden(s);
      saved[j] = s.i;
      saved[H + j] = s.f;
      saved[2 * H + j] = s.g;
      saved[3 * H + j] = s.o;
      saved[4 * H + j] = s.tanh_c;
    }
  }
}

template <class T>
void lstm_cell_backward_rows(const T* dh, const T* dc_out, const T* c, const T* gates, T* grad_gates, T* grad_c,
                             int64_t N, int64_t H) {
#pragma omp parallel for schedule(static) if (N * H > kParallelThreshold)
  for (int64_t n = 0; n < N; ++n) {
    const T* saved = gates + n * 5 * H;
    T* d_row = grad_gates + n * 4 * H;
    for (int64_t j = 0; j < H; ++j) {
      const lstm_math::Gates<T> s{saved[j], saved[H + j], saved[2 * H + j], saved[3 * H + j], saved[4 * H + j]};
      const lstm_math::Grads<T> d = lstm_math::backward(dh[n * H + j], dc_out[n * H + j], c[n * H + j], s);
      d_row[j] = d.d_i;
      d_row[H + j] = d.d_f;
      d_row[2 * H + j] = d.d_g;
      d_row[3 * H + j] = d.d_o;
      grad_c[n * H + j] = d.d_c;
    }
  }
}

bool lstm_cell_rows_omp(const Tensor& gi, const Tensor& gh, const Tensor& c, Tensor& h_new, Tensor& c_new,
                    Tensor& gates) {
  const int64_t N = c.shape()[0], H = c.shape()[1];
  return MINIDL_FLOAT_TYPES(c.dtype(), {
    lstm_cell_rows<T>(gi.data<T>(), gh.data<T>(), c.data<T>(), h_new.data<T>(), c_new.data<T>(), gates.data<T>(), N,
                      H);
  });
}

bool lstm_cell_backward_fast(const Tensor& grad_h_new, const Tensor& grad_c_new, const Tensor& c,
                             const Tensor& gates, Tensor& grad_gates, Tensor& grad_c) {
  const int64_t N = c.shape()[0], H = c.shape()[1];
  return MINIDL_FLOAT_TYPES(c.dtype(), {
    lstm_cell_backward_rows<T>(grad_h_new.data<T>(), grad_c_new.data<T>(), c.data<T>(), gates.data<T>(),
                               grad_gates.data<T>(), grad_c.data<T>(), N, H);
  });
}

}  // namespace

void register_lstm_rows_omp_cpu() {
  const char* d = "T arithmetic through ops/lstm_cell_math.h, vectorisable unit loops, OpenMP over rows above 16k";
  register_kernel(keys::lstm_cell, DeviceType::cpu, "rows_omp", Priority::portable, d, lstm_cell_rows_omp);
  register_kernel(keys::lstm_cell_backward, DeviceType::cpu, "rows_omp", Priority::portable, d,
                  lstm_cell_backward_fast);
}

}  // namespace minidl
