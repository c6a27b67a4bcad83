// cuda/copy.cu — copy, cast and fill on the GPU, for any strides and dtypes.
// Accumulation convention: outputs are overwritten (=).
//
//   copy:  dst[i] = src[i]                 "strided": one thread per element, both sides through their
//                                          strides (StridedDesc); "memcpy": both contiguous, one
//                                          cudaMemcpyAsync device-to-device (the copy engine's speed).
//   cast:  dst[i] = static_cast<D>(src[i])  "strided", with a flat loop when both are contiguous; to
//                                          bfloat16 through float32 with __float2bfloat16_rn (round to
//                                          nearest, ties to even: core/bfloat16.h's rule), from it exactly.
//   fill:  dst[i] = value                  "strided", cudaMemsetAsync when contiguous and value's bits are 0.
//   pack:  flat[offset_k + i] = src_k[i]   "multi_tensor": up to kPackPerLaunch tensors per launch, their
//                                          pointers and sizes passed by value in the kernel's arguments;
//                                          blockIdx.y picks the tensor, blocks along x stride over it.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstring>

#include "cuda/device_utils.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

using cuda::global_thread_count;
using cuda::global_thread_index;
using cuda::kBlock;
using cuda::StridedDesc;
using cuda::strided_offset;

// Copies move bits: U is an unsigned type of the element's size, so one kernel serves every dtype.
// Index: uint32_t when n fits (cheaper division in the offset math), else int64_t.
template <class U, class Index>
__global__ void copy_strided_kernel(StridedDesc sd, const U* src, StridedDesc dd, U* dst, int64_t n) {
  for (int64_t i = global_thread_index(); i < n; i += global_thread_count())
    dst[strided_offset(dd, static_cast<Index>(i))] = src[strided_offset(sd, static_cast<Index>(i))];
}

template <class U>
void launch_copy_strided(const StridedDesc& sd, const void* src, const StridedDesc& dd, void* dst, int64_t n,
                         cudaStream_t s) {
  const unsigned int grid = cuda::grid_for(n, kBlock);
  if (cuda::fits_32bit(n))
    copy_strided_kernel<U, uint32_t><<<grid, kBlock, 0, s>>>(sd, static_cast<const U*>(src), dd, static_cast<U*>(dst), n);
  else
    copy_strided_kernel<U, int64_t><<<grid, kBlock, 0, s>>>(sd, static_cast<const U*>(src), dd, static_cast<U*>(dst), n);
  MINIDL_LAUNCH_CHECK();
}

// Convert<D>::from(v): one element converted to D. static_cast for the arithmetic types; bfloat16 goes
// through float32 both ways (float64 and the integers are first rounded to float32, as on the CPU).
template <class D>
struct Convert {
  template <class S>
  __device__ static D from(S v) { return static_cast<D>(v); }
  __device__ static D from(__nv_bfloat16 v) { return static_cast<D>(__bfloat162float(v)); }
};
template <>
struct Convert<__nv_bfloat16> {
  template <class S>
  __device__ static __nv_bfloat16 from(S v) { return __float2bfloat16_rn(static_cast<float>(v)); }
  __device__ static __nv_bfloat16 from(__nv_bfloat16 v) { return v; }
};

template <class S, class D>
__global__ void cast_strided_kernel(StridedDesc sd, const S* src, StridedDesc dd, D* dst, int64_t n) {
  for (int64_t i = global_thread_index(); i < n; i += global_thread_count())
    dst[strided_offset(dd, i)] = Convert<D>::from(src[strided_offset(sd, i)]);
}

template <class S, class D>
__global__ void cast_contiguous_kernel(const S* src, D* dst, int64_t n) {
  for (int64_t i = global_thread_index(); i < n; i += global_thread_count()) dst[i] = Convert<D>::from(src[i]);
}

template <class T>
__global__ void fill_strided_kernel(StridedDesc dd, T* dst, T value, int64_t n) {
  for (int64_t i = global_thread_index(); i < n; i += global_thread_count()) dst[strided_offset(dd, i)] = value;
}

template <class T>
__global__ void fill_contiguous_kernel(T* dst, T value, int64_t n) {
  for (int64_t i = global_thread_index(); i < n; i += global_thread_count()) dst[i] = value;
}

