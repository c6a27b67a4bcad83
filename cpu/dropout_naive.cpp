// cpu/dropout_naive.cpp — the dropout mask from the counter-based generator (core/philox.h).
//   u_i = philox_uniform(seed, offset + i)                (a float in [0, 1) with 24 random bits)
//   mask[i] = (u_i >= p) ? 1 / (1 - p) : 0                 (u_i compared as a double; 1/(1-p) computed in
//                                                           double, then rounded to T)
// Element i depends only on (seed, offset + i), so the CUDA kernel, written with the same expressions,
// produces a bit-identical mask. "naive" walks the elements in order; "omp" splits them across threads
// (the result cannot differ: there is no state to share). mask is contiguous.
// offset_shift (defined only for kernels captured into a CUDA graph, so in practice never on the CPU): its
// value is added to offset. Accumulation convention: mask is overwritten (=).
#include "core/dispatch.h"
#include "core/philox.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr int64_t kParallelThreshold = 1 << 14;

template <class T>
T mask_value(uint64_t seed, uint64_t counter, double p, T keep) {
  const float u = philox_uniform(seed, counter);
  return static_cast<double>(u) >= p ? keep : T(0);
}

// offset + the shift's value (the shift is an int64 [1] tensor on the CPU, or undefined).
uint64_t shifted(uint64_t offset, const Tensor& offset_shift) {
  return offset_shift.defined() ? offset + static_cast<uint64_t>(offset_shift.data<int64_t>()[0]) : offset;
}

bool dropout_mask_naive(Tensor& mask, double p, uint64_t seed, uint64_t offset_arg, const Tensor& offset_shift) {
  const uint64_t offset = shifted(offset_arg, offset_shift);
  const int64_t n = mask.numel();
  return MINIDL_FLOAT_TYPES(mask.dtype(), {
    const T keep = static_cast<T>(1.0 / (1.0 - p));
    T* pm = mask.data<T>();
    for (int64_t i = 0; i < n; ++i) pm[i] = mask_value<T>(seed, offset + static_cast<uint64_t>(i), p, keep);
  });
}

template <class T>
void mask_parallel(T* pm, int64_t n, double p, uint64_t seed, uint64_t offset) {
  const T keep = static_cast<T>(1.0 / (1.0 - p));
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
  for (int64_t i = 0; i < n; ++i) pm[i] = mask_value<T>(seed, offset + static_cast<uint64_t>(i), p, keep);
}

bool dropout_mask_omp(Tensor& mask, double p, uint64_t seed, uint64_t offset, const Tensor& offset_shift) {
  return MINIDL_FLOAT_TYPES(mask.dtype(),
                            { mask_parallel<T>(mask.data<T>(), mask.numel(), p, seed, shifted(offset, offset_shift)); });
}

}  // namespace

void register_dropout_naive_cpu() {
  register_kernel(keys::dropout_mask, DeviceType::cpu, "naive", Priority::reference,
                  "reference: one Philox draw per element, in order", dropout_mask_naive);
  register_kernel(keys::dropout_mask, DeviceType::cpu, "omp", Priority::portable,
                  "elements across OpenMP threads above 16k (counter-based: same mask)",
                  dropout_mask_omp);
}

}  // namespace minidl
