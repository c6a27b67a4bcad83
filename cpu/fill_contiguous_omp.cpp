// cpu/fill_contiguous_omp.cpp — fill for speed: dst[i] = value over a contiguous tensor, as one flat range cut into
// 128 KiB chunks that OpenMP's static schedule hands to its threads in contiguous runs (one thread below
// two chunks). A chunk of +0.0 or integer 0 is a memset (all-zero bits in every dtype minidl has); any
// other value is a plain loop the compiler vectorises. Strided tensors are declined ("naive" takes them).
// Why it pays: the reference walks the strides element by element; a contiguous fill is bound by memory
// bandwidth (measurements: docs/kernel-measurements.md). The gradients' zero-fills in every CPU training step are such fills.
// Accumulation convention: outputs are overwritten (=).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// The flat range is cut into chunks of this many bytes; OpenMP's static schedule hands each thread a
// contiguous run of them. Below two chunks one thread is faster than waking the pool.
constexpr int64_t kChunkBytes = int64_t(1) << 17;

template <class T>
void fill_flat(T* data, int64_t n, T value, bool zero_bits) {
  const int64_t chunk = kChunkBytes / static_cast<int64_t>(sizeof(T));
  const int64_t chunks = (n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * chunk, end = std::min(n, begin + chunk);
    if (zero_bits)
      std::memset(data + begin, 0, static_cast<size_t>(end - begin) * sizeof(T));
    else
      std::fill(data + begin, data + end, value);
  }
}

bool fill_contiguous_omp(Tensor& dst, double value) {
  if (!dst.is_contiguous()) return false;
  // +0.0 (and 0 of an integer dtype) is all-zero bits; -0.0 is not, so it takes the loop.
  const bool zero_bits = value == 0.0 && !std::signbit(value);
  return MINIDL_ALL_TYPES(dst.dtype(), { fill_flat<T>(dst.data<T>(), dst.numel(), static_cast<T>(value), zero_bits); });
}

}  // namespace

void register_fill_contiguous_omp_cpu() {
  register_kernel(keys::fill, DeviceType::cpu, "contiguous_omp", Priority::portable,
                  "contiguous tensors only: one flat range per OpenMP thread, memset for zero",
                  fill_contiguous_omp);
}

}  // namespace minidl