bool copy_strided(const Tensor& src, Tensor& dst) {
  StridedDesc sd, dd;
  if (!cuda::make_strided_desc(src, sd) || !cuda::make_strided_desc(dst, dd)) return false;
  const int64_t n = dst.numel();
  if (n == 0) return true;
  cudaStream_t s = cuda::launch_stream(dst);
  switch (dtype_size(src.dtype())) {
    case 2: launch_copy_strided<uint16_t>(sd, src.raw_data(), dd, dst.raw_data(), n, s); break;
    case 4: launch_copy_strided<uint32_t>(sd, src.raw_data(), dd, dst.raw_data(), n, s); break;
    case 8: launch_copy_strided<uint64_t>(sd, src.raw_data(), dd, dst.raw_data(), n, s); break;
    default: return false;
  }
  return true;
}

bool copy_memcpy(const Tensor& src, Tensor& dst) {
  if (!src.is_contiguous() || !dst.is_contiguous()) return false;
  const size_t nbytes = static_cast<size_t>(dst.numel()) * dtype_size(dst.dtype());
  if (nbytes == 0) return true;
  cudaStream_t s = cuda::launch_stream(dst);
  MINIDL_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), nbytes, cudaMemcpyDeviceToDevice, s));
  return true;
}

template <class S, class D>
void launch_cast(bool flat, const StridedDesc& sd, const S* ps, const StridedDesc& dd, D* pd, int64_t n,
                 cudaStream_t s) {
  const unsigned int grid = cuda::grid_for(n, kBlock);
  if (flat)
    cast_contiguous_kernel<S, D><<<grid, kBlock, 0, s>>>(ps, pd, n);
  else
    cast_strided_kernel<S, D><<<grid, kBlock, 0, s>>>(sd, ps, dd, pd, n);
  MINIDL_LAUNCH_CHECK();
}

template <class S>
bool cast_from(const Tensor& src, Tensor& dst) {
  StridedDesc sd, dd;
  if (!cuda::make_strided_desc(src, sd) || !cuda::make_strided_desc(dst, dd)) return false;
  const int64_t n = dst.numel();
  if (n == 0) return true;
  cudaStream_t s = cuda::launch_stream(dst);
  const S* ps = static_cast<const S*>(src.raw_data());
  const bool flat = src.is_contiguous() && dst.is_contiguous();
  if (dst.dtype() == DType::bfloat16) {
    launch_cast(flat, sd, ps, dd, static_cast<__nv_bfloat16*>(dst.raw_data()), n, s);
    return true;
  }
  return MINIDL_ALL_TYPES(dst.dtype(), { launch_cast(flat, sd, ps, dd, dst.data<T>(), n, s); });
}

bool cast_strided(const Tensor& src, Tensor& dst) {
  switch (src.dtype()) {
    case DType::float32: return cast_from<float>(src, dst);
    case DType::float64: return cast_from<double>(src, dst);
    case DType::int32: return cast_from<int32_t>(src, dst);
    case DType::int64: return cast_from<int64_t>(src, dst);
    case DType::bfloat16: return cast_from<__nv_bfloat16>(src, dst);
  }
  return false;
}

bool fill_strided(Tensor& dst, double value) {
  StridedDesc dd;
  if (!cuda::make_strided_desc(dst, dd)) return false;
  const int64_t n = dst.numel();
  if (n == 0) return true;
  cudaStream_t s = cuda::launch_stream(dst);
  const unsigned int grid = cuda::grid_for(n, kBlock);
  if (dst.dtype() == DType::bfloat16) {  // the value's 16 bits, rounded on the host (core/bfloat16.h)
    const uint16_t bits = double_to_bfloat16(value).bits;
    uint16_t* p = static_cast<uint16_t*>(dst.raw_data());
    if (dst.is_contiguous())
      fill_contiguous_kernel<uint16_t><<<grid, kBlock, 0, s>>>(p, bits, n);
    else
      fill_strided_kernel<uint16_t><<<grid, kBlock, 0, s>>>(dd, p, bits, n);
    MINIDL_LAUNCH_CHECK();
    return true;
  }
  return MINIDL_ALL_TYPES(dst.dtype(), {
    const T v = static_cast<T>(value);
    T zero_bits;
    std::memset(&zero_bits, 0, sizeof(T));
    const bool all_zero_bits = std::memcmp(&v, &zero_bits, sizeof(T)) == 0;  // not -0.0
    if (dst.is_contiguous() && all_zero_bits) {
      MINIDL_CUDA_CHECK(cudaMemsetAsync(dst.raw_data(), 0, static_cast<size_t>(n) * sizeof(T), s));
    } else {
      if (dst.is_contiguous())
        fill_contiguous_kernel<T><<<grid, kBlock, 0, s>>>(dst.data<T>(), v, n);
      else
        fill_strided_kernel<T><<<grid, kBlock, 0, s>>>(dd, dst.data<T>(), v, n);
      MINIDL_LAUNCH_CHECK();
    }
  });
}

