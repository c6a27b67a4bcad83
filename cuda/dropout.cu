// cuda/dropout.cu — the dropout mask on the GPU. Accumulation convention: the mask is overwritten (=).
//
//   mask[i] = (u_i >= p) ? 1/(1-p) : 0,   u_i = philox_uniform(seed, offset + i)   (core/philox.h)
//
// "philox": one thread per element; each computes its own Philox draw from (seed, offset + i), the same
// header code the CPU runs, so the mask is bit-identical to the CPU's for the same (seed, offset).
// The comparison is done in double (u_i is a float in [0, 1) widened exactly) and the scale 1/(1-p) is
// computed in double on the host, then converted to the mask's dtype, as the CPU reference does.
// offset_shift (set while a CUDA graph is captured, core/capture.h): the kernel reads its value from device
// memory when it runs, so each replay of the captured launch draws from offset + the value written before it.
#include "core/philox.h"
#include "cuda/device_utils.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

using cuda::global_thread_count;
using cuda::global_thread_index;
using cuda::kBlock;

template <class T>
__global__ void dropout_mask_kernel(T* mask, int64_t n, double p, T scale, uint64_t seed, uint64_t offset_arg,
                                    const int64_t* offset_shift) {
  const uint64_t offset = offset_shift ? offset_arg + static_cast<uint64_t>(*offset_shift) : offset_arg;
  for (int64_t i = global_thread_index(); i < n; i += global_thread_count()) {
    const float u = philox_uniform(seed, offset + static_cast<uint64_t>(i));
    mask[i] = static_cast<double>(u) >= p ? scale : T(0);
  }
}

bool dropout_mask_philox(Tensor& mask, double p, uint64_t seed, uint64_t offset, const Tensor& offset_shift) {
  if (!mask.is_contiguous()) return false;
  MINIDL_CHECK(!offset_shift.defined() || (offset_shift.device() == mask.device() &&
                                           offset_shift.dtype() == DType::int64 && offset_shift.numel() == 1),
               "dropout_mask: offset_shift must be an int64 [1] tensor on ", mask.device().str());
  const int64_t* shift = offset_shift.defined() ? offset_shift.data<int64_t>() : nullptr;
  const int64_t n = mask.numel();
  if (n == 0) return true;
  cudaStream_t s = cuda::launch_stream(mask);
  return MINIDL_FLOAT_TYPES(mask.dtype(), {
    const T scale = static_cast<T>(1.0 / (1.0 - p));
    dropout_mask_kernel<T><<<cuda::grid_for(n, kBlock), kBlock, 0, s>>>(mask.data<T>(), n, p, scale, seed, offset,
                                                                               shift);
    MINIDL_LAUNCH_CHECK();
  });
}

}  // namespace

void register_dropout_cuda() {
  register_kernel(keys::dropout_mask, DeviceType::cuda, "philox", Priority::portable,
                  "one thread per element, counter-based Philox: bit-identical to the CPU",
                  dropout_mask_philox);
}

}  // namespace minidl