// pack: one launch copies many contiguous tensors into ranges of one flat buffer. A kernel's arguments
// may take 4 KiB (32 KiB from CUDA 12.1 on Volta and newer), so a list of 32 tensors (24 bytes each)
// fits with room to spare; longer lists take several launches.
constexpr int kPackPerLaunch = 32;
struct PackList {
  const void* src[kPackPerLaunch];
  int64_t offset[kPackPerLaunch];  // in elements of flat
  int64_t numel[kPackPerLaunch];
};

// Block (x, y) copies part of tensor y: elements x * blockDim.x + t, then every gridDim.x * blockDim.x
// further. Tensors smaller than the grid leave most blocks of their row idle; those return at once.
template <class U>
__global__ void pack_kernel(PackList list, U* flat) {
  const int k = blockIdx.y;
  const U* src = static_cast<const U*>(list.src[k]);
  U* dst = flat + list.offset[k];
  const int64_t n = list.numel[k];
  for (int64_t i = global_thread_index(); i < n; i += global_thread_count()) dst[i] = src[i];
}

bool pack_multi_tensor(const std::vector<Tensor>& srcs, const std::vector<int64_t>& offsets, Tensor& flat) {
  if (dtype_size(flat.dtype()) != 4 && dtype_size(flat.dtype()) != 8) return false;  // 4- and 8-byte words only
  cudaStream_t s = cuda::launch_stream(flat);
  const bool four_bytes = dtype_size(flat.dtype()) == 4;
  for (size_t first = 0; first < srcs.size(); first += kPackPerLaunch) {
    PackList list{};
    int count = 0;
    int64_t largest = 0;
    for (size_t k = first; k < srcs.size() && count < kPackPerLaunch; ++k) {
      if (srcs[k].numel() == 0) continue;
      list.src[count] = srcs[k].raw_data();
      list.offset[count] = offsets[k];
      list.numel[count] = srcs[k].numel();
      largest = std::max(largest, srcs[k].numel());
      ++count;
    }
    if (count == 0) continue;
    // Enough blocks along x for the largest tensor, at most 1024 (each thread then loops).
    const dim3 grid(std::min(cuda::grid_for(largest, kBlock), 1024u), static_cast<unsigned int>(count));
    if (four_bytes)
      pack_kernel<uint32_t><<<grid, kBlock, 0, s>>>(list, static_cast<uint32_t*>(flat.raw_data()));
    else
      pack_kernel<uint64_t><<<grid, kBlock, 0, s>>>(list, static_cast<uint64_t*>(flat.raw_data()));
    MINIDL_LAUNCH_CHECK();
  }
  return true;
}

}  // namespace

void register_copy_cuda() {
  register_kernel(keys::copy, DeviceType::cuda, "strided", Priority::reference,
                  "one thread per element through both tensors' strides", copy_strided);
  register_kernel(keys::copy, DeviceType::cuda, "memcpy", Priority::portable,
                  "one cudaMemcpyAsync device-to-device; contiguous tensors only", copy_memcpy);
  register_kernel(keys::cast, DeviceType::cuda, "strided", Priority::reference,
                  "one thread per element, static_cast; flat loop when both contiguous", cast_strided);
  register_kernel(keys::fill, DeviceType::cuda, "strided", Priority::reference,
                  "one thread per element through the strides; cudaMemsetAsync for contiguous zeros",
                  fill_strided);
  register_kernel(keys::pack, DeviceType::cuda, "multi_tensor", Priority::portable,
                  "up to 32 tensors per launch, their pointers in the kernel's arguments",
                  pack_multi_tensor);
}

}  // namespace minidl
